// Package deployment implements the Deployment controller of bosun-controller-manager.
//
// A Deployment owns ReplicaSets; the one whose pod template equals the Deployment's template
// (ignoring the pod-template-hash label) is the "new" ReplicaSet, every other one is "old".
// Each sync claims the namespace's matching ReplicaSets, then takes exactly one of these
// paths, in this order of precedence:
//
//   - the Deployment is being deleted: only its status is refreshed;
//   - it is paused, or its replica count changed (a "scaling event"): the existing
//     ReplicaSets are resized proportionally and no new ReplicaSet is created;
//   - it carries the legacy rollback annotation: its template is rolled back to a revision;
//   - otherwise the rollout strategy runs: RollingUpdate scales the new ReplicaSet up and the
//     old ones down within maxSurge / maxUnavailable; Recreate scales the old ones to zero and
//     waits until their pods are gone before creating the new one.
//
// The controller never touches pods itself: the ReplicaSet controller does. It reports the
// rollout through status.conditions (Available, Progressing, ReplicaFailure), which is what
// `kubectl rollout status` reads, and keeps a revision history in ReplicaSet annotations,
// which `kubectl rollout history` and `kubectl rollout undo` read.
//
// The behaviour, including every annotation, reason and message string, matches upstream
// Kubernetes' Deployment controller; the pure calculations live in package deploymentutil.
package deployment
