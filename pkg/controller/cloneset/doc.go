// Package cloneset implements bosun's CloneSet controller: for every apps.kruise.io
// CloneSet it keeps spec.replicas pods, each named after the CloneSet and a random instance
// ID and bound to claims from the volume claim templates, moves them to the update
// revision within the rollout's budget (partition, maxUnavailable, maxSurge), recreating
// them or updating them in place, and reports what it sees in the CloneSet's status.
// Objects, pods, claims and revisions are read and written exactly as OpenKruise does, so
// either controller can take over from the other without replacing anything; the
// arithmetic that decides each step is OpenKruise's (package clonesetutil).
//
// It works on v1beta1, the stored version, only, and reads the settings v1alpha1 keeps in
// a label or annotations through clonesetutil's effective values. Owner references it
// writes name apps.kruise.io/v1beta1; children are recognised by group, kind and UID,
// whatever version their reference names.
//
// Informer handlers only enqueue CloneSet keys and record observations: pod and claim
// creations and deletions by name (the scale expectations), pod updates by resource
// version. All work happens in syncCloneSet, one key at a time per worker:
//
//  1. while pods or claims a sync created or deleted have not shown in the cache, wait;
//     after five minutes read them live, drop those settled and look again 10 s later;
//  2. list the pods the CloneSet controls (never adopting orphans) and its claims; without
//     claim reuse, hand the claims of finished pods over to them and delete the claims of
//     no pod; release pods whose labels left the selector;
//  3. find the update revision (created, or renumbered after a rollback) and the current
//     one; while a pod update has not shown in the cache, wait;
//  4. scale: cancel pending deletions on scale-up, create missing pods (slow start, claims
//     first), delete specified and surplus pods (preDelete hook: PreparingDelete first);
//  5. unless scaling wrote something, update: refresh every pod (InPlaceUpdateReady,
//     lifecycle state, pod-template-hash), then, for RollingUpdate and not paused, update
//     the chosen pods in place or label them for recreation;
//  6. write status when it changed (counts, revisions, Progressing; FailedScale and
//     FailedUpdate while scaling or updating fails), drop names of gone pods from
//     podsToDelete, delete old revisions beyond revisionHistoryLimit.
//
// Beyond OpenKruise: leaked scale expectations are checked live instead of freezing the
// CloneSet (OpenKruise issue #1765); an instance ID whose pod name is still taken is never
// reused (#1099); FailedScale and FailedUpdate are written when they appear and removed
// once the step succeeds, instead of lingering.
//
// Not yet: in-place updates keep to what the shared in-place model (package kruisepod) can
// do, images and template labels and annotations (with a grace period), without container
// launch priorities, env-from-metadata or resource resizes. Image pre-download and the
// PodUnavailableBudget check before in-place updates are not done either.
package cloneset
