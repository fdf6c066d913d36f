// Package nodeimage holds the admission webhooks for apps.kruise.io NodeImage, v1alpha1 and
// v1beta1 (the same schema, judged as v1beta1):
// defaulting and validation of the images and tags a node is asked to pull. It registers
// them with package webhook's server and holds no serving code of its own.
package nodeimage
