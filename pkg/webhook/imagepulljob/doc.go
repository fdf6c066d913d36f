// Package imagepulljob will hold the admission webhooks for apps.kruise.io/v1alpha1
// ImagePullJob: defaulting and validation of the image, selectors and pull policy. It
// registers them with package webhook's server and holds no serving code of its own.
package imagepulljob
