// Package imagepulljob holds the admission webhooks for apps.kruise.io ImagePullJob, v1alpha1
// and v1beta1 (the same schema), both called on CREATE and UPDATE:
//
//   - the mutating one applies the API's defaults (completionPolicy.type Always, pullPolicy
//     with timeoutSeconds 600 and backoffLimit 3, imagePullPolicy IfNotPresent) and, on
//     CREATE, adds the finalizer apps.kruise.io/deletion-protection, under which the
//     controller releases the pull secrets it copied for the job before the job goes;
//   - the validating one checks the image reference, the selectors, the parallelism and
//     the pull and completion policies (Validate), and on UPDATE that pullSecrets did not
//     change (the copies the controller made for the nodes would no longer match).
//
// An invalid job is answered with HTTP 400, naming each offending field, as OpenKruise
// answers; a change of pullSecrets with 403. With the ImagePullJobGate feature off, new
// jobs and spec changes are refused with 403; metadata-only updates still pass, so that the
// controller can remove the finalizer of jobs created while the gate was on.
//
// The rules on everything but the image are ValidateTemplate's, written against the hub
// version (v1beta1) and shared with the ImageListPullJob webhook, whose template every child
// job gets unchanged; a v1alpha1 job is judged as its v1beta1 form.
//
// Registrations gives the webhooks to package webhook's server; this package holds no
// serving code.
package imagepulljob
