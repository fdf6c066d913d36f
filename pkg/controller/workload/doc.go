// Package workload turns an owner reference into the workload it names: how many pods the
// workload expects, which labels its pods carry, whether it is being deleted, and which
// controller owns it in turn. The PodUnavailableBudget controller and the pod webhooks use it
// to size a budget and to decide which budget covers a pod.
//
// The kinds bosun caches anyway (apps ReplicaSet, Deployment and StatefulSet, core
// ReplicationController, apps.kruise.io DaemonSet) are read from their listers, so that the
// pod webhooks, which sit on the path of every pod creation and deletion, cost the API server
// nothing for them. Every other kind is mapped to its resource with the REST mapper and read
// live: its metadata (for the UID, the deletion timestamp and its own controller) and its
// /scale subresource (for replicas and selector), which is how any scalable custom workload
// (CloneSet, Advanced StatefulSet, Argo Rollout, ...) tells the world its size without this
// package knowing its type. A kind without /scale has no replica count.
//
// Informer event handlers, which must never wait on the API server, use CachedChain: the
// controller chain as far as the listers hold it, and the first reference beyond them.
//
// Kinds are matched by API group and kind only: an owner reference written with an older
// version of a kind (apps/v1beta2 Deployment, or apps.kruise.io/v1alpha1 DaemonSet, which
// bosun caches in v1beta1) names the same object.
//
// A reference that names an object re-created under the same name (another UID) is treated
// as gone, as is an object that does not exist or whose kind the API server does not serve:
// callers count such an owner as absent rather than fail.
//
// Which workload's replica count covers a pod has two answers, chosen by WithOwnerChain:
//
//   - off: the pod's direct controller, except that a ReplicaSet controlled by a Deployment
//     reports the Deployment, since a Deployment's replicas are spread over several
//     ReplicaSets during a rollout. This is the answer OpenKruise gives.
//   - on: the topmost controller reached by following controller references, so that a pod
//     of a ReplicaSet driven by some other rollout controller is counted against that
//     controller. The walk stops at a missing owner (the last workload found counts), at a
//     cycle, and after ten links.
//
// Either way, a walk that stops because the next controller is missing marks the workload
// it stops at ControllerGone: a ReplicaSet whose Deployment was just deleted is about to be
// collected with its pods, and its own replica count must not keep them protected.
package workload
