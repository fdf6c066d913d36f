package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="TOTAL",type="integer",JSONPath=".status.desired",description="Number of images in spec, one ImagePullJob each."
// +kubebuilder:printcolumn:name="SUCCEEDED",type="integer",JSONPath=".status.succeeded",description="Number of ImagePullJobs whose every node pulled the image."
// +kubebuilder:printcolumn:name="COMPLETED",type="integer",JSONPath=".status.completed",description="Number of ImagePullJobs that finished, successfully or not."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since the object was created."

// ImageListPullJob pulls a list of images on a set of nodes. It runs one child ImagePullJob
// per image, all from the same template, and sums up their progress.
type ImageListPullJob struct {
	// TypeMeta carries the kind and apiVersion of the object.
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the images to pull and the template of the child jobs.
	// +optional
	Spec ImageListPullJobSpec `json:"spec,omitempty"`

	// Status is the progress of the child jobs, written by the manager.
	// +optional
	Status ImageListPullJobStatus `json:"status,omitempty"`
}

// ImageListPullJobSpec is the desired pull: several images, on the nodes chosen by the
// inline template fields, which every child ImagePullJob gets unchanged.
// +kubebuilder:validation:XValidation:rule="!(has(self.selector) && has(self.podSelector))",message="selector and podSelector are mutually exclusive"
type ImageListPullJobSpec struct {
	// Images are the image references to pull, one child ImagePullJob each. Between 1 and
	// 255 entries, without duplicates, each a parseable reference (checked by the
	// admission webhook). Required.
	// +required
	Images []string `json:"images"`

	// ImagePullJobTemplate holds the remaining fields, inline. They apply to each child
	// job on its own: parallelism, for example, limits the nodes pulling one image, not
	// the images pulled at once.
	ImagePullJobTemplate `json:",inline"`
}

// ImageListPullJobStatus sums up the child ImagePullJobs that have started.
type ImageListPullJobStatus struct {
	// StartTime is when the controller first handled the job.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when every child job completed (completionPolicy type Always
	// only).
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Desired is the number of images, hence of child jobs.
	Desired int32 `json:"desired"`

	// Active is the number of child jobs with nodes still pulling.
	// +optional
	Active int32 `json:"active"`

	// Completed is the number of child jobs whose every node finished, successfully or
	// not.
	// +optional
	Completed int32 `json:"completed"`

	// Succeeded is the number of child jobs whose every node pulled the image.
	// +optional
	Succeeded int32 `json:"succeeded"`

	// FailedImageStatuses lists the images that failed on some node, in spec.images
	// order.
	// +optional
	FailedImageStatuses []FailedImageStatus `json:"failedImageStatuses,omitempty"`
}

// FailedImageStatus names an image of an ImageListPullJob that failed on some node, and
// the child job to look at for details.
type FailedImageStatus struct {
	// ImagePullJob is the name of the child job of the image.
	// +optional
	ImagePullJob string `json:"imagePullJob,omitempty"`

	// Name is the image reference, as in spec.images.
	// +optional
	Name string `json:"name,omitempty"`

	// Message says where to find the failed nodes.
	// +optional
	Message string `json:"message,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// ImageListPullJobList is a list of ImageListPullJobs.
type ImageListPullJobList struct {
	// TypeMeta carries the kind and apiVersion of the object.
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the ImageListPullJobs.
	Items []ImageListPullJob `json:"items"`
}
