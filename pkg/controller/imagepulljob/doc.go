// Package imagepulljob is the imagepulljob-controller: it pulls the image of every
// apps.kruise.io ImagePullJob on the job's target nodes by adding a tag owned by the job to
// their NodeImages, a few nodes at a time, and reports the job's progress from the tag
// statuses the node agents write. It works on v1beta1, the stored version; the schemas of
// both versions are the same, so a job written in v1alpha1 behaves alike.
//
// A tag the job owns carries an owner reference naming the job in apps.kruise.io/v1beta1.
// Ownership is read by UID, group and kind in any version: a tag an older bosun or
// OpenKruise gave the job through a v1alpha1 reference is the job's, and that reference is
// never rewritten just for its version.
//
// One sync of a job, in order:
//
//  1. Wait until the informers show the controller's own last writes to the job, to the
//     secret copies and to NodeImages (NodeImage writes are looked at again every 5 s;
//     expectations are dropped after 5 min).
//  2. A deleted job is finalized: the secret copies are released and the finalizer
//     apps.kruise.io/deletion-protection removed. A completed job is finalized too, then
//     deleted once ttlSecondsAfterFinished has passed since its completion, unless an
//     ImageListPullJob controls it. A running job gets the finalizer if it lacks it.
//  3. Targets: the nodes of the active, scheduled pods podSelector selects, the NodeImages
//     selector.names names, those its label selector selects, or every NodeImage.
//  4. Secrets: each pull secret that exists is copied into the secrets namespace (default
//     kruise-daemon-config, the only one node agents read) as <source>-<6 hex digits>,
//     annotated with its source, the sorted jobs referencing it and mode batch, its data
//     kept equal to the source's; releasing removes the job from the references and
//     deletes copies no job references.
//  5. Status: each target is not synced (no tag owned by the job, or missing secret
//     references), pulling, succeeded or failed, from the node's status of the tag's
//     current version. A job with completionPolicy Always completes when nothing is left,
//     or at its activeDeadlineSeconds, every unfinished node then counting as failed.
//  6. Fan-out: parallelism minus the pulling nodes is how many not-synced NodeImages get
//     the tag now, each with a read-modify-write retried on conflicts, so that concurrent
//     jobs merge their tags instead of overwriting each other.
//  7. The status is written when it changed; a job with a deadline is looked at again then.
//
// Beyond OpenKruise:
//
//   - A changed pullPolicy or imagePullPolicy reaches the tags the job alone owns; a tag's
//     version is raised (a new pull) only when its last pull failed. Tags shared with other
//     jobs keep the policy of the job that added them.
//   - Tags of jobs that never complete get a pull deadline of every attempt's timeout plus
//     the agent's sleeps between attempts (at least 1800 s), not only one timeout.
//   - A job an ImageListPullJob controls is never deleted by its own
//     ttlSecondsAfterFinished; it goes with its owner. Deleting it would have the owner
//     create it again and pull its image once more, while its siblings still run.
//   - A NodeImage update queues only the owners of tags whose status phase or version
//     changed or whose owner reference was dropped, and, when the node's labels changed,
//     the jobs selecting nodes by label; node agents' frequent status writes do not sync
//     every job.
//
// The controller records no events; node agents and the NodeImage controller record pull
// failures on the jobs owning the tags.
package imagepulljob
