// Package kruisepod is the OpenKruise pod protocol: what a pod of an OpenKruise workload
// carries beyond core Kubernetes, and what every bosun controller that touches such pods
// (the Advanced DaemonSet, the ContainerRecreateRequest manager, the PodUnavailableBudget
// controller and webhook, and later the CloneSet) reads and writes the same way as
// OpenKruise does, so that pods move between bosun and OpenKruise without a restart:
//
//   - revision.go: the data of a workload's ControllerRevisions (the pod template, byte
//     for byte as OpenKruise writes it), which in-place updates are planned from;
//   - inplace.go: in-place updates — whether a change between two revisions can be made
//     to a running pod, making it, the inplace-update-state annotation that records it,
//     and when the kubelet has carried it out (jsondiff.go compares the revisions);
//   - launchpriority.go: container launch priorities, the barrier env the pod webhook
//     gives containers and the barrier ConfigMap whose keys let them start;
//   - batches.go: in-place updates of containers with launch priorities, made in
//     batches, highest priority first, each once the containers before are ready;
//   - runtimemeta.go: the runtime-containers-meta annotation the node agent reports, and
//     the container and env-from-metadata hashes that both sides compute to tell whether a
//     container runs what the pod's spec and metadata ask for;
//   - grace.go: an in-place update that waits out a grace period, recorded in the
//     inplace-update-grace annotation, and carrying it out once the period is over;
//   - conditions.go: pod conditions and readiness gates, and Ready recomputed from them
//     the way the kubelet does;
//   - marks.go: the not-ready marks in the KruisePodReady condition's message, one per
//     party that wants the pod out of service;
//   - notready.go: MarkPodNotReady and UnmarkPodNotReady, the writers of those marks;
//   - lifecycle.go: the lifecycle hooks' labels and finalizers on a pod.
//
// Everything here is pure except the two writers, which reach the API server only
// through the PodStatusUpdater their caller passes: the package holds no client, no cache
// and no clock (callers pass the time).
package kruisepod
