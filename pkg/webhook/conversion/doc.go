// Package conversion is the CRD conversion webhook of the OpenKruise-compatible kinds: the
// handler the API server calls at /convert, on the admission webhook server's listener and
// certificate, to convert stored objects between v1alpha1 and v1beta1.
//
// It answers apiextensions.k8s.io/v1 ConversionReviews with the conversion functions that
// the api module registers in its scheme, so that the webhook, admission and client tools
// convert alike. Each object is decoded into its Go type, converted and encoded in the
// desired version; an object already in that version is returned as it came. Since the
// conversion functions never fail, a review fails only for a group, kind or version this
// handler does not convert or for an object that does not decode into its type, never for
// the values of its fields.
//
// The pod templates of an Advanced DaemonSet and of a CloneSet, and a CloneSet's volume
// claim templates, are stored schemaless, with unknown fields kept (fields newer than this
// build's), and the conversion never changes them; they are therefore carried over as the
// JSON the API server sent, never through the Go types, which would drop such fields and
// could not even decode a template the schema did not constrain.
//
// It reads nothing but the request: it needs no informer and answers as soon as the server
// listens, on every replica.
package conversion
