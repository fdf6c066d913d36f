// Package containerlaunchpriority is the container-launch-priority-controller: it lets the
// containers of a pod with launch priorities start one priority at a time, highest first.
//
// The pod webhook gives every container of such a pod (KRUISE_CONTAINER_PRIORITY values
// that differ, or the annotation apps.kruise.io/container-launch-priority: Ordered) the env
// KRUISE_CONTAINER_BARRIER, read from the key p_<priority> of the pod's barrier ConfigMap
// <pod>-barrier. The kubelet does not start a container whose key is missing, so the keys
// the barrier holds decide which containers may start; this controller adds them.
//
// The controller watches pods only. Its handlers queue the key of a pod that still waits:
// not terminating, not marked apps.kruise.io/container-launch-priority-completed, not
// ContainersReady, with a container that has a barrier env and is not ready. One sync of a
// pod, in order:
//
//  1. A pod that no longer waits is left alone.
//  2. Of the containers with a barrier env that are not ready, the highest priority is the
//     one that may start now. The barrier is read from the API server (the controller keeps
//     no cache of ConfigMaps, which would hold every ConfigMap of the cluster for a few
//     barriers) and gets that priority's key: created, owned by the pod (no controller
//     reference, as OpenKruise writes it, so the garbage collector deletes it with the
//     pod), when missing, else patched. A container that becomes ready brings the pod back
//     with the next priority.
//  3. Once the barrier holds the key of the lowest priority still waiting, every container
//     may start: the pod is annotated apps.kruise.io/container-launch-priority-completed:
//     "true" and not looked at again. Containers restarted later (an in-place update)
//     start at once; the in-place update orders them itself, in batches.
//
// Beyond OpenKruise: a barrier left by an earlier pod of the same name (a CloneSet reuses
// instance IDs), owned by that pod's UID, would let the new pod's containers start in any
// order and disappear under them when the garbage collector gets to it; it is deleted and
// made anew. A ConfigMap of that name owned by no pod of that name is someone else's and is
// used as it is, as OpenKruise does.
package containerlaunchpriority
