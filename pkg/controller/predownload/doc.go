// Package predownload pulls the images of a workload's new revision onto the nodes of its
// pods that are still on other revisions, ahead of their in-place update, through
// ImagePullJobs the workload controls. The Advanced DaemonSet and CloneSet controllers
// decide whether and when a revision's images are worth pulling ahead; this package holds
// what both then write alike, as OpenKruise writes it, so that either controller's jobs
// and revisions read the same to the other:
//
//   - one ImagePullJob per container whose image the revision brings, named
//     <revision-name>-<container> (so that a repeated create finds the job of an earlier
//     sync), in the workload's namespace, controlled by it, labelled with its template's
//     labels (everything a workload controls carries them, so that its selector matches)
//     and the revision's hash, over the pods its selector matches whose
//     controller-revision-hash label is neither the revision's name nor its hash; one
//     retry per node, completion Always with a 600 s TTL, the template's image pull
//     secrets, and the template's labels and annotations as the runtime's pod-sandbox
//     config of the pulls;
//   - the events CreatedImagePullJob and FailedCreateImagePullJob on the workload, both of
//     type Normal: the rollout goes on without the job;
//   - the bookkeeping labels on the revision, apps.kruise.io/pre-predownload-created once
//     its jobs exist and apps.kruise.io/image-predownload-ignored when there was nothing
//     worth pulling ahead; a revision carrying either is never looked at again;
//   - the deletion of the workload's jobs once its rollout is complete.
package predownload
