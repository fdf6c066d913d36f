// Package webhook is bosun-controller-manager's admission webhook server, the one piece
// every webhook'd resource plugs into with a single registration (path, kinds, operations,
// handler):
//
//   - a TLS listener of its own (--webhook-port), served on every replica, leader or not,
//     which also serves the few calls of the API server that are not admission reviews
//     (Server.Handle: the CRD conversion webhook, package conversion) from the moment it
//     listens, while the admission webhooks answer 503 until their informers have synced;
//   - admission.k8s.io/v1 AdmissionReview decoding and encoding, strict, with 400s for bad
//     bodies, panics turned into errors, a per-request timeout, and metrics per webhook;
//   - the serving certificate (package certs): shared by the replicas through a Secret and
//     rotated before expiry, or taken from --webhook-cert-dir and reloaded when its files
//     change;
//   - the MutatingWebhookConfiguration and ValidatingWebhookConfiguration the manager keeps
//     up to date, caBundle included (package configuration).
//
// The admission logic of each resource lives in a subpackage named after it (daemonset,
// cloneset, podunavailablebudget, pod, containerrecreaterequest, nodeimage, imagepulljob),
// but for noderestriction, whose webhooks judge who writes NodeImages and
// ContainerRecreateRequests rather than what is written; this package knows nothing about
// any resource. What a resource's defaulting and validating
// webhooks share (registration for CREATE and UPDATE of every served version, dispatch on
// the request's version, strict decoding of the object and the old object, conversion to
// the hub version, refusal of the reserved conversion annotations, the patch of the
// defaults) is ResourceWebhook, to which a resource gives only its defaults per version and
// its judgement, once, on the hub version.
package webhook
