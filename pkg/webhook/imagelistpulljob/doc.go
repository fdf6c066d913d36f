// Package imagelistpulljob holds the admission webhooks for apps.kruise.io ImageListPullJob,
// both called on CREATE and UPDATE:
//
//   - the mutating one applies the API's defaults (completionPolicy.type Always, pullPolicy
//     with timeoutSeconds 600 and backoffLimit 3); imagePullPolicy is left as it is, since
//     the children get theirs at their own admission and the template hash must stay
//     OpenKruise's;
//   - the validating one checks the images (1 to 255, no duplicates, each a reference that
//     parses) and the template with the ImagePullJob's own rules (the ImagePullJob
//     webhook's ValidateTemplate: every child gets the template unchanged, and must not be
//     refused at its own creation), activeDeadlineSeconds not below timeoutSeconds
//     included, which OpenKruise does not check; and the value of annotation
//     imagelistpulljob.bosun.dev/max-active-images, a positive integer.
//
// Unlike an ImagePullJob's, the pull secrets may change: a changed template gives the list
// job new children. An UPDATE that leaves the spec and that annotation as they were is not
// judged again, so that the controller can label a list job written while the webhook was
// away.
//
// An invalid list job is answered with HTTP 400, naming each offending field. With the
// ImagePullJobGate feature off, new list jobs and spec changes are refused with 403;
// metadata-only updates still pass.
//
// The webhooks are registered for v1alpha1 and v1beta1 and judge v1beta1: a v1alpha1 list job
// is converted (the two versions' schemas are identical) and defaulted with the same patch.
// Registrations gives them to package webhook's server; this package holds no serving code.
package imagelistpulljob
