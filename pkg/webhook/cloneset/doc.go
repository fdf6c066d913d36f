// Package cloneset holds the admission webhooks for apps.kruise.io CloneSet, v1alpha1 and
// v1beta1, each version defaulted by its own rules and both validated as v1beta1:
//
//   - a mutating webhook (mcloneset.kb.io) that writes the defaults of the version the
//     request is in (SetDefaults, SetDefaultsV1beta1): the spec's, and the core pod and
//     claim defaults in the templates on creation and on updates that change the pod
//     template, unless feature gate TemplateNoDefaults is on. Only what defaulting changed
//     is patched, at the deepest member that holds it. From a v1beta1 write it also removes
//     the image pre-download annotations that their fields contradict, with a warning;
//   - a validating webhook (vcloneset.kb.io) that denies invalid objects with a 422 whose
//     causes name the offending fields, on CREATE as on UPDATE (Validate, ValidateUpdate),
//     and looks up, live, the pods a write adds to scaleStrategy.podsToDelete: each must
//     exist, not be terminating, and be controlled by the CloneSet. A v1alpha1 CloneSet is
//     judged as its v1beta1 form, so an object gets the same answer in both versions; its
//     errors are named at the fields the v1alpha1 client wrote. An update that changes
//     neither the spec nor the v1alpha1 forms of its fields is not judged again.
//
// Where OpenKruise's two versions judge differently (its v1beta1 path skips the
// podsToDelete, progressDeadlineSeconds and InPlaceOnly checks and refuses maxUnavailable 0
// with maxSurge 1; its v1alpha1 path refuses type OnDelete), both versions here follow one
// set of rules: every check, OnDelete accepted, maxUnavailable 0 with maxSurge 1 accepted.
//
// Registrations gives both to package webhook's server; this package holds no serving code.
package cloneset
