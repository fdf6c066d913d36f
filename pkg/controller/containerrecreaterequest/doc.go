// Package containerrecreaterequest implements the manager side of apps.kruise.io
// ContainerRecreateRequest (CRR), on its v1beta1 API. The node agent of the pod's node does
// the recreating (pkg/daemon/controller/containerrecreaterequest); this controller watches
// over what the agent cannot see or decide from the node:
//
//   - a request whose pod is gone, being deleted or replaced by another of the same name
//     is completed with message "pod has gone";
//   - a request no agent picked up (phase still empty) 60 s after its creation is completed
//     with "daemon has not responded for a long time", and one past its
//     activeDeadlineSeconds with "recreating has exceeded the activeDeadlineSeconds";
//   - while a request is Recreating, the pod-side status of its target containers that
//     started since the request was created is copied into status.containerStatusSnapshot
//     (the annotation crr.apps.kruise.io/sync-container-statuses of v1alpha1 clients), which
//     the agent reads to learn whether a recreated container is back and ready;
//   - with unreadyGracePeriodSeconds, the pod is marked not ready through its
//     KruisePodReady condition (when it has that readiness gate; the mark is
//     {"userAgent":"ContainerRecreateRequest","key":"<ns>/<name>"}) under the finalizer
//     crr.apps.kruise.io/unready-acquired, and a PreRecreateGrace condition records when (its
//     lastTransitionTime; the annotation of the finalizer's name for v1alpha1 clients): the
//     agent waits that long after it before stopping a container;
//   - once the request is finished (or being deleted) the mark and the finalizer are
//     removed, then the active label (the agent watches only active requests), and the
//     request is deleted ttlSecondsAfterFinished after its completionTime.
//
// Informer handlers only enqueue request keys: a request on its own events, and the
// unfinished requests of a pod (found through an index on the pod-uid label) when the pod
// is created, deleted, starts being deleted or its container statuses change. One sync
// handles one request and makes at most one step of progress; its own write brings it back.
//
// The snapshot and the PreRecreateGrace condition are written only as status fields,
// through the status subresource, never as the v1alpha1 annotations; they are read as
// crrutil reads them, so a request that carries only the annotation (written by a v1alpha1
// client, or by OpenKruise without conversion) is treated as if the field held its value:
// its snapshot is not written again and its grace period not started twice.
//
// Time is compared only with the request's creationTimestamp and completionTime, which the
// API server sets, except for the container start times the kubelet reports: those are
// read only for containers that are no longer the ones admitted (another container ID), so
// a node clock ahead of the control plane cannot make an old container look restarted.
package containerrecreaterequest
