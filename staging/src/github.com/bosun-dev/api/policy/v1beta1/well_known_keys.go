package v1beta1

// Well-known annotation and label names of the policy.kruise.io group. Their exact strings
// are part of the wire contract with OpenKruise, so never change them.
const (
	// PubProtectOperationAnnotation is the v1alpha1 form of spec.protectOperations: the
	// PubOperations a budget protects, comma-separated. A budget with an empty
	// spec.protectOperations may still carry it, and then it decides.
	PubProtectOperationAnnotation = "kruise.io/pub-protect-operations"

	// PubProtectTotalReplicasAnnotation is the v1alpha1 form of spec.protectTotalReplicas,
	// as a decimal int32. A budget without the field may still carry it, and then it
	// decides.
	PubProtectTotalReplicasAnnotation = "pub.kruise.io/protect-total-replicas"

	// PodRelatedPubAnnotation on a pod names the budget that covers it. It is the only
	// spelling OpenKruise <= 1.9 reads and writes; write it together with
	// PodRelatedPubAnnotationNew.
	PodRelatedPubAnnotation = "kruise.io/related-pub"

	// PodRelatedPubAnnotationNew is the newer spelling of PodRelatedPubAnnotation. Writers
	// set both; readers accept either and prefer this one.
	PodRelatedPubAnnotationNew = "pub.kruise.io/related-pub"

	// PodPubNoProtectionAnnotation set to "true" on a pod exempts it from every budget
	// check (an escape hatch for forced deletion). Deprecated in favour of
	// spec.ignoredPodSelector, and still honoured.
	PodPubNoProtectionAnnotation = "pub.kruise.io/no-protect"

	// PubUnavailablePodLabelPrefix is a pod label prefix: a pod carrying any label with
	// this prefix counts as unavailable even when Ready.
	PubUnavailablePodLabelPrefix = "unavailable-pod.kruise.io/"
)

// PubOperation is a voluntary pod operation a budget may protect, as listed in
// spec.protectOperations.
// +kubebuilder:validation:Enum=DELETE;UPDATE;EVICT;RESIZE
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
