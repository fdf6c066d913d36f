// Package imagelistpulljob is the imagelistpulljob-controller: it pulls every image of an
// apps.kruise.io ImageListPullJob by keeping one child ImagePullJob per image, all made
// from the list job's template (its spec without the images), and sums up the children's
// progress in the list job's status. The children do the pulling; the
// imagepulljob-controller runs them.
//
// One sync of a list job, in order:
//
//  1. A list job that is gone has its expectations forgotten. One being deleted is left to
//     the garbage collector, children included. A completed one is deleted (background
//     propagation, so the children go too) once ttlSecondsAfterFinished has passed since
//     its completionTime, or looked at again then; its children are no longer managed.
//  2. The template hash h: FNV-32a over a deep print of the template, as OpenKruise
//     computes it, so that children created by either implementation are recognised by the
//     other. The list job carries it in label controller-revision-hash (merge patch).
//  3. The children: the ImagePullJobs of the namespace this list job's UID controls and
//     that are not being deleted, keyed by spec.image; of several with the same image the
//     oldest is the child and the others are deleted. A child is current when its label is
//     h or when its spec without the image equals the template once both are defaulted as
//     ImagePullJobs are (OpenKruise's hash changed with its Go types, so a hand-over between
//     implementations or versions must not re-pull every image); a current child labelled
//     otherwise is relabelled, not recreated.
//  4. Unless creates or deletes of an earlier sync are still unseen by the informer
//     (expectations, creations counted and deletions tracked by child): a child is created
//     for every image without a current one, in slow-start batches (1, 2, 4, …), and the
//     children of images no longer listed and those not current are deleted. Children are
//     named <list job name, cut to 230>-<8 hex digits of FNV-32a(image)>-<h>, so that a
//     create repeated after a restart finds the child it made; they carry the label, a
//     controller reference to the list job (apps.kruise.io/v1beta1, blockOwnerDeletion)
//     and spec {image, template}.
//  5. The status, over the current children that have started: active (children with
//     active nodes), completed (every node finished), succeeded (every node succeeded),
//     failedImageStatuses (children with failed nodes, in spec.images order), desired (the
//     number of images), startTime (the first sync) and, unless completionPolicy.type is
//     Never, completionTime once every image completed. It is written through /status,
//     retried on conflicts, only when it changed.
//
// Events on the list job: SuccessfulCreate and SuccessfulDelete (Normal, with counts),
// FailedCreate and FailedDelete (Warning).
//
// parallelism, like every template field, applies to each child on its own: it bounds the
// nodes pulling one image, not the images pulled at once.
//
// Beyond OpenKruise:
//
//   - Children are never deleted by their own ttlSecondsAfterFinished (the
//     imagepulljob-controller leaves them alone); they go with their owner. OpenKruise
//     deletes a finished child while its siblings still run, recreates it and pulls again.
//   - Children are named deterministically, failedImageStatuses keeps spec order (no status
//     write for a mere reordering), and equal templates under another hash are relabelled.
//   - Annotation imagelistpulljob.bosun.dev/max-active-images: "<n>" limits how many
//     children may be running (created and not completed) at once; further images get
//     their child as earlier ones complete.
package imagelistpulljob
