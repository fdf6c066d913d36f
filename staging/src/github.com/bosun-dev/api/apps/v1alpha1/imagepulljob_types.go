package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="TOTAL",type="integer",JSONPath=".status.desired",description="Number of nodes the job targets."
// +kubebuilder:printcolumn:name="ACTIVE",type="integer",JSONPath=".status.active",description="Number of nodes pulling the image."
// +kubebuilder:printcolumn:name="SUCCEED",type="integer",JSONPath=".status.succeeded",description="Number of nodes that pulled the image."
// +kubebuilder:printcolumn:name="FAILED",type="integer",JSONPath=".status.failed",description="Number of nodes that failed to pull the image."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since the object was created."
// +kubebuilder:printcolumn:name="MESSAGE",type="string",JSONPath=".status.message",description="Summary of the job's progress."

// ImagePullJob pulls one image on a set of nodes, a few nodes at a time, by adding a tag
// to their NodeImages and following the pulls.
type ImagePullJob struct {
	// TypeMeta carries the kind and apiVersion of the object.
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata. Admission adds the finalizer
	// apps.kruise.io/deletion-protection on creation.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the image to pull and where.
	// +optional
	Spec ImagePullJobSpec `json:"spec,omitempty"`

	// Status is the progress of the job, written by the manager.
	// +optional
	Status ImagePullJobStatus `json:"status,omitempty"`
}

// ImagePullJobSpec is the desired pull: one image, on the nodes chosen by the inline
// template fields.
// +kubebuilder:validation:XValidation:rule="!(has(self.selector) && has(self.podSelector))",message="selector and podSelector are mutually exclusive"
type ImagePullJobSpec struct {
	// Image is the image reference to pull. It must parse as a reference; it is split into
	// a familiar name and a tag (default "latest"; a digest is kept as the tag). Required.
	// +required
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image"`

	// ImagePullJobTemplate holds the remaining fields, inline.
	ImagePullJobTemplate `json:",inline"`
}

// ImagePullJobTemplate is the part of an ImagePullJob spec that does not name the image:
// where, how fast and how to pull it.
type ImagePullJobTemplate struct {
	// PullSecrets names secrets in the job's namespace whose registry credentials are
	// tried when pulling. Immutable after creation.
	// +optional
	PullSecrets []string `json:"pullSecrets,omitempty"`

	// Selector chooses the target NodeImages (one per node) by name or by labels (the
	// node's labels). Unset targets every NodeImage. Mutually exclusive with podSelector.
	// +optional
	Selector *ImagePullJobNodeSelector `json:"selector,omitempty"`

	// PodSelector targets the nodes of active, scheduled pods in the job's namespace that
	// match it. Mutually exclusive with selector.
	// +optional
	PodSelector *ImagePullJobPodSelector `json:"podSelector,omitempty"`

	// Parallelism is the most nodes pulling at the same time. Must be an integer (or a
	// string holding one) >= 0; 0 pauses the job. Unset means 1 (applied by the
	// controller, not written to the object).
	// +optional
	Parallelism *intstr.IntOrString `json:"parallelism,omitempty"`

	// PullPolicy tunes each node's pull. Defaults to an empty policy whose fields are then
	// defaulted.
	// +optional
	PullPolicy *PullPolicy `json:"pullPolicy,omitempty"`

	// CompletionPolicy says when the job is finished. Its type defaults to Always.
	// +optional
	CompletionPolicy CompletionPolicy `json:"completionPolicy"`

	// SandboxConfig is copied to the image entry of every target NodeImage and passed to
	// the runtime's PullImage call.
	// +optional
	SandboxConfig *SandboxConfig `json:"sandboxConfig,omitempty"`

	// ImagePullPolicy is Always or IfNotPresent and is copied to the NodeImage tag; only
	// IfNotPresent skips nodes that already have the image. Defaults to IfNotPresent.
	// +optional
	ImagePullPolicy ImagePullPolicy `json:"imagePullPolicy,omitempty"`
}

// ImagePullJobNodeSelector chooses NodeImages either by name or by labels, not both.
// +kubebuilder:validation:XValidation:rule="!(has(self.names) && (has(self.matchLabels) || has(self.matchExpressions)))",message="names and a label selector are mutually exclusive"
type ImagePullJobNodeSelector struct {
	// Names are NodeImage (node) names, without duplicates. Names that do not exist are
	// skipped.
	// +optional
	Names []string `json:"names,omitempty"`

	// LabelSelector, inline, selects NodeImages by their labels, which mirror the node's.
	// +optional
	metav1.LabelSelector `json:",inline"`
}

// ImagePullJobPodSelector selects pods whose nodes should pull the image.
type ImagePullJobPodSelector struct {
	// LabelSelector, inline, selects pods in the job's namespace.
	// +optional
	metav1.LabelSelector `json:",inline"`
}

// PullPolicy tunes the pull of the image on each node.
type PullPolicy struct {
	// TimeoutSeconds bounds each pull attempt. Defaults to 600.
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`

	// BackoffLimit is the number of retries after the first attempt. Defaults to 3.
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`
}

// CompletionPolicyType says whether a job ever completes.
type CompletionPolicyType string

const (
	// Always completes the job once every target node has finished (or the deadline
	// passed). It is the default.
	Always CompletionPolicyType = "Always"
	// Never keeps the job running so that new matching nodes pull the image too.
	Never CompletionPolicyType = "Never"
)

// CompletionPolicy says when a job is finished and what happens afterwards.
type CompletionPolicy struct {
	// Type is Always or Never; other values are rejected. Defaults to Always.
	// +optional
	// +kubebuilder:validation:Enum=Always;Never
	Type CompletionPolicyType `json:"type,omitempty"`

	// ActiveDeadlineSeconds completes the job this long after status.startTime, counting
	// every unfinished node as failed. Only with type Always; must be >= the pull
	// timeoutSeconds (600 when unset). Not defaulted (no deadline).
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// TTLSecondsAfterFinished deletes the job this long after its completionTime. Only
	// with type Always. Not defaulted (kept forever).
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// ImagePullPolicy says whether to pull an image the node already has.
type ImagePullPolicy string

const (
	// PullAlways pulls the image even if the node has it.
	PullAlways ImagePullPolicy = "Always"
	// PullIfNotPresent pulls only when the node lacks the image.
	PullIfNotPresent ImagePullPolicy = "IfNotPresent"
)

// SandboxConfig is metadata passed as the pod-sandbox config of the container runtime's
// PullImage call, for runtimes or plugins that act on it.
type SandboxConfig struct {
	// Labels of the sandbox config.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations of the sandbox config.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ImagePullJobStatus is the progress of an ImagePullJob.
type ImagePullJobStatus struct {
	// StartTime is when the controller first handled the job.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the job completed (type Always only).
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Desired is the number of target nodes.
	Desired int32 `json:"desired"`

	// Active is the number of nodes pulling.
	// +optional
	Active int32 `json:"active"`

	// Succeeded is the number of nodes that pulled the image.
	// +optional
	Succeeded int32 `json:"succeeded"`

	// Failed is the number of nodes that failed to pull the image.
	// +optional
	Failed int32 `json:"failed"`

	// Message summarises the progress, for example "job is running, progress 50.0%" or
	// "job has completed".
	// +optional
	Message string `json:"message,omitempty"`

	// FailedNodes are the names of the nodes that failed, sorted.
	// +optional
	FailedNodes []string `json:"failedNodes,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// ImagePullJobList is a list of ImagePullJobs.
type ImagePullJobList struct {
	// TypeMeta carries the kind and apiVersion of the object.
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the ImagePullJobs.
	Items []ImagePullJob `json:"items"`
}
