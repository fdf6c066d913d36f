// Package clonesetutil holds the pure CloneSet rules that the controller and the CloneSet
// webhooks share, so that both read a CloneSet the same way, and the controller's arithmetic,
// which must match OpenKruise's step for step for either controller to take over from the
// other without churn:
//
//   - effective.go: the effective settings in v1beta1 (whether pods held in PreparingDelete
//     count, the image pre-download settings), from the field or, for CloneSets written in
//     v1alpha1, the label or annotation that carries it;
//   - scaled.go and counting.go: how an int-or-percent knob becomes a number of pods, the
//     partition, and the diffs of one sync (how many pods to create, delete and update, at
//     which revision, within which budget);
//   - revision.go: ControllerRevisions byte for byte as OpenKruise writes them (data, name,
//     hash, labels, the volume-claim-template hash annotation), their equality and order,
//     and which revision a pod is at;
//   - pods.go: instance IDs, the pods and claims the controller creates;
//   - lifecycle.go: availability and the lifecycle states a pod moves through on its own;
//   - rank.go and updateorder.go: which pods scale-down removes first, and the order in which
//     a rolling update takes pods (priority and scatter strategies).
//
// It uses no client, no cache and no clock: callers pass the time.
package clonesetutil
