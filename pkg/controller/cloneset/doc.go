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
//  4. with feature PreDownloadImageForInPlaceUpdate on and ImagePullJobs served, while the
//     current revision is not the update revision and, by the last status written, enough
//     of its pods are ready (imagePreDownloadMinUpdatedReadyPods), pull the update
//     revision's new images ahead of the in-place updates: one ImagePullJob per changed
//     container over the pods on other revisions (package predownload), once per revision,
//     recorded by a label on it; a revision is labelled ignored instead when pods are
//     recreated, the CloneSet has three replicas or fewer, every pod is updated in the first
//     batch, or the change cannot be made in place; a failed create is retried and holds
//     nothing else back; once the current revision is the update revision, delete the
//     CloneSet's ImagePullJobs;
//  5. scale: cancel pending deletions on scale-up, create missing pods (slow start, claims
//     first), delete specified and surplus pods (preDelete hook: PreparingDelete first);
//  6. unless scaling wrote something, update: refresh every pod (InPlaceUpdateReady,
//     lifecycle state, pod-template-hash, the next batch of containers of an in-place
//     update by launch priority), then, for RollingUpdate and not paused, update
//     the chosen pods in place or label them for recreation, each, with gate
//     PodUnavailableBudgetUpdateGate, once its PodUnavailableBudget admitted it (the pod
//     webhook's decision, made in process; a refusal ends the step, looked at again 1 s
//     later);
//  7. write status when it changed (counts, revisions, Progressing; FailedScale and
//     FailedUpdate while scaling or updating fails), drop names of gone pods from
//     podsToDelete, delete old revisions beyond revisionHistoryLimit.
//
// Beyond OpenKruise: leaked scale expectations are checked live instead of freezing the
// CloneSet (OpenKruise issue #1765); an instance ID whose pod name is still taken is never
// reused: a pod being deleted is waited for a while, one that stays gives its ID up for a
// fresh one (#1099); FailedScale and FailedUpdate are written when they appear and removed
// once the step succeeds, instead of lingering. A pod updated in place again before all
// the launch-priority batches of its last update were made takes the rest along, instead of
// leaving those containers at an older image than its revision says. A pre-download job
// that could not be created is tried again, where OpenKruise labels the revision created
// all the same and the nodes never pull ahead. With
// --cloneset-progress-deadline-restarts-on-progress the progress deadline counts from the
// rollout's last progress, as a Deployment's does, rather than from its start.
//
// In-place updates are what the shared in-place model (package kruisepod) does: images and
// template labels and annotations (with a grace period), containers with launch priorities
// in batches, highest priority first, each once the one before is ready, and (gate
// InPlaceUpdateEnvFromMetadata, with KruiseDaemon) labels and annotations a container's env
// reads through a fieldRef: bosun-daemon restarts that container so that the kubelet gives
// it the new values, and the update is done once bosun-daemon's runtime-containers-meta
// report shows it running with them. Not yet: resource resizes.
package cloneset
