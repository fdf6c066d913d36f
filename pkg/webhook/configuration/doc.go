// Package configuration keeps bosun's MutatingWebhookConfiguration and
// ValidatingWebhookConfiguration (admissionregistration.k8s.io/v1) what the manager's
// webhook registrations and serving certificate say they should be, so that the API server
// calls the webhook server every manager replica runs.
//
// Desired computes the two objects from the registrations, where the API server reaches
// the server (ClientConfig: a URL or a Service) and the CA bundle that signed its
// certificate. It fills in every field the API server would default, so that an object
// read back after a write compares equal to what was written and nothing is rewritten.
//
// The Writer is a controller in bosun's usual shape with exactly two keys, MutatingName and
// ValidatingName. Informer handlers and Resync only queue them; one sync per key, level
// driven:
//
//  1. with no registration of the key's type, the object is deleted if bosun manages it;
//  2. otherwise, until the CA bundle is known, nothing is written and the key is looked at
//     again shortly: an empty caBundle would make the API server distrust the server;
//  3. a missing object is created; one whose webhooks or bosun's label differ from Desired
//     is updated on top of the live object, so that the labels and annotations users added
//     stay, and a user's edit of the webhooks (or a deletion) is put back.
//
// bosun manages only objects labelled app.kubernetes.io/managed-by=bosun. An object of
// the same name without it belongs to someone else (for instance a chart whose CA is
// injected by another tool): the writer reports it and neither updates nor deletes it,
// since fighting another writer over the webhooks would never converge.
//
// Every replica runs a writer, leader or not, because every replica serves the webhooks
// and the configuration must be right even when no replica leads. The writers converge
// without taking turns because they compute the same Desired (registration order, the CA
// bundle from the shared Secret) and compare semantically after filling in the API server's
// defaults on both sides; when two race, the loser's write fails on the resourceVersion and
// its retry finds nothing left to do.
package configuration
