package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:scope=Namespaced,shortName=pub
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Allowed",type="integer",JSONPath=".status.unavailableAllowed",description="Number of further pods that may be made unavailable now."
// +kubebuilder:printcolumn:name="Current",type="integer",JSONPath=".status.currentAvailable",description="Number of covered pods that are available."
// +kubebuilder:printcolumn:name="Desired",type="integer",JSONPath=".status.desiredAvailable",description="Minimum number of covered pods that must stay available."
// +kubebuilder:printcolumn:name="Total",type="integer",JSONPath=".status.totalReplicas",description="Expected number of covered pods."

// PodUnavailableBudget (PUB) limits how many of the pods it covers may be made unavailable
// at once by voluntary operations: pod deletion, eviction and, optionally, pod update. Its
// admission webhook spends the budget atomically; its controller keeps the status current.
// Unlike a PodDisruptionBudget it also protects against deletes and in-place updates.
type PodUnavailableBudget struct {
	// TypeMeta carries the kind and apiVersion of the object.
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata. The v1alpha1 annotations kruise.io/pub-protect-operations
	// and pub.kruise.io/protect-total-replicas are still honoured when the fields that
	// replace them are unset.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is which pods the budget covers and how many may be unavailable. No field is
	// defaulted.
	// +optional
	Spec PodUnavailableBudgetSpec `json:"spec,omitempty"`

	// Status is the current budget, written by the controller and by the admission
	// webhook through the status subresource.
	// +optional
	Status PodUnavailableBudgetStatus `json:"status,omitempty"`
}

// PodUnavailableBudgetSpec says which pods a budget covers and how many of them may be
// unavailable. Exactly one of selector and targetRef, and exactly one of maxUnavailable
// and minAvailable, must be set; the budget's validating webhook checks it and answers 400
// naming the fields, as OpenKruise does.
type PodUnavailableBudgetSpec struct {
	// Selector covers the active pods of the budget's namespace that match it. It must be
	// valid and non-empty, and is immutable. Exactly one of selector and targetRef.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// TargetReference covers the pods of one workload in the budget's namespace. It is
	// immutable. Exactly one of selector and targetRef.
	// +optional
	TargetReference *TargetReference `json:"targetRef,omitempty"`

	// MaxUnavailable is how many covered pods may be unavailable: a non-negative integer or
	// a percentage (at most 100%) of the expected pod count, rounded up. Exactly one of
	// maxUnavailable and minAvailable.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MinAvailable is how many covered pods must stay available: a non-negative integer, or
	// a percentage (at most 100%) of the expected pod count, rounded up. Exactly one of
	// maxUnavailable and minAvailable.
	// +optional
	MinAvailable *intstr.IntOrString `json:"minAvailable,omitempty"`

	// ProtectOperations lists the voluntary operations the budget guards: DELETE, UPDATE,
	// EVICT and RESIZE (UPDATE implies RESIZE). Empty means DELETE, UPDATE and EVICT, or
	// what the kruise.io/pub-protect-operations annotation lists when it is set.
	// +optional
	ProtectOperations []PubOperation `json:"protectOperations,omitempty"`

	// ProtectTotalReplicas replaces the computed expected pod count, the base of
	// percentages; it is needed for pods whose owner has no replica count (for example
	// Advanced DaemonSet pods). Unset falls back to the
	// pub.kruise.io/protect-total-replicas annotation, then to the computed count.
	// Must be >= 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ProtectTotalReplicas *int32 `json:"protectTotalReplicas,omitempty"`

	// IgnoredPodSelector exempts the pods matching it from the budget's checks, like the
	// pod annotation pub.kruise.io/no-protect, which it supersedes. When set it must be
	// valid and non-empty.
	// +optional
	IgnoredPodSelector *metav1.LabelSelector `json:"ignoredPodSelector,omitempty"`
}

// TargetReference names a workload in the budget's namespace. Two references are the same
// workload when group, kind and name are equal; the API version is ignored. All three
// fields are required when targetRef is set.
type TargetReference struct {
	// APIVersion of the workload, "group/version" (or "v1" for the core group).
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the workload, for example Deployment.
	// +optional
	Kind string `json:"kind,omitempty"`

	// Name of the workload.
	// +optional
	Name string `json:"name,omitempty"`
}

// PodUnavailableBudgetStatus is the current state of a budget.
type PodUnavailableBudgetStatus struct {
	// ObservedGeneration is the metadata.generation the controller last wrote the status
	// for; the other fields are meaningful only when it equals the generation.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// DisruptedPods maps the name of a pod whose deletion or eviction the webhook admitted,
	// but which has not yet been seen gone, to the time of admission. Entries expire after
	// 20 seconds.
	// +optional
	DisruptedPods map[string]metav1.Time `json:"disruptedPods,omitempty"`

	// UnavailablePods maps the name of a pod whose update the webhook admitted, and which
	// may still be restarting, to the time of admission. Entries expire after 10 seconds.
	// +optional
	UnavailablePods map[string]metav1.Time `json:"unavailablePods,omitempty"`

	// UnavailableAllowed is the budget left: max(currentAvailable - desiredAvailable, 0),
	// decremented by the webhook for each admitted operation.
	UnavailableAllowed int32 `json:"unavailableAllowed"`

	// CurrentAvailable is the number of covered pods that are available and not recorded
	// in disruptedPods or unavailablePods.
	CurrentAvailable int32 `json:"currentAvailable"`

	// DesiredAvailable is the minimum number of covered pods that must stay available.
	DesiredAvailable int32 `json:"desiredAvailable"`

	// TotalReplicas is the expected number of covered pods, the base of percentages.
	TotalReplicas int32 `json:"totalReplicas"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// PodUnavailableBudgetList is a list of PodUnavailableBudgets.
type PodUnavailableBudgetList struct {
	// TypeMeta carries the kind and apiVersion of the object.
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the PodUnavailableBudgets.
	Items []PodUnavailableBudget `json:"items"`
}
