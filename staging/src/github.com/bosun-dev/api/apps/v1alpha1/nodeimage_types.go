package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".status.desired",description="Number of image tags in spec."
// +kubebuilder:printcolumn:name="PULLING",type="integer",JSONPath=".status.pulling",description="Number of tags being pulled."
// +kubebuilder:printcolumn:name="SUCCEED",type="integer",JSONPath=".status.succeeded",description="Number of tags pulled successfully."
// +kubebuilder:printcolumn:name="FAILED",type="integer",JSONPath=".status.failed",description="Number of tags whose pull failed."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since the object was created."

// NodeImage is the list of images to pull on one node, and the result of pulling them. It
// is cluster scoped and named after its node; the manager creates it once the node has
// been Ready for a while, keeps its labels equal to the node's, and deletes it with the
// node. The node agent on that node pulls the images through the container runtime.
type NodeImage struct {
	// TypeMeta carries the kind and apiVersion of the object.
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata. The name is the node name; the labels mirror the node's.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec lists the images to pull on the node.
	// +optional
	Spec NodeImageSpec `json:"spec,omitempty"`

	// Status reports the pulls, written by the node agent (and by the manager for pulls
	// the agent never answered).
	// +optional
	Status NodeImageStatus `json:"status,omitempty"`
}

// NodeImageSpec lists the images to pull on a node.
type NodeImageSpec struct {
	// Images maps an image's familiar repository name without tag (for example "nginx" or
	// "reg.io/team/app") to what to pull of it. At most 256 images; keys must be non-empty.
	// +optional
	// +kubebuilder:validation:MaxProperties=256
	Images map[string]ImageSpec `json:"images,omitempty"`
}

// ImageSpec is what to pull of one image repository.
type ImageSpec struct {
	// PullSecrets are the secrets whose registry credentials are tried when pulling.
	// +optional
	PullSecrets []ReferenceObject `json:"pullSecrets,omitempty"`

	// Tags lists the tags to pull, unique and kept sorted by tag. Required.
	// +required
	Tags []ImageTagSpec `json:"tags"`

	// SandboxConfig is passed as the pod-sandbox config of the runtime's PullImage call.
	// +optional
	SandboxConfig *SandboxConfig `json:"sandboxConfig,omitempty"`
}

// ReferenceObject names a namespaced object, such as a pull secret.
type ReferenceObject struct {
	// Namespace of the object.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name of the object.
	// +optional
	Name string `json:"name,omitempty"`

	// Mode says who manages the object. "batch" (ImagePullSecretModeBatch) marks a secret
	// copy shared by ImagePullJobs, released together with the image entry; empty means
	// the secret is used as it is. OpenKruise declares this field in v1beta1 only; it is
	// part of this version too so that both versions have one schema and a write through
	// either keeps it.
	// +optional
	Mode string `json:"mode,omitempty"`
}

// ImageTagSpec is one tag of an image to pull.
type ImageTagSpec struct {
	// Tag is the tag to pull; it may also be a digest such as "sha256:...". Must be
	// non-empty.
	// +required
	// +kubebuilder:validation:MinLength=1
	Tag string `json:"tag"`

	// CreatedAt is when the tag was requested. Defaults, at admission, to the admission
	// time; it must be set after admission.
	// +optional
	CreatedAt *metav1.Time `json:"createdAt,omitempty"`

	// PullPolicy tunes the pull. Defaults to an empty policy whose fields are then
	// defaulted.
	// +optional
	PullPolicy *ImageTagPullPolicy `json:"pullPolicy,omitempty"`

	// OwnerReferences are the objects that asked for this tag, usually ImagePullJobs.
	// Owners are matched by UID; the manager removes the tag when no ImagePullJob owner
	// remains.
	// +optional
	OwnerReferences []corev1.ObjectReference `json:"ownerReferences,omitempty"`

	// Version is bumped to ask for a new pull of the same tag; a tag status is current only
	// when its version equals this one. Defaults to 0. Must be >= 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Version int64 `json:"version,omitempty"`

	// ImagePullPolicy is Always or IfNotPresent. Only IfNotPresent skips the pull when the
	// runtime already has the image; any other value, including empty, pulls. Not
	// defaulted.
	// +optional
	ImagePullPolicy ImagePullPolicy `json:"imagePullPolicy,omitempty"`
}

// ImageTagPullPolicy tunes the pull of one tag.
type ImageTagPullPolicy struct {
	// TimeoutSeconds bounds each pull attempt. Defaults to 600.
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`

	// BackoffLimit is the number of retries after the first attempt; a negative value
	// counts as 3. Defaults to 3.
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`

	// TTLSecondsAfterFinished removes the tag from spec this many seconds after its pull
	// completed. Not defaulted, but required after admission (the admission webhook
	// rejects a tag without it).
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// ActiveDeadlineSeconds bounds the whole pull, all attempts included, from the time
	// the agent started it. Not defaulted (no deadline).
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
}

// NodeImageStatus reports the pulls on a node.
type NodeImageStatus struct {
	// Desired is the number of tags in spec, over all images.
	Desired int32 `json:"desired"`

	// Succeeded is the number of tags whose pull succeeded.
	// +optional
	Succeeded int32 `json:"succeeded"`

	// Failed is the number of tags whose pull failed.
	// +optional
	Failed int32 `json:"failed"`

	// Pulling is the number of tags being pulled.
	// +optional
	Pulling int32 `json:"pulling"`

	// Waiting is the number of tags waiting for a pull slot. The manager does not
	// recompute it.
	// +optional
	Waiting int32 `json:"waiting"`

	// ImageStatuses maps an image name (a key of spec.images) to the status of its tags.
	// +optional
	ImageStatuses map[string]ImageStatus `json:"imageStatuses,omitempty"`

	// FirstSyncStatus records when the node first finished all its pulls. Defined for
	// compatibility; no component writes it.
	// +optional
	FirstSyncStatus *SyncStatus `json:"firstSyncStatus,omitempty"`
}

// ImageStatus is the status of the tags of one image.
type ImageStatus struct {
	// Tags are the tag statuses, sorted by tag.
	Tags []ImageTagStatus `json:"tags"`
}

// ImagePullPhase is the phase of the pull of one tag.
type ImagePullPhase string

const (
	// ImagePhaseWaiting means the pull has not started (it waits for a pull slot).
	ImagePhaseWaiting ImagePullPhase = "Waiting"
	// ImagePhasePulling means the pull has started and not finished.
	ImagePhasePulling ImagePullPhase = "Pulling"
	// ImagePhaseSucceeded means the image is on the node.
	ImagePhaseSucceeded ImagePullPhase = "Succeeded"
	// ImagePhaseFailed means every attempt failed, or the pull timed out.
	ImagePhaseFailed ImagePullPhase = "Failed"
)

// ImageTagStatus is the status of the pull of one tag.
type ImageTagStatus struct {
	// Tag is the tag this status is for.
	Tag string `json:"tag"`

	// Phase is Waiting, Pulling, Succeeded or Failed.
	Phase ImagePullPhase `json:"phase"`

	// Progress is the pull progress in percent, 0 to 100. It may go back on a retry.
	// +optional
	Progress int32 `json:"progress,omitempty"`

	// StartTime is when the node agent started the pull.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the pull succeeded or finally failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Version is the spec version of the tag this status answers; the status is current
	// only when it equals the spec tag's version.
	// +optional
	Version int64 `json:"version,omitempty"`

	// ImageID is "<name>@<runtime image id>" after a successful pull.
	// +optional
	ImageID string `json:"imageID,omitempty"`

	// Message is the last error of a failed pull.
	// +optional
	Message string `json:"message,omitempty"`
}

// SyncStatusPhase is the outcome recorded in a SyncStatus.
type SyncStatusPhase string

const (
	// SyncStatusSucceeded means every pull succeeded.
	SyncStatusSucceeded SyncStatusPhase = "Succeeded"
	// SyncStatusFailed means some pull failed.
	SyncStatusFailed SyncStatusPhase = "Failed"
)

// SyncStatus records when and how a node first finished all its pulls.
type SyncStatus struct {
	// SyncAt is when the node finished.
	// +optional
	SyncAt metav1.Time `json:"syncAt,omitempty"`

	// Status is Succeeded or Failed.
	// +optional
	Status SyncStatusPhase `json:"status,omitempty"`

	// Message gives details.
	// +optional
	Message string `json:"message,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// NodeImageList is a list of NodeImages.
type NodeImageList struct {
	// TypeMeta carries the kind and apiVersion of the object.
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the NodeImages.
	Items []NodeImage `json:"items"`
}
