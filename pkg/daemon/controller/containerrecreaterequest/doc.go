// Package containerrecreaterequest is the node side of ContainerRecreateRequest: for the
// active requests that target pods on the agent's node, it stops the named containers
// through the CRI (running their preStop hooks first) so that the kubelet starts them
// again, in the requested order, and reports each container's progress in the request's
// status. The manager's controller (pkg/controller/containerrecreaterequest) does the rest:
// timeouts, the pod's readiness, the copy of the pod's container statuses, clean-up.
//
// The queue key is the pod ("<namespace>/<pod name>"), so that all requests of one pod are
// handled by one sync and only one of them runs at a time. One sync:
//
//  1. orders the pod's requests: the running one (Recreating), then the queued ones
//     (Pending), then the new ones, each group by creation time; finished and deleting ones
//     are skipped;
//  2. stops at a request whose cached copy predates this agent's last write to it (at most
//     ten seconds), and looks at the pod again when that wait ends;
//  3. picks the first request and marks every later new one Pending; a picked request
//     that is not Recreating yet is set Recreating, and the event of that write continues;
//  4. with unreadyGracePeriodSeconds, waits for the manager's PreRecreateGrace condition
//     (or, on a request that has only that, the v1alpha1 annotation
//     crr.apps.kruise.io/unready-acquired), then until the grace period after it has passed;
//  5. checks that the containers run in this node's runtime (the scheme of their container
//     IDs), and reads the pod's containers from the CRI as the kubelet does;
//  6. plans the request's step from what it saw alone (planRecreate, a pure function, in
//     plan.go): each container's state observed anew is recorded first when it changed;
//     otherwise the containers are walked in order, each one done, failed, restarting,
//     missing, to be stopped, or held back behind an earlier one. A Failed one completes
//     the request unless the failure policy is Ignore; a Recreating one is recorded as
//     killed, and with orderedRecreate holds the next ones back; a Pending one missing from
//     the runtime holds the next ones back; the first Pending one present is to be stopped;
//  7. carries out the one action of the plan. A stop (kill.go, through package
//     containerstop, which the agent's other restarts share: event Killing, preStop hook
//     within the grace period, StopContainer with what is left of it and at least 2 s) is
//     planned again with its outcome: the container is recorded Recreating, or Failed when
//     the stop failed, and only under the Ignore policy does a failure let the next
//     container be stopped in the same sync; otherwise one container per sync. Then the
//     changed states are written (status.go), the request is completed when every
//     container Succeeded or Failed, or it waits, and with minStartedSeconds it is looked
//     at again after that long.
//
// A container counts as recreated when its ID or its restart count differs from those the
// request was admitted with, and as Succeeded once the pod status the manager copied
// (status.containerStatusSnapshot, or the v1alpha1 annotation
// crr.apps.kruise.io/sync-container-statuses of a request that has only that) shows that
// same container ready, for at least minStartedSeconds.
//
// The agent works on the v1beta1 API and shares the request's status with the manager:
// it writes the phase, completion and container states, the manager the snapshot and the
// PreRecreateGrace condition. The agent's whole-status updates carry the resourceVersion
// of the copy they were made from, so they fail rather than undo a write of the manager,
// and its container states go in a patch that names only them.
//
// Beyond OpenKruise:
//
//   - every event of a request queues its pod, finished and removed requests included, and
//     completing a request queues the pod again, so that the next request of the pod
//     starts; the wait for the informer to show this agent's own writes ends in a requeue,
//     never in a dropped event. In OpenKruise a request created right after another one
//     finished could stay Pending forever (issues #1058, #1626, #2474);
//   - a new container is recognized by container ID and restart count only, never by
//     comparing start times taken on different machines (issue #2483);
//   - an httpGet preStop hook without a host is sent to the pod IP, read from the runtime's
//     sandbox status; in OpenKruise such hooks fail;
//   - while the runtime is unavailable, syncs are retried with backoff instead of failing.
//
// The agent never starts containers itself, and it does not touch the pod: readiness is the
// manager's job.
package containerrecreaterequest
