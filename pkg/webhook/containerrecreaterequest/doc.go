// Package containerrecreaterequest will hold the admission webhooks for
// apps.kruise.io/v1alpha1 ContainerRecreateRequest: defaulting and validation, including
// the pod and containers it names. It registers them with package webhook's server and
// holds no serving code of its own.
package containerrecreaterequest
