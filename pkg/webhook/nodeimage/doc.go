// Package nodeimage holds the admission webhooks for apps.kruise.io/v1alpha1 NodeImage:
// defaulting and validation of the images and tags a node is asked to pull. It registers
// them with package webhook's server and holds no serving code of its own.
package nodeimage
