// Package deployment implements the Deployment controller of bosun-controller-manager.
//
// A Deployment owns ReplicaSets. The one whose pod template equals the Deployment's
// (ignoring the pod-template-hash label) is the "new" ReplicaSet; every other one is "old".
// Each sync claims the namespace's matching ReplicaSets, then does exactly one kind of work,
// the first of these that applies (chooseStep):
//
//   - the Deployment is being deleted: only its status is refreshed;
//   - it is paused: its ReplicaSets are resized to spec.replicas, proportionally, and no new
//     ReplicaSet is created; a rollback asked for while paused waits for the resume;
//   - it carries the legacy rollback annotation: its template goes back to a revision;
//   - its replica count changed (a "scaling event"): resized as when paused;
//   - otherwise its strategy moves the rollout on: RollingUpdate grows the new ReplicaSet
//     and shrinks the old ones within maxSurge and maxUnavailable; Recreate scales the old
//     ones to zero and waits until their pods are gone before it creates the new one.
//
// The controller never touches pods itself; the ReplicaSet controller does. It reports a
// rollout through status.conditions (Available, Progressing, ReplicaFailure), which
// `kubectl rollout status` reads, and keeps the revision history in ReplicaSet annotations,
// which `kubectl rollout history` and `kubectl rollout undo` read.
//
// Behaviour, including every annotation, reason and message string, matches upstream
// Kubernetes' Deployment controller. The pure rollout arithmetic lives in deploymentutil.
package deployment
