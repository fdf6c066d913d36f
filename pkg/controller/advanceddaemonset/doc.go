// Package advanceddaemonset implements bosun's Advanced DaemonSet controller: for every
// apps.kruise.io DaemonSet it keeps one pod of the current revision on every node that
// wants one, rolls pods to new revisions within the DaemonSet's budget, and reports what it
// sees in the DaemonSet's status. Objects, pods and revisions are read and written exactly
// as OpenKruise does, so either controller can take over from the other.
//
// It works on v1beta1, the stored version, only: its caches, reads and writes, status
// (status.updateRevision, which v1alpha1 readers see as status.daemonSetHash) and the owner
// references it writes on pods, revisions and ImagePullJobs (apps.kruise.io/v1beta1, as
// OpenKruise 1.9 writes them). Children are recognised by group, kind and UID whatever
// version their reference names, and a reference is never rewritten just for its version.
// What v1alpha1 says through an annotation is honoured when the v1beta1 field is unset:
// partitioned scaling is spec.scaleStrategy.partitionedScaling when scaleStrategy is set,
// else the daemonset.kruise.io/progressive-create-pod annotation being "true"
// (daemonsetutil.PartitionedScaling). v1alpha1's deprecated Surging rollout reaches the
// controller converted to a Standard one with maxSurge 1 and maxUnavailable 0, which
// surges the same way. Revision names, hashes and data depend only on the pod template
// (and the collision count), so they are the same whichever version wrote them.
//
// A node wants a pod when the template's nodeName (if any), nodeSelector and required node
// affinity allow it and no NoSchedule or NoExecute taint goes untolerated; daemon pods
// tolerate not-ready, unreachable, pressure and unschedulable nodes by default, so that
// cordoned and NotReady nodes still get theirs. An untolerated NoExecute taint removes a
// running pod; an untolerated NoSchedule taint only stops new ones.
//
// Informer handlers only enqueue DaemonSet keys and record expectations; all work happens
// in syncDaemonSet, one key at a time per worker:
//
//  1. the DaemonSet's pods are claimed, and its ControllerRevisions claimed and brought in
//     line with its template (the current revision found by byte-equal data, created,
//     de-duplicated or renumbered after a rollback);
//  2. unless earlier creates, deletes or pod updates have yet to show in the cache, and
//     with feature PreDownloadImageForDaemonSetUpdate on and ImagePullJobs served, the
//     images a new revision introduces are pulled ahead of the rollout by one ImagePullJob
//     per changed container over the nodes of pods on older revisions (package
//     predownload; once per revision, recorded by a label on it; skipped when every pod
//     moves in one batch), and the DaemonSet's ImagePullJobs are deleted once every pod is
//     updated; then
//     "manage" creates missing pods (slow-start batches, bound to their node by node
//     affinity, at most burstReplicas per sync) and deletes failed pods (with a per-node
//     backoff), surplus pods, pods on nodes that no longer tolerate them and pending pods
//     of vanished nodes; a preDelete hook holds pods in PreparingDelete instead;
//  3. the InPlaceUpdateReady condition of owned pods is turned True when nothing holds it
//     any more;
//  4. for RollingUpdate (unless paused) old pods are replaced on the nodes the partition
//     and the rolling selector leave to the rollout, within maxUnavailable (deleting, or
//     updating in place when only images and template metadata changed) or maxSurge;
//     OnDelete replaces nothing: deleted pods come back at the current revision;
//  5. old revisions beyond revisionHistoryLimit are deleted, except those pods still run;
//  6. status is written when it changed.
//
// Beyond OpenKruise: with feature AdvancedDaemonSetStrictMaxUnavailable the replacement of
// old pods that are already unavailable counts against maxUnavailable (OpenKruise issue
// #1323); and status.conditions carries a Progressing condition (RollingUpdate,
// RolloutComplete, RolloutPaused, OnDelete), with the DaemonSet looked at again every few
// seconds while a node runs pods of two revisions, so that a rollout cannot stall
// silently (#1012). The condition type has no lastUpdateTime; its message follows every
// change and its lastTransitionTime only status changes.
//
// markPodNotReady only reaches pods created with the KruisePodReady readiness gate, which
// the mutating pod webhook adds to the pods of every apps.kruise.io controller while
// pod-readiness-controller, which sets the condition True once the pod exists, is enabled
// (as in OpenKruise, this controller adds neither). Pods created without the gate are not
// marked (the kubelet would ignore the condition).
//
// Left out on purpose: pruning ineligible nodes from the rollout budget, and binding pods by
// spec.nodeName (the scheduler binds). Kept from OpenKruise: removing a node from the
// rolling selector does not roll its pod back (#1871), and burstReplicas given as a
// percentage is taken of the desired number of nodes, rounded down (but never below 1).
package advanceddaemonset
