// Package storageversionmigrator is the storage-version-migrator-controller: it rewrites
// every object of bosun's seven custom resources (clonesets, daemonsets, nodeimages,
// imagepulljobs, imagelistpulljobs and containerrecreaterequests of apps.kruise.io,
// podunavailablebudgets of policy.kruise.io) that etcd may still hold in an older version, so that etcd holds
// them all in v1beta1, and then says so in the CRD: status.storedVersions becomes
// [v1beta1]. From then on no read of a bosun controller needs the conversion webhook, and
// a later CRD may drop v1alpha1.
//
// Work is keyed by CRD name. The controller watches only CRDs labelled
// app.kubernetes.io/managed-by=bosun, through a dynamic informer (the apiextensions types
// are not among bosun's dependencies); handlers only enqueue, and only the seven names. One
// sync of a CRD, in order:
//
//  1. A CRD that is gone, or not labelled app.kubernetes.io/managed-by=bosun, is left
//     alone: whoever manages it migrates it. So is one whose status.storedVersions is
//     already [v1beta1] (or empty).
//  2. It waits, without a request, until v1beta1 is the storage version and served, the
//     CRD is Established, and, for a CRD with conversion strategy Webhook, the conversion
//     client configuration carries a caBundle (the webhook configuration writer sets it):
//     before that, a LIST of objects stored in another version could not be converted.
//     The CRD's own update events bring it back.
//  3. It waits until the settle delay (--storage-version-migration-delay, 2 min by default) has passed since this process first saw
//     v1beta1 as the storage version: every API server of an HA control plane must have
//     caught up with the new storage version, or one lagging behind would go on writing
//     the old version after the pass.
//  4. The pass: a LIST of v1beta1 objects in pages of 500 (an expired continue token
//     starts the list over), and for every object a no-op UPDATE of its status
//     subresource carrying the listed resourceVersion. The API server re-encodes the
//     object in the storage version; a status write goes through no admission webhook and
//     leaves metadata.generation alone, so no controller sees a spec change. A Conflict
//     means someone else wrote the object meanwhile (in v1beta1 too), NotFound that it
//     is gone: both count as done.
//  5. Only after a pass without a single error: status.storedVersions is set to
//     [v1beta1] through the CRD's status subresource, on the resourceVersion the pass
//     started from, so that a CRD changed meanwhile (its storage version, say) gets a
//     new pass instead; a Normal StorageVersionMigrated event on the CRD and a log line
//     say so. A pass with errors records a Warning StorageVersionMigrationFailed event and
//     is retried with the queue's backoff.
//
// Everything it knows lives in the API server, apart from when it first saw v1beta1 as a
// CRD's storage version: a process killed at any point starts over, waits the settle
// delay again and repeats the pass, which is harmless (an object already stored in v1beta1
// comes back unchanged, and the API server does not write an unchanged object again).
// It never changes a CRD's spec, never touches an unmanaged CRD, and never trims
// storedVersions after a pass that failed anywhere.
package storageversionmigrator
