package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Tuning of how a workload updates its pods, shared by the workloads of this group that
// roll pods in batches (the CloneSet today).

// InPlaceUpdateStrategy tunes in-place updates, and the pre-download of the images they
// need.
type InPlaceUpdateStrategy struct {
	// GracePeriodSeconds is how long a pod stays marked not ready (its InPlaceUpdateReady
	// condition False) before its containers are changed, so that load balancers stop
	// sending it traffic first. 0, the default, changes them at once.
	// +optional
	GracePeriodSeconds int32 `json:"gracePeriodSeconds,omitempty"`

	// ImagePreDownloadParallelism is how many nodes pull the new images at once while they
	// are pre-downloaded (feature gate PreDownloadImageForInPlaceUpdate). An integer >= 0,
	// percentages are rejected; 0 pauses the pulls. When unset, the workload's annotation
	// apps.kruise.io/image-predownload-parallelism (its v1alpha1 form) is read, and
	// without it 1 is used.
	// +optional
	ImagePreDownloadParallelism *intstr.IntOrString `json:"imagePreDownloadParallelism,omitempty"`

	// ImagePreDownloadTimeoutSeconds is the timeout of each image pull of a pre-download, in
	// seconds; >= 0. When unset, the workload's annotation
	// apps.kruise.io/image-predownload-timeout-seconds (its v1alpha1 form) is read, and
	// without it 300 is used.
	// +optional
	ImagePreDownloadTimeoutSeconds *int32 `json:"imagePreDownloadTimeoutSeconds,omitempty"`

	// ImagePreDownloadMinUpdatedReadyPods is how many pods of the new revision must be
	// ready before its images are pre-downloaded on the other nodes; >= 0. When unset, the
	// workload's annotation apps.kruise.io/image-predownload-min-updated-ready-pods (its
	// v1alpha1 form) is read, and without it 0 is used.
	// +optional
	ImagePreDownloadMinUpdatedReadyPods *int32 `json:"imagePreDownloadMinUpdatedReadyPods,omitempty"`
}

// UpdatePriorityStrategy orders the pods of an update: pods ranked higher are updated
// first. Exactly one of orderPriority and weightPriority may be set.
type UpdatePriorityStrategy struct {
	// OrderPriority ranks pods by the value of a label. The first term whose key a pod
	// carries decides: pods with that key come before pods that only match a later term,
	// ordered by the last integer in the label's value, higher first (5 in "5", 10 in
	// "web-10"). Pods with none of the keys come last.
	// +optional
	OrderPriority []UpdatePriorityOrderTerm `json:"orderPriority,omitempty"`

	// WeightPriority ranks pods by the sum of the weights of the terms whose selector
	// matches their labels, higher first.
	// +optional
	WeightPriority []UpdatePriorityWeightTerm `json:"weightPriority,omitempty"`
}

// UpdatePriorityOrderTerm is a pod label whose value ranks pods.
type UpdatePriorityOrderTerm struct {
	// OrderedKey is the label key; it must not be empty.
	OrderedKey string `json:"orderedKey"`
}

// UpdatePriorityWeightTerm gives a weight to the pods a selector matches.
type UpdatePriorityWeightTerm struct {
	// Weight is added to the rank of every matching pod; 1 to 100.
	Weight int32 `json:"weight"`
	// MatchSelector selects pods by their labels; it must be valid and not empty.
	MatchSelector metav1.LabelSelector `json:"matchSelector"`
}

// UpdateScatterStrategy spreads the pods carrying given labels over the whole update,
// instead of updating them in one batch. The terms apply after the priority strategy,
// the term matching the most pods first; one term is easiest to reason about.
type UpdateScatterStrategy []UpdateScatterTerm

// UpdateScatterTerm is a label pair whose pods an update spreads out. The key must not be
// empty and no pair may appear twice.
type UpdateScatterTerm struct {
	// Key is the label key.
	Key string `json:"key"`
	// Value is the label value.
	Value string `json:"value"`
}
