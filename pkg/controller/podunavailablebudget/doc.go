// Package podunavailablebudget implements bosun's PodUnavailableBudget controller: for every
// policy.kruise.io PodUnavailableBudget it keeps the status (how many covered pods are
// available, how many must stay available, how many more may be made unavailable now) in
// line with the pods, and tags the pods the budget covers with its name, so that the
// validating pod webhook (pkg/webhook/pod) knows which budget to spend when a pod is
// deleted, evicted or updated. Objects, annotations and events are OpenKruise's, so either
// implementation can take over a cluster from the other.
//
// It reads and writes budgets in v1beta1, the version they are stored in, whatever version
// each was written in, and Advanced DaemonSets in v1beta1 too. A budget written in
// v1alpha1 keeps its expected pod count in the pub.kruise.io/protect-total-replicas
// annotation, which counts when spec.protectTotalReplicas is unset (pubutil's effective
// values; a count below 1 is no count). The controller writes status only.
//
// Informer handlers read only the informer caches and enqueue budget keys; all work happens
// in syncBudget, one key at a time per worker:
//
//  1. a budget that is gone or being deleted is dropped from the write-through cache the
//     controller shares with the pod webhook (budget.Cache), and nothing else happens;
//  2. the covered pods and the expected pod count are resolved (pods.go): for a targetRef,
//     the pods of the workload (through its ReplicaSets for a Deployment, found through
//     the pod informer's indexes by owner, podindex.go, so that a sync costs the
//     namespace's controllers rather than its pods) and its replica count; for a
//     selector, the active pods it matches and the sum of their owners' replica counts.
//     spec.protectTotalReplicas (or its annotation) replaces the count;
//  3. covered pods without a related-pub annotation get both spellings of it, by a
//     strategic-merge patch; a budget covering no pod gets a NoPods event instead;
//  4. desiredAvailable is computed from maxUnavailable or minAvailable and the count; a
//     count the spec cannot be scaled to gives a CalculateExpectedPodCountFailed event;
//  5. the status is recomputed on the freshest copy of the budget, under the budget's
//     lock and retried on conflicts (budget.Cache.UpdateStatus), because the webhook
//     spends the same budget concurrently: entries of disruptedPods older than 20 seconds
//     and of unavailablePods older than 10 seconds are dropped (a pod recorded as being
//     deleted that is still there gets a NotDeleted event), as are entries of pods no
//     longer covered; currentAvailable counts the available covered pods not recorded in
//     either map; unavailableAllowed is what is left above desiredAvailable. The status is
//     written only when something changed;
//  6. the budget is looked at again when the oldest remaining map entry expires, and in
//     any case after the resync period (options.WithResyncPeriod).
//
// What queues a budget: its own changes; a pod's creation (the budget named by the pod's
// related-pub annotation), the start of its deletion (five seconds later, when the pod has
// had time to leave the endpoints), a change of its availability or of its related-pub
// annotation; a Deployment's or StatefulSet's creation, deletion or change of spec.replicas,
// and an Advanced DaemonSet's creation, deletion or change of status.desiredNumberScheduled
// (its count with feature PodUnavailableBudgetDaemonSetReplicas), for the budgets of the
// namespace that target the workload or whose selector matches its pod template.
//
// Beyond OpenKruise:
//
//   - the removal of a pod that was still active queues the budgets it counted for: a pod
//     bound to no node, or deleted with no grace period, goes at once without ever showing
//     a deletion timestamp, and its budget would go on counting it, and holding the
//     webhook's record of its deletion, until the next resync. A pod that was terminating
//     or finished already queues nothing;
//   - a ReplicaSet's deletion, the start of its deletion, its re-creation and a change of
//     its spec.replicas or of its controller queue the budgets that may cover its pods
//     (selector matching its pod template, targetRef naming it, one of its owners or, with
//     feature PodUnavailableBudgetOwnerChain, a workload above it), before and after the
//     change: when a Deployment is deleted its ReplicaSet goes next, then the garbage
//     collector deletes the pods, and each step changes what the budget counts;
//   - a pod's creation also queues every budget of the namespace whose selector matches
//     the pod, or whose targetRef is the pod's workload (anywhere in its controller chain),
//     and a change of a pod's labels or owner references queues the budgets matching the
//     pod before and after; together with the periodic resync (default one minute, flag
//     --pod-unavailable-budget-resync-period), a budget that covered no pod when it was
//     created picks its pods up, and is never stale for long (OpenKruise issue #1857).
//     Pods the informer lists at start-up skip that matching: every budget is synced at
//     start-up anyway, and the lookups would delay the first syncs;
//   - with feature PodUnavailableBudgetOwnerChain a targetRef covers the pods whose
//     controller chain reaches the target at any depth (a rollout controller driving
//     ReplicaSets of its own, issue #2571); without it only a ReplicaSet leads up to its
//     Deployment, as in OpenKruise. A chain that leaves the informer caches (a workload of
//     a kind bosun does not cache) is followed by the handlers up to that workload only:
//     they must not wait on the API server. They queue the rest of it on a second queue,
//     whose sync (syncChain, chains.go) reads the chain live and queues the budgets
//     targeting a workload of it; the queue merges the lookups of one workload's pods;
//   - with feature PodUnavailableBudgetDaemonSetReplicas an Advanced DaemonSet counts as
//     expecting status.desiredNumberScheduled pods;
//   - the NoPods event is recorded once when a budget is first seen without pods (by this
//     process) and again only after it has had pods; OpenKruise records it on every sync,
//     which with a periodic resync would be an event a minute per empty budget;
//   - the NotDeleted events are recorded once the status without the expired entries is
//     written, not on every conflicting attempt;
//   - a failure to tag some pods does not hold the status back: the status is written and
//     the sync is retried for the tags.
//
// Kept from OpenKruise on purpose: in selector mode an owner without a replica count
// (a kind without /scale, such as an Advanced DaemonSet without the feature above) counts
// as -1 pod, so a maxUnavailable budget over such pods protects nothing unless it sets
// spec.protectTotalReplicas (or pub.kruise.io/protect-total-replicas); a targetRef to a workload scaled to zero covers no
// pods; pods are tagged only when they carry no related-pub annotation at all (a pod tagged
// with another budget keeps its tag).
//
// Also kept from OpenKruise: in selector mode a ReplicaSet whose Deployment is gone (or
// re-created) counts as unknownReplicas, not as its own replicas, so that the pods the
// garbage collector is about to delete with it are not kept protected by a count nobody
// maintains any more (with feature PodUnavailableBudgetOwnerChain, any workload whose
// controller is gone).
//
// Pods a budget exempts (pub.kruise.io/no-protect, spec.ignoredPodSelector) are counted like
// the others: only the webhook lets them go without spending the budget.
//
// Choices where OpenKruise has no clear answer: in targetRef mode a workload without a
// replica count expects zero pods unless the budget sets a total, but its pods are
// still covered (so a minAvailable budget over them, or one setting a total, protects
// them); in selector mode an owner that is being deleted adds nothing to the count.
package podunavailablebudget
