// Package daemonset will hold the admission webhooks for apps.kruise.io/v1alpha1 DaemonSet
// (Advanced DaemonSet): defaulting of the fields the CRD schema cannot default, and
// validation answered 422 with the field path. It registers them with package webhook's
// server and holds no serving code of its own.
package daemonset
