// Package noderestriction holds the validating admission webhooks that keep each node's
// bosun-daemon to its own node, as kube-apiserver's NodeRestriction plugin keeps each
// kubelet to its own: with its credentials a node agent can write the status of its own
// node's NodeImage and of the ContainerRecreateRequests of pods on its node, and nothing
// else of these two kinds. RBAC cannot say this (it grants a verb on every object of a
// kind or on objects named in advance), so the agents' shared ClusterRole grants the
// writes and these webhooks narrow them per node.
//
// A request is a node agent's (Identities):
//
//   - a user in group bosun:daemons named bosun:daemon:<node> (a client certificate with
//     that CN and O, one per node, for agents installed with systemd), or
//   - a service account named by --daemon-service-accounts whose token carries the extra
//     authentication.kubernetes.io/node-name, which the API server puts into tokens bound
//     to a pod: the node of the agent's pod (agents installed as a DaemonSet).
//
// A request of such an identity whose node cannot be told (a group member with another
// user name, a listed service account with a token not bound to a pod) is refused. For a
// node agent of node N:
//
//   - NodeImage: only an UPDATE (or PATCH) of the status of the NodeImage named N; no
//     CREATE, DELETE or write of the object itself, which the agent never makes;
//   - ContainerRecreateRequest: only an UPDATE (or PATCH) of the status of a request whose
//     label crr.apps.kruise.io/node-name was N before the write and still is after it. The
//     label is read from the stored object (oldObject), which the manager's mutating
//     webhook labelled from the pod's node at creation and keeps immutable, so an agent
//     cannot claim another node's request by labelling it.
//
// Every other identity is let through untouched, and is never sent here: the webhooks'
// matchConditions make the API server call them only for the identities above, so the
// writes of users, controllers and the manager cost nothing. The failure policy is Fail:
// while no manager answers, node agents cannot write these statuses (they retry), and
// nothing else is held up.
//
// Each kind's webhook is served while a manager runs that kind's controller, like the
// kind's other webhooks: the NodeImage one with nodeimage-controller, the
// ContainerRecreateRequest one with containerrecreaterequest-controller.
package noderestriction
