package v1alpha1

// Well-known annotation and label names of the policy.kruise.io group. Their exact strings
// are part of the wire contract with OpenKruise, so never change them.
const (
	// PubProtectOperationAnnotation on a budget lists, comma-separated, the PubOperations
	// it protects. Absent or empty means DELETE,UPDATE,EVICT.
	PubProtectOperationAnnotation = "kruise.io/pub-protect-operations"

	// PubProtectTotalReplicasAnnotation on a budget holds a decimal int32 that replaces the
	// computed expected pod count; it is needed for pods whose owner has no replica count
	// (for example Advanced DaemonSet pods).
	PubProtectTotalReplicasAnnotation = "pub.kruise.io/protect-total-replicas"

	// PodRelatedPubAnnotation on a pod names the budget that covers it. It is the only
	// spelling OpenKruise <= 1.9 reads and writes; write it together with
	// PodRelatedPubAnnotationNew.
	PodRelatedPubAnnotation = "kruise.io/related-pub"

	// PodRelatedPubAnnotationNew is the newer spelling of PodRelatedPubAnnotation. Writers
	// set both; readers accept either and prefer this one.
	PodRelatedPubAnnotationNew = "pub.kruise.io/related-pub"

	// PodPubNoProtectionAnnotation set to "true" on a pod exempts it from every budget
	// check (an escape hatch for forced deletion).
	PodPubNoProtectionAnnotation = "pub.kruise.io/no-protect"

	// PubUnavailablePodLabelPrefix is a pod label prefix: a pod carrying any label with
	// this prefix counts as unavailable even when Ready.
	PubUnavailablePodLabelPrefix = "unavailable-pod.kruise.io/"
)

// PubOperation is a voluntary pod operation a budget may protect, as listed in
// PubProtectOperationAnnotation.
type PubOperation string

const (
	// PubDeleteOperation is pod deletion.
	PubDeleteOperation PubOperation = "DELETE"
	// PubUpdateOperation is a pod update that changes its spec (other than an in-place
	// resize).
	PubUpdateOperation PubOperation = "UPDATE"
	// PubEvictOperation is pod eviction through the pods/eviction subresource.
	PubEvictOperation PubOperation = "EVICT"
	// PubResizeOperation is an in-place resize of container resources.
	PubResizeOperation PubOperation = "RESIZE"
)
