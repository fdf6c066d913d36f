// Package pod holds the admission webhooks for pods.
//
// The mutating webhook on pod CREATE (mpod.kb.io, MutatingWebhook) is shared by the
// controllers whose pods need a change at creation: each enabled controller adds its
// Mutations while the manager builds the webhooks, and the webhook answers with the
// additions of all of them in one patch. It fails open. Its mutations:
//
//   - for PodUnavailableBudget (PUB), tagging a new pod with the budget that covers it (both
//     related-pub annotations), so the validating webhook can find the budget without
//     listing; a pod created while it is skipped is tagged later by the controller;
//   - for pod-readiness-controller, the readiness gate KruisePodReady on the pods of every
//     apps.kruise.io controller (every pod, with feature KruisePodReadinessGate), which
//     that controller then satisfies.
//
// On behalf of PUB there are also:
//
//   - a validating webhook on pod DELETE and, with PodUnavailableBudgetUpdateGate, UPDATE
//     (vpod.kb.io), and one on pods/eviction CREATE (vpodeviction.kb.io), both answered by
//     one decision: an operation that would make an available, tagged pod unavailable is
//     admitted only if its budget can pay for it, and paying is an atomic status write
//     (budget.Cache) recording the pod in disruptedPods or unavailablePods.
//
// Budgets are read in v1beta1 (the informer's version, whatever version each was written in),
// with the effective settings of pubutil: the operations a budget protects come from
// spec.protectOperations or, for a budget written in v1alpha1, its
// kruise.io/pub-protect-operations annotation. Pods annotated pub.kruise.io/no-protect:
// "true" and pods the budget's spec.ignoredPodSelector matches pass without spending it.
//
// Unavailable pods never cost budget, so they pass; with the budget annotation
// pub.bosun.dev/protect-not-ready they pass only while the budget is met. A refusal is a
// 403 whose message OpenKruise clients recognise, or a 429 for evictions under a budget
// annotated pub.bosun.dev/retry-denied-evictions, so that kubectl drain retries instead of
// giving up. Every refusal by a budget is counted (pod_unavailable_budget), recorded as a
// PubPreventPodDeletion event on the pod and logged.
//
// Registrations gives the budget's webhooks, and MutatingWebhook.Add the mutating one, to
// package webhook's server; this package holds no serving code. InProcess makes the
// validating decision for a controller of the process about to disrupt a pod itself (the
// CloneSet controller before it updates one, with PodUnavailableBudgetUpdateGate), spending
// the budget through the same budget.Cache.
package pod
