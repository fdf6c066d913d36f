// Package pubutil holds the pure PodUnavailableBudget rules shared by the controller and the
// pod webhooks: which budget a pod names, whether a pod counts as available, which pods a
// budget exempts, and the effective settings of a budget read in v1beta1 (effective.go:
// which operations it protects and the expected pod count it sets, from the field or, for
// budgets written in v1alpha1, the annotation that carries it), and how many pods it keeps
// available. It uses no client, no cache and no clock (callers pass the time), so both
// sides judge a pod the same way.
package pubutil
