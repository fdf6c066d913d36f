package v1alpha1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=daemon;ads
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".status.desiredNumberScheduled",description="Number of nodes that should run the daemon pod."
// +kubebuilder:printcolumn:name="CURRENT",type="integer",JSONPath=".status.currentNumberScheduled",description="Number of nodes that should run the daemon pod and run at least one."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.numberReady",description="Number of nodes whose oldest daemon pod is Ready."
// +kubebuilder:printcolumn:name="UP-TO-DATE",type="integer",JSONPath=".status.updatedNumberScheduled",description="Number of nodes whose oldest daemon pod runs the current revision."
// +kubebuilder:printcolumn:name="AVAILABLE",type="integer",JSONPath=".status.numberAvailable",description="Number of nodes whose oldest daemon pod has been Ready for minReadySeconds."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since the object was created."
// +kubebuilder:printcolumn:name="CONTAINERS",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].name",description="Names of the containers in the pod template."
// +kubebuilder:printcolumn:name="IMAGES",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].image",description="Images of the containers in the pod template."

// DaemonSet is the Advanced DaemonSet: it runs one copy of a pod on every eligible node,
// like the built-in apps/v1 DaemonSet, and adds partitioned and node-selected rolling
// updates, surge, in-place image updates, a burst limit and a pre-delete lifecycle hook.
type DaemonSet struct {
	// TypeMeta carries the kind and apiVersion of the object.
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata. The name must be a DNS subdomain.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired behaviour of the DaemonSet.
	// +optional
	Spec DaemonSetSpec `json:"spec,omitempty"`

	// Status is the most recently observed state of the DaemonSet. It is written by the
	// controller through the status subresource.
	// +optional
	Status DaemonSetStatus `json:"status,omitempty"`
}

// DaemonSetSpec is the desired state of a DaemonSet.
type DaemonSetSpec struct {
	// Selector is a label query over the pods that belong to this DaemonSet. It must be
	// non-empty (at least one matchLabels entry or matchExpressions term), must match
	// template.metadata.labels, and is immutable after creation.
	// Not defaulted. Validated by the admission webhook.
	// +required
	Selector *metav1.LabelSelector `json:"selector"`

	// Template describes the pod created on each eligible node. It must pass the usual
	// pod-template validation, spec.restartPolicy must be Always and
	// spec.activeDeadlineSeconds must not be set. Not defaulted.
	// The CRD stores it schemaless with unknown fields preserved (as OpenKruise does), so
	// pod fields newer than this API are kept; the admission webhook validates it.
	// +required
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Template corev1.PodTemplateSpec `json:"template"`

	// UpdateStrategy says how existing daemon pods are replaced when the template changes.
	// Defaults to type RollingUpdate with a Standard rolling update of maxUnavailable 1.
	// +optional
	UpdateStrategy DaemonSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// MinReadySeconds is how long a new daemon pod must be Ready, without any container
	// crashing, before it counts as available. Defaults to 0 (available as soon as Ready).
	// Must be >= 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// BurstReplicas caps the number of pod creations, deletions and in-place updates
	// issued in one sync. An integer, or a percentage of status.desiredNumberScheduled
	// rounded down. Defaults to 250. Not validated.
	// +optional
	BurstReplicas *intstr.IntOrString `json:"burstReplicas,omitempty"`

	// RevisionHistoryLimit is the number of old ControllerRevisions kept for rollback.
	// A pointer so that an explicit 0 differs from unset. Defaults to 10. Must be >= 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// Lifecycle holds pod lifecycle hooks. The DaemonSet honours only preDelete;
	// preNormal is accepted and ignored, and inPlaceUpdate is rejected by validation.
	// Not defaulted.
	// +optional
	Lifecycle *Lifecycle `json:"lifecycle,omitempty"`
}

// DaemonSetUpdateStrategyType names how a DaemonSet replaces pods of old revisions.
type DaemonSetUpdateStrategyType string

const (
	// RollingUpdateDaemonSetStrategyType replaces old pods node by node within the limits
	// of spec.updateStrategy.rollingUpdate. It is the default.
	RollingUpdateDaemonSetStrategyType DaemonSetUpdateStrategyType = "RollingUpdate"
	// OnDeleteDaemonSetStrategyType replaces an old pod only after someone deletes it.
	OnDeleteDaemonSetStrategyType DaemonSetUpdateStrategyType = "OnDelete"
)

// DaemonSetUpdateStrategy says how a DaemonSet replaces pods when its template changes.
type DaemonSetUpdateStrategy struct {
	// Type is RollingUpdate or OnDelete; other values are rejected. Defaults to
	// RollingUpdate.
	// +optional
	// +kubebuilder:validation:Enum=RollingUpdate;OnDelete
	Type DaemonSetUpdateStrategyType `json:"type,omitempty"`

	// RollingUpdate tunes the rolling update. It is required when type is RollingUpdate
	// and defaults to an empty object (whose fields are then defaulted) in that case.
	// Ignored for OnDelete.
	// +optional
	RollingUpdate *RollingUpdateDaemonSet `json:"rollingUpdate,omitempty"`
}

// RollingUpdateType names how a rolling update replaces a single pod.
type RollingUpdateType string

const (
	// StandardRollingUpdateType deletes the old pod and creates a new one (or, with
	// maxSurge, creates the new one first), like the built-in DaemonSet. It is the default.
	StandardRollingUpdateType RollingUpdateType = "Standard"
	// InplaceRollingUpdateType updates container images of the existing pod in place when
	// the revision change is image-only, and recreates the pod otherwise. It cannot be
	// combined with maxSurge.
	InplaceRollingUpdateType RollingUpdateType = "InPlaceIfPossible"
	// DeprecatedSurgingRollingUpdateType is an old alias kept for compatibility: defaulting
	// rewrites it to Standard and, when unset, sets maxSurge to 1 and maxUnavailable to 0.
	//
	// Deprecated: use Standard with maxSurge instead.
	DeprecatedSurgingRollingUpdateType RollingUpdateType = "Surging"
)

// RollingUpdateDaemonSet tunes the rolling update of a DaemonSet.
type RollingUpdateDaemonSet struct {
	// Type is how each pod is replaced: Standard, InPlaceIfPossible, or the deprecated
	// Surging (rewritten to Standard by defaulting). Note the json name rollingUpdateType.
	// Defaults to Standard; unknown values are rejected.
	// +optional
	// +kubebuilder:validation:Enum=Standard;InPlaceIfPossible;Surging
	Type RollingUpdateType `json:"rollingUpdateType,omitempty"`

	// MaxUnavailable is the most daemon pods that may be unavailable during the update: a
	// non-negative integer or a percentage (at most 100%) of
	// status.desiredNumberScheduled, rounded up. Defaults to 1, but only when both it and
	// maxSurge are unset. Exactly one of maxUnavailable and maxSurge must be non-zero.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MaxSurge is the most nodes that may run an updated pod next to their still
	// available old pod: a non-negative integer or a percentage (at most 100%) of
	// status.desiredNumberScheduled, rounded up. Defaults to 0, but only when both it and
	// maxUnavailable are unset. Must be 0 for InPlaceIfPossible.
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// Selector is a label query over NODE labels. When set, only pods on matching nodes
	// are rolled (gray release by node). Not defaulted.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Partition is the number of daemon pods kept on old revisions: a non-negative integer
	// or a percentage (at most 100%) of status.desiredNumberScheduled, rounded down. The
	// pods kept are those on the lexicographically smallest node names. Not defaulted;
	// unset means 0. (OpenKruise <= 1.8 typed this field as an integer; an integer is still
	// accepted here.)
	// +optional
	Partition *intstr.IntOrString `json:"partition,omitempty"`

	// Paused, when true, stops the rolling-update phase only: pods are still created on
	// new nodes (from the current revision) and deleted from ineligible ones. Not defaulted.
	// +optional
	Paused *bool `json:"paused,omitempty"`
}

// DaemonSetStatus is the observed state of a DaemonSet, recomputed over all nodes on every
// sync.
type DaemonSetStatus struct {
	// CurrentNumberScheduled is the number of nodes that should run the daemon pod and run
	// at least one.
	CurrentNumberScheduled int32 `json:"currentNumberScheduled"`

	// NumberMisscheduled is the number of nodes that run a daemon pod but should not.
	NumberMisscheduled int32 `json:"numberMisscheduled"`

	// DesiredNumberScheduled is the number of nodes that should run the daemon pod.
	DesiredNumberScheduled int32 `json:"desiredNumberScheduled"`

	// NumberReady is the number of nodes that should run the daemon pod and whose oldest
	// daemon pod is Ready.
	NumberReady int32 `json:"numberReady"`

	// ObservedGeneration is the metadata.generation seen by the last complete sync.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// UpdatedNumberScheduled is the number of nodes that should run the daemon pod and
	// whose oldest daemon pod runs the current revision.
	UpdatedNumberScheduled int32 `json:"updatedNumberScheduled"`

	// NumberAvailable is the number of nodes that should run the daemon pod and whose
	// oldest daemon pod has been Ready for minReadySeconds (and, with an
	// InPlaceUpdateReady readiness gate, has no pending in-place update).
	// +optional
	NumberAvailable int32 `json:"numberAvailable,omitempty"`

	// NumberUnavailable is desiredNumberScheduled minus numberAvailable.
	// +optional
	NumberUnavailable int32 `json:"numberUnavailable,omitempty"`

	// CollisionCount counts ControllerRevision name collisions; it salts the revision
	// hash so that the next revision gets a fresh name.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`

	// Conditions are the latest observations of the DaemonSet's state. OpenKruise never
	// writes them; bosun writes one, Progressing, which says whether a rollout is under way
	// (reason RollingUpdate), done (RolloutComplete), paused (RolloutPaused) or waiting for
	// pods to be deleted (OnDelete).
	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	Conditions []appsv1.DaemonSetCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// DaemonSetHash is the controller-revision-hash of the current revision (OpenKruise
	// v1beta1 calls it updateRevision).
	DaemonSetHash string `json:"daemonSetHash"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// DaemonSetList is a list of DaemonSets.
type DaemonSetList struct {
	// TypeMeta carries the kind and apiVersion of the object.
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the DaemonSets.
	Items []DaemonSet `json:"items"`
}
