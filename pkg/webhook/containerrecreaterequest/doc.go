// Package containerrecreaterequest holds the mutating admission webhook for
// apps.kruise.io ContainerRecreateRequest (CRR), called on CREATE and UPDATE of v1alpha1 and
// v1beta1 requests, both judged and completed as v1beta1 (the fields it sets are the same in
// both versions).
//
// On CREATE, with feature gate KruiseDaemon on (off: 403), it checks the request in the
// order OpenKruise does and stops at the first step that fails (400, naming the fields):
//
//   - spec.podName is set; strategy defaults to {} and the active label is set;
//   - spec.containers is not empty, activeDeadlineSeconds is at least 3, the grace periods
//     are not negative, failurePolicy is Fail (the default) or Ignore;
//   - the pod exists, is active (not Succeeded, Failed or being deleted) and is bound to a
//     Node that exists (a failed read is a 500);
//   - it labels the request with the pod's UID and node (and type: virtual-kubelet when the
//     Node carries it) and takes terminationGracePeriodSeconds from the pod when unset;
//   - each container is named once, names a container of the pod that has a status with a
//     container ID, and carries none of the read-only fields; it gets the pod container's
//     preStop hook (and its ports when the hook is an httpGet) and a statusContext holding
//     the container's current ID and restart count.
//
// On UPDATE, the spec, the pod-uid and node-name labels and a set unready-acquired
// annotation must stay as they are (403); nothing else is checked, so that the controllers
// and the node agent can always finish and release a request.
//
// The pod and Node are read from the webhook informers' caches, and from the API server
// when the cache does not have them yet or its copy of the pod does not pass: a request is
// often created right after the pod started, before the cache saw its container statuses.
//
// Registrations gives the webhook to package webhook's server; this package holds no
// serving code.
package containerrecreaterequest
