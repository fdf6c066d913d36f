// Package podunavailablebudget holds the admission webhooks for policy.kruise.io
// PodUnavailableBudget (PUB), v1alpha1 and v1beta1, called on CREATE and UPDATE: a mutating
// one that only removes, from v1beta1 writes, annotations their fields contradict, and the
// validating one, which judges every budget as v1beta1:
//
//   - with both PUB feature gates (PodUnavailableBudgetDeleteGate and
//     PodUnavailableBudgetUpdateGate) off, every budget is refused, since nothing would
//     enforce it;
//   - Validate checks the annotations that tune a budget (OpenKruise's protected operations
//     and total replicas, bosun's retry-denied-evictions and protect-not-ready) and the spec:
//     exactly one of selector and targetRef, exactly one of maxUnavailable and minAvailable;
//   - ValidateUpdate adds that selector and targetRef never change: pods are tagged with the
//     budget that covers them, and a budget that changed what it covers would keep
//     protecting pods it no longer selects while ignoring the new ones until re-tagged;
//   - Conflicts refuses a budget that could cover the same pods as another budget of the
//     namespace, since a pod carries the name of one budget only.
//
// A refused budget is answered with HTTP 400, the code OpenKruise answers with, whose
// message and causes name each offending field (a failed lookup of the other budgets is a
// 500). The other budgets of the namespace are read from
// an informer's cache, so two overlapping budgets created within the cache's delay of each
// other can both be admitted.
//
// Registrations gives the webhook to package webhook's server; this package holds no
// serving code.
package podunavailablebudget
