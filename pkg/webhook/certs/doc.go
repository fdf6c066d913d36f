// Package certs provides the serving certificate of bosun-controller-manager's admission
// webhook server, and the CA bundle the webhook configurations must carry for the API
// server to trust it. A Provider hands the certificate to the TLS server per handshake
// (GetCertificate), the bundle to the configuration writer (CABundle, with Changed telling
// it when to look again), and its state to /readyz (it is a healthz.HealthChecker).
//
// # Secret mode (NewSecretProvider, the default)
//
// Every replica serves the webhooks, so they share one self-signed CA and one serving
// certificate through one Secret of type kubernetes.io/tls, labelled
// app.kubernetes.io/managed-by=bosun:
//
//	tls.crt  serving certificate (PEM), signed by the current CA
//	tls.key  its private key
//	ca.crt   the CA bundle: the current CA first, then earlier CAs not yet expired
//	ca.key   the current CA's private key
//
// Keys are ECDSA P-256. Each replica runs the same level-driven sync: read the Secret,
// decide what is due, write with the resourceVersion read, and serve what is in the
// Secret. The first replica creates the Secret; a replica whose create finds it existing,
// or whose update fails on a conflict, reads it again and starts over, so the replicas
// converge on what the first writer wrote and never on two CAs. Each replica watches the
// Secret (an informer restricted to its name) and syncs on every change, so a rotation
// made by one replica is served by all of them within moments.
//
// What is due, checked in this order (validity includes a few minutes of backdating):
//
//   - a CA with less than 1/3 of its validity left (or none usable) is replaced by a new
//     one (1 year by default); the old one stays in ca.crt;
//   - a serving certificate (90 days by default, never past its CA) is reissued by the
//     current CA when less than 1/3 of its validity is left, when it does not verify
//     against the bundle, or when its SANs do not cover every host; in the last case the
//     new one keeps the old SANs too, so that replicas of two versions wanting different
//     hosts during a rolling update add theirs rather than take turns replacing them;
//   - a serving certificate signed by an earlier CA is reissued by the current one five
//     minutes (caPropagationDelay) after the current one was created: the new CA must
//     reach every webhook configuration, and the API server, before any replica presents
//     a certificate only it verifies;
//   - an earlier CA is dropped from ca.crt once it has expired: until then a replica that
//     has not seen the rotation yet may still present a certificate it signed.
//
// With the defaults a bundle therefore holds two CAs for the last four months of the old
// CA's life and one otherwise.
//
// A Secret whose contents cannot be used (bad PEM, a key that matches no certificate) is
// not trusted: the unusable parts are regenerated like missing ones, and an error is
// logged saying what was wrong, since it means something other than bosun edited it.
// Labels, annotations, the type and data keys other than the four above are kept. A
// deleted Secret is recreated with a new CA, like a missing one.
//
// # Directory mode (NewFileProvider, --webhook-cert-dir)
//
// The certificate comes from tls.crt and tls.key in a directory, typically a Secret that
// cert-manager maintains mounted into the pod, with ca.crt as the bundle if present. The
// pair must be valid when Run starts. Afterwards the directory is watched, with a periodic
// re-read as a fallback, and a changed pair is served from the next handshake on; a pair
// that does not load is logged and the previous one kept.
package certs
