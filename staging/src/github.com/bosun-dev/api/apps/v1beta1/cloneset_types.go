package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +genclient
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:scope=Namespaced,shortName=clone
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.labelSelector
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".spec.replicas",description="Number of pods wanted."
// +kubebuilder:printcolumn:name="UPDATED",type="integer",JSONPath=".status.updatedReplicas",description="Number of pods of the update revision."
// +kubebuilder:printcolumn:name="UPDATED_READY",type="integer",JSONPath=".status.updatedReadyReplicas",description="Number of pods of the update revision that are ready."
// +kubebuilder:printcolumn:name="UPDATED_AVAILABLE",type="integer",JSONPath=".status.updatedAvailableReplicas",description="Number of pods of the update revision that are available."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.readyReplicas",description="Number of pods that are ready."
// +kubebuilder:printcolumn:name="TOTAL",type="integer",JSONPath=".status.replicas",description="Number of pods the CloneSet runs, whatever their revision."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since the object was created."
// +kubebuilder:printcolumn:name="CONTAINERS",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].name",description="Names of the containers in the pod template."
// +kubebuilder:printcolumn:name="IMAGES",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].image",description="Images of the containers in the pod template."
// +kubebuilder:printcolumn:name="SELECTOR",type="string",priority=1,JSONPath=".status.labelSelector",description="Label selector of the pods, as a string."

// CloneSet runs a number of identical, interchangeable pods, like the built-in
// ReplicaSet and Deployment together: it scales them and rolls them to a new template
// with partitions, surge, priorities and in-place updates, gives each pod its own
// persistent volume claims, deletes chosen pods on request and holds pods in lifecycle
// hooks. Its scale subresource works with kubectl scale and HorizontalPodAutoscalers.
type CloneSet struct {
	// TypeMeta carries the kind and apiVersion of the object.
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata. The name must be a DNS subdomain. The label
	// apps.kruise.io/cloneset-scaling-exclude-preparing-delete and the annotations
	// apps.kruise.io/image-predownload-* are the v1alpha1 forms of spec fields and are
	// still honoured: see scaleStrategy.excludePreparingDelete and
	// rollingUpdate.inPlaceUpdateStrategy.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired behaviour of the CloneSet.
	// +optional
	Spec CloneSetSpec `json:"spec,omitempty"`

	// Status is the most recently observed state of the CloneSet. It is written by the
	// controller through the status subresource.
	// +optional
	Status CloneSetStatus `json:"status,omitempty"`
}

// CloneSetSpec is the desired state of a CloneSet. On update only replicas, template,
// volumeClaimTemplates, scaleStrategy, updateStrategy, lifecycle, minReadySeconds,
// progressDeadlineSeconds and revisionHistoryLimit may change.
type CloneSetSpec struct {
	// Replicas is the number of pods wanted. Defaults to 1. Must be >= 0.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Selector is a label query over the pods of this CloneSet. It must be valid and not
	// empty, must match template.metadata.labels, and is immutable. Only pods the CloneSet
	// created (controlled by it) count; matching pods of no owner are never adopted.
	// +required
	Selector *metav1.LabelSelector `json:"selector"`

	// Template describes the pods to create. It must pass the usual pod-template
	// validation with one persistentVolumeClaim volume added per volume claim template;
	// spec.restartPolicy must be empty or Always and spec.activeDeadlineSeconds must not be
	// set. On creation, and on updates that change it, the admission webhook fills in the
	// usual pod-spec defaults. The template is part of the revision hash, so pods are
	// updated when it changes.
	// The CRD stores it schemaless with unknown fields preserved (as OpenKruise does), so
	// pod fields newer than this API are kept.
	// +required
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Template corev1.PodTemplateSpec `json:"template"`

	// VolumeClaimTemplates are the persistent volume claims every pod gets of its own:
	// the claim of template "data" for pod <cloneset>-<id> is named
	// data-<cloneset>-<id> and mounted as the pod volume "data". Scaling in deletes a
	// pod's claims; the claims of a pod that is otherwise gone are deleted too, unless
	// scaleStrategy.enablePVCReuse keeps them for its replacement.
	// Stored schemaless with unknown fields preserved, like template.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`

	// ScaleStrategy says how pods are created and deleted when the number of pods changes.
	// +optional
	ScaleStrategy CloneSetScaleStrategy `json:"scaleStrategy,omitempty"`

	// UpdateStrategy says how pods are moved to a new revision of the template. Defaults
	// to a RollingUpdate that recreates pods, 20% of them unavailable at a time.
	// +optional
	UpdateStrategy CloneSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// RevisionHistoryLimit is how many ControllerRevisions beyond the current and update
	// revisions are kept for rollback. Defaults to 10. Must be >= 0.
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// MinReadySeconds is how long a pod must be ready, without any container crashing,
	// before it counts as available. Defaults to 0 (available as soon as ready). Must be
	// >= 0.
	// +optional
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// Lifecycle holds pod lifecycle hooks. The CloneSet honours all three: preNormal holds
	// new pods in PreparingNormal, inPlaceUpdate holds pods around an in-place update, and
	// preDelete holds pods chosen for deletion in PreparingDelete. markPodNotReady is
	// honoured for preDelete and inPlaceUpdate.
	// +optional
	Lifecycle *Lifecycle `json:"lifecycle,omitempty"`

	// ProgressDeadlineSeconds is how long a rollout may take to reach an available (or
	// partition-paused) state before the Progressing condition turns False with reason
	// ProgressDeadlineExceeded; time spent paused does not count. Unset, or 2147483647,
	// means no deadline and no Progressing condition. Must be >= 0 and, unless 2147483647,
	// greater than minReadySeconds.
	// +optional
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`
}

// CloneSetScaleStrategy says how a CloneSet creates and deletes pods.
type CloneSetScaleStrategy struct {
	// PodsToDelete names pods to delete, whether or not replicas changes: with replicas
	// unchanged each is replaced by a new pod, and when replicas goes down in the same
	// update they are the pods removed. Names added by an update must be existing,
	// non-terminating pods of this CloneSet, and no name may appear twice. The controller
	// removes the names of pods that no longer exist.
	// +optional
	PodsToDelete []string `json:"podsToDelete,omitempty"`

	// MaxUnavailable limits scaling up: at most this many pods (an integer, or a percentage
	// of replicas rounded up) may be unavailable, so a scale-up creates no more pods than
	// this minus those already unavailable. Unset means no limit. Scaling down is not
	// limited by it.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// EnablePVCReuse, when true, lets a new pod take over the instance ID, and so the
	// claims, of a pod that is gone but whose claims are left. When false, the default,
	// claims left without their pod are deleted and new pods get new claims. (v1alpha1
	// says the opposite with disablePVCReuse, whose default, false, reuses claims; a
	// v1alpha1 object keeps reusing claims through conversion.)
	// +optional
	// +kubebuilder:default=false
	EnablePVCReuse bool `json:"enablePVCReuse,omitempty"`

	// ExcludePreparingDelete, when true, leaves pods held in PreparingDelete by a preDelete
	// hook out of the count of pods, so that replacements are created while they wait.
	// When false, the default, they count toward replicas. The CloneSet label
	// apps.kruise.io/cloneset-scaling-exclude-preparing-delete: "true", the v1alpha1 form,
	// and the controller flag --cloneset-scaling-exclude-preparing-delete turn it on too.
	// +optional
	ExcludePreparingDelete bool `json:"excludePreparingDelete,omitempty"`
}

// CloneSetUpdateStrategyType names how a CloneSet moves pods to a new revision.
type CloneSetUpdateStrategyType string

const (
	// RollingUpdateCloneSetUpdateStrategyType updates pods in batches within the limits of
	// rollingUpdate. It is the default.
	RollingUpdateCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "RollingUpdate"
	// OnDeleteCloneSetUpdateStrategyType updates no pod: a pod changes revision only when
	// it is deleted, by anyone, and replaced.
	OnDeleteCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "OnDelete"
)

// CloneSetPodUpdateStrategyType names how a rolling update moves a single pod to a new
// revision.
type CloneSetPodUpdateStrategyType string

const (
	// RecreateCloneSetPodUpdateStrategyType deletes the old pod and creates a new one. It
	// is the default.
	RecreateCloneSetPodUpdateStrategyType CloneSetPodUpdateStrategyType = "ReCreate"
	// InPlaceIfPossibleCloneSetPodUpdateStrategyType updates the pod in place when the
	// revisions differ only in container images (and metadata, and, with feature gate
	// InPlaceWorkloadVerticalScaling, container resources), and recreates it otherwise.
	InPlaceIfPossibleCloneSetPodUpdateStrategyType CloneSetPodUpdateStrategyType = "InPlaceIfPossible"
	// InPlaceOnlyCloneSetPodUpdateStrategyType always updates pods in place. Updates of the
	// template that cannot be applied in place (anything but container images) are
	// rejected, and maxSurge must be 0.
	InPlaceOnlyCloneSetPodUpdateStrategyType CloneSetPodUpdateStrategyType = "InPlaceOnly"
)

// CloneSetUpdateStrategy says how a CloneSet moves pods to a new revision.
type CloneSetUpdateStrategy struct {
	// Type is RollingUpdate or OnDelete. Defaults to RollingUpdate.
	// +optional
	Type CloneSetUpdateStrategyType `json:"type,omitempty"`

	// RollingUpdate tunes the rolling update. Defaults, for type RollingUpdate, to an
	// object whose fields are then defaulted.
	// +optional
	RollingUpdate *RollingUpdateCloneSetStrategy `json:"rollingUpdate,omitempty"`
}

// RollingUpdateCloneSetStrategy tunes the rolling update of a CloneSet.
type RollingUpdateCloneSetStrategy struct {
	// Partition is how many pods are kept on the current (old) revision: an integer, or
	// a percentage of replicas rounded up, except that with more than one replica a
	// percentage below 100% keeps at most replicas-1 pods. Defaults to 0: every pod is
	// updated. Must be >= 0. Raising it does not move updated pods back.
	// +optional
	Partition *intstr.IntOrString `json:"partition,omitempty"`

	// MaxUnavailable is how many pods may be unavailable during the update: an integer, or
	// a percentage of replicas, rounded up when maxSurge is 0 and down otherwise. Defaults
	// to 20%. Not both maxUnavailable and maxSurge may be below 1 when replicas > 0.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MaxSurge is how many pods may be created above replicas during the update, or while
	// pods named in podsToDelete are replaced: an integer, or a percentage of replicas
	// rounded up. Defaults to 0. Must be 0 with podUpdatePolicy InPlaceOnly; ignored while
	// paused.
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// PodUpdatePolicy is how each pod is updated: ReCreate, InPlaceIfPossible or
	// InPlaceOnly. Defaults to ReCreate. (v1alpha1 calls it updateStrategy.type.)
	// +optional
	PodUpdatePolicy CloneSetPodUpdateStrategyType `json:"podUpdatePolicy,omitempty"`

	// Paused, when true, stops updating pods; scaling goes on, new pods of the old
	// revisions' share being created from the current revision. Defaults to false.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// PriorityStrategy orders the pods of the update by their labels. Not defaulted.
	// +optional
	PriorityStrategy *UpdatePriorityStrategy `json:"priorityStrategy,omitempty"`

	// ScatterStrategy spreads pods with given labels over the update. Not defaulted.
	// +optional
	ScatterStrategy UpdateScatterStrategy `json:"scatterStrategy,omitempty"`

	// InPlaceUpdateStrategy tunes in-place updates. Defaults to an empty object for the
	// in-place pod update policies.
	// +optional
	InPlaceUpdateStrategy *InPlaceUpdateStrategy `json:"inPlaceUpdateStrategy,omitempty"`
}

// CloneSetStatus is the observed state of a CloneSet, counted over the active pods it
// controls (neither terminated nor being deleted).
type CloneSetStatus struct {
	// ObservedGeneration is the metadata.generation seen by the last complete sync.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Replicas is the number of active pods, those held in PreparingDelete included.
	Replicas int32 `json:"replicas"`

	// ReadyReplicas is the number of pods that are running and ready, with no in-place
	// update under way.
	ReadyReplicas int32 `json:"readyReplicas"`

	// AvailableReplicas is the number of ready pods that have been ready for
	// minReadySeconds and are in lifecycle state Normal (or none).
	AvailableReplicas int32 `json:"availableReplicas"`

	// UpdatedReplicas is the number of pods of the update revision.
	UpdatedReplicas int32 `json:"updatedReplicas"`

	// UpdatedReadyReplicas is the number of ready pods of the update revision.
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas"`

	// UpdatedAvailableReplicas is the number of available pods of the update revision.
	// +optional
	UpdatedAvailableReplicas int32 `json:"updatedAvailableReplicas,omitempty"`

	// ExpectedUpdatedReplicas is the number of pods the update is to bring to the update
	// revision: replicas minus the partition (all of them with OnDelete).
	// +optional
	ExpectedUpdatedReplicas int32 `json:"expectedUpdatedReplicas,omitempty"`

	// UpdateRevision is the name of the ControllerRevision of the current template.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`

	// CurrentRevision is the name of the ControllerRevision that pods ran before the
	// update began; it becomes updateRevision once every pod is updated.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`

	// CollisionCount counts ControllerRevision name collisions; it salts the revision
	// hash so that the next revision gets a fresh name.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`

	// Conditions are the latest observations of the CloneSet's state: Progressing (only
	// with a progressDeadlineSeconds), FailedScale and FailedUpdate.
	// +optional
	Conditions []CloneSetCondition `json:"conditions,omitempty"`

	// LabelSelector is spec.selector as a label-selector string, for the scale
	// subresource (HorizontalPodAutoscalers read it).
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
}

// CloneSetConditionType names a condition of a CloneSet.
type CloneSetConditionType string

const (
	// CloneSetConditionTypeProgressing says whether the current rollout progresses within
	// spec.progressDeadlineSeconds; its reasons are the CloneSetConditionReason values.
	CloneSetConditionTypeProgressing CloneSetConditionType = "Progressing"
	// CloneSetConditionFailedScale, True, says the last sync failed to create or delete
	// pods or claims; its message is the error.
	CloneSetConditionFailedScale CloneSetConditionType = "FailedScale"
	// CloneSetConditionFailedUpdate, True, says the last sync failed to update pods; its
	// message is the error.
	CloneSetConditionFailedUpdate CloneSetConditionType = "FailedUpdate"
)

// CloneSetConditionReason is the reason of a Progressing condition.
type CloneSetConditionReason string

const (
	// CloneSetAvailable (status True): every pod runs the update revision and is
	// available.
	CloneSetAvailable CloneSetConditionReason = "CloneSetAvailable"
	// CloneSetProgressPaused (status True): the update is paused.
	CloneSetProgressPaused CloneSetConditionReason = "CloneSetPaused"
	// CloneSetProgressPartitionAvailable (status True): every pod the partition lets
	// through is updated and available.
	CloneSetProgressPartitionAvailable CloneSetConditionReason = "ProgressPartitionAvailable"
	// CloneSetProgressUpdated (status True): the rollout is under way.
	CloneSetProgressUpdated CloneSetConditionReason = "CloneSetUpdated"
	// CloneSetProgressDeadlineExceeded (status False): the rollout did not get there
	// within spec.progressDeadlineSeconds.
	CloneSetProgressDeadlineExceeded CloneSetConditionReason = "ProgressDeadlineExceeded"
)

// CloneSetCondition is one observation of a CloneSet's state.
type CloneSetCondition struct {
	// Type is the kind of observation.
	Type CloneSetConditionType `json:"type"`
	// Status is True, False or Unknown.
	Status corev1.ConditionStatus `json:"status"`
	// LastUpdateTime is when the condition was last written with a change.
	// +optional
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`
	// LastTransitionTime is when the status last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is a one-word CamelCase reason for the condition's last transition.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message is a human-readable explanation.
	// +optional
	Message string `json:"message,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// CloneSetList is a list of CloneSets.
type CloneSetList struct {
	// TypeMeta carries the kind and apiVersion of the object.
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the CloneSets.
	Items []CloneSet `json:"items"`
}
