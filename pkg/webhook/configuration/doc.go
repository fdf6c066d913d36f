// Package configuration keeps bosun's MutatingWebhookConfiguration and
// ValidatingWebhookConfiguration (admissionregistration.k8s.io/v1) what the manager's
// webhook registrations and serving certificate say they should be, and the conversion
// webhook of the CRDs whose versions bosun converts (ConversionCRDNames) pointing at the
// same server, so that the API server calls the webhook server every manager replica runs
// for admission and for conversion alike.
//
// Desired computes the two objects from the registrations, where the API server reaches
// the server (ClientConfig: a URL or a Service) and the CA bundle that signed its
// certificate. It fills in every field the API server would default, so that an object
// read back after a write compares equal to what was written and nothing is rewritten.
//
// The Writer is a controller in bosun's usual shape with one key per object: MutatingName,
// ValidatingName, and the name of each CRD it was given informers for. Informer handlers and
// Resync only queue them; one sync per key, level driven. For a webhook configuration:
//
//  1. with no registration of the key's type, the object is deleted if bosun manages it;
//  2. otherwise, until the CA bundle is known, nothing is written and the key is looked at
//     again shortly: an empty caBundle would make the API server distrust the server;
//  3. a missing object is created; one whose webhooks or bosun's label differ from Desired
//     is updated on top of the live object, so that the labels and annotations users added
//     stay, and a user's edit of the webhooks (or a deletion) is put back.
//
// For a CRD, read and written as an unstructured object through the dynamic client (its Go
// types live in a module far larger than the few fields the writer looks at):
//
//  1. an absent CRD needs nothing: its kind is not installed;
//  2. a CRD not labelled as bosun's is never written. If it converts through a webhook, that
//     webhook is not bosun's: a Warning event ConversionNotManaged on the CRD and readiness
//     say where its conversions go. With strategy None nothing is converted through any
//     webhook, so nothing is reported (the v1alpha1-only CRDs of an earlier release, for
//     instance, while the manager is upgraded before them);
//  3. one of bosun's CRDs whose strategy is not Webhook contradicts bosun's manifests, which
//     give these kinds a webhook: the event ConversionStrategyNotWebhook and readiness report
//     it, and the strategy is left alone: the manifests decide it, and a writer that flipped
//     it would fight whoever applies them;
//  4. until the CA bundle is known nothing is written, as for the configurations;
//  5. otherwise spec.conversion.webhook is made to point at /convert through the same
//     ClientConfig as the admission webhooks, trusting the CA bundle, with review versions
//     [v1], the only ones /convert speaks. The update goes on top of the cached CRD with its
//     resourceVersion (a conflict is retried on the newer object) and changes nothing
//     outside spec.conversion.webhook: the strategy, the versions and their storage flags
//     and the status belong to the manifests and the API server. When the url or service
//     already is the flags' (compared with the API server's default port filled in), only
//     the caBundle is written, in the form the manifests have it, so re-applying manifests
//     that carry bosun's default clientConfig never conflicts with the writer; a different
//     url or service is replaced, with a Warning event ConversionClientConfigCorrected. What
//     the API server stored is read back and compared, so that a difference the comparison
//     does not expect is reported instead of rewritten unnoticed on every sync.
//
// Problems only a person can fix (2 and 3) are not retried: the fix changes the CRD, whose
// informer event queues its key again. Each is reported by one event until it changes.
//
// bosun manages only objects labelled app.kubernetes.io/managed-by=bosun. An object of
// the same name without it belongs to someone else (for instance a chart whose CA is
// injected by another tool): the writer reports it and neither updates nor deletes it,
// since fighting another writer over the webhooks would never converge.
//
// Every replica runs a writer, leader or not, because every replica serves the webhooks
// and /convert, and the configuration must be right even when no replica leads. The writers converge
// without taking turns because they compute the same Desired (registration order, the CA
// bundle from the shared Secret) and compare semantically after filling in the API server's
// defaults on both sides; when two race, the loser's write fails on the resourceVersion and
// its retry finds nothing left to do.
package configuration
