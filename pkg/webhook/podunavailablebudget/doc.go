// Package podunavailablebudget will hold the admission webhooks for
// policy.kruise.io/v1alpha1 PodUnavailableBudget: validation of the spec, its immutable
// fields and overlaps with other budgets. It registers them with package webhook's server
// and holds no serving code of its own.
package podunavailablebudget
