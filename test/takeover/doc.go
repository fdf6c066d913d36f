// Command takeover hands a cluster over from a real OpenKruise install to bosun, on bosun's
// local cluster with one real node (package test/e2e/cluster, started without bosun), and
// checks that nothing running notices. It has a case for each OpenKruise release it starts
// from (-from, both by default: 1.9, then 1.8), each on a fresh cluster of its own
// (_output/takeover-<release>); what differs between them is one value, startingPoint
// (from.go).
//
// kruise-manager and kruise-daemon of the release, as hack/build-kruise.sh builds them from
// their Go module (v1.9.0; v1.8.2 as kruise-manager-1.8 and kruise-daemon-1.8), run as
// processes with the release's config/default installed.
//
// From 1.9, the cluster plays one that ran OpenKruise before 1.9: the v1alpha1 objects are
// written while the CRDs store v1alpha1 and stay stored so, the v1beta1 objects after 1.9's
// CRDs made v1beta1 the storage version. Through OpenKruise the run creates Advanced
// DaemonSets (v1alpha1 with the progressive-create-pod annotation, v1beta1 with
// partitionedScaling), PodUnavailableBudgets (v1alpha1 with the protect-operations and
// protect-total-replicas annotations, v1beta1 with the fields and ignoredPodSelector), a
// ContainerRecreateRequest that kruise-daemon carries out, ImagePullJobs in both versions and
// an ImageListPullJob, and CloneSets that it leaves in the middle of something (cloneset.go):
// a v1alpha1 ReCreate rollout stopped by its partition (one of two pods recreated at the new
// image), whose pods have claims from a volume claim template bound to PersistentVolumes the
// run makes (the cluster has no provisioner) and which has a Progressing condition; a
// v1beta1 InPlaceIfPossible rollout whose chosen pod waits in PreparingUpdate, held by an
// inPlaceUpdate hook; and a v1beta1 scale-in from three pods to two, with
// excludePreparingDelete, whose chosen pod waits in PreparingDelete, held by a preDelete
// hook. Each hook's label is on every pod (from the template) and only the run takes it off,
// so the held states last. The run waits until all have settled. It records every object of
// the seven kinds in both versions, the pods (UID, labels, annotations, images), the
// claims' UIDs and the ControllerRevisions, leaves the CRDs' conversion naming OpenKruise's
// Service, as an OpenKruise inside the cluster does, and then does what docs/install.md
// tells a user: stop OpenKruise, delete its webhook configurations, keep its CRDs, point
// their conversion at bosun, apply bosun's CRDs server-side, start bosun.
//
// From 1.8, whose CRDs of the seven kinds serve and store v1alpha1 alone and convert
// nothing, the run creates the v1alpha1 objects only (the DaemonSet, the budget, an
// ImagePullJob, the ImageListPullJob, the three CloneSets in v1alpha1, the scale-in's with
// the exclude-preparing-delete label, the partitioned one without a Progressing condition,
// which 1.8 does not have, and the ContainerRecreateRequest on the DaemonSet's pod), checks
// that etcd holds every object as v1alpha1, and records them in v1alpha1. The hand-over has
// no conversion to re-point (the run checks that no CRD converts through a webhook); bosun's
// CRDs add v1beta1 as the storage version.
//
// bosun then runs for -observe (150 s with --min-resync-period=30s) and until its storage
// version migrator has rewritten what OpenKruise stored as v1alpha1; the queues' metrics
// must show the first sync and two resyncs of every object. No pod (nor its labels,
// annotations or images), no claim and no ControllerRevision may change meanwhile.
// Afterwards etcd holds every object as v1beta1, and every object is as OpenKruise left it
// (metadata and spec exactly, status semantically) in each version the baseline was
// recorded in, except where the two managers are meant to differ (expected.go names each
// such field, for each release, and checks its values; each must occur); every object can
// be read in v1beta1 through bosun's conversion. The comparison is shown to fail on a
// planted annotation and a deleted pod, and a v1alpha1 image update of the v1alpha1
// Advanced DaemonSet must roll out under bosun. Last, bosun completes what each CloneSet was
// handed over in the middle of, with the run doing what the CloneSet's user would: the
// partition lowered to 0, the hook's label taken off each waiting pod (and put back on each
// pod done with its in-place update, which returns it to Normal). The partitioned rollout
// must recreate only the pod left at the old revision, keeping the other and its claim; the
// in-place one must update both pods in place (same UIDs, containers restarted into the new
// image); the scale-in must delete the waiting pod and create none.
//
// `make test-takeover` runs it as root; without root or the node's packages it reports
// itself skipped.
package main
