package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=crr
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="PHASE",type="string",JSONPath=".status.phase",description="Phase of the request."
// +kubebuilder:printcolumn:name="POD",type="string",JSONPath=".spec.podName",description="Name of the target pod."
// +kubebuilder:printcolumn:name="NODE",type="string",JSONPath=".metadata.labels.crr\\.apps\\.kruise\\.io/node-name",description="Node of the target pod."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since the object was created."

// ContainerRecreateRequest (CRR) asks the node agent to stop some containers of a running
// pod so that the kubelet starts them again, optionally running their preStop hooks and
// making the pod not ready first. The pod itself is kept.
type ContainerRecreateRequest struct {
	// TypeMeta carries the kind and apiVersion of the object.
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata. Admission adds the labels crr.apps.kruise.io/pod-uid,
	// crr.apps.kruise.io/node-name and crr.apps.kruise.io/active.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what to recreate and how. It is immutable after creation.
	// +optional
	Spec ContainerRecreateRequestSpec `json:"spec,omitempty"`

	// Status is the progress of the request, written by the node agent and the manager.
	// +optional
	Status ContainerRecreateRequestStatus `json:"status,omitempty"`
}

// ContainerRecreateRequestSpec is the desired recreation of some containers of one pod.
type ContainerRecreateRequestSpec struct {
	// PodName is the name of the target pod, in the request's namespace. The pod must
	// exist, be active and be scheduled when the request is created. Required.
	// +required
	// +kubebuilder:validation:MinLength=1
	PodName string `json:"podName"`

	// Containers lists the containers to recreate, in order. Names must be unique and name
	// containers of the pod's spec.containers. At least one entry. Required.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +patchMergeKey=name
	// +patchStrategy=merge
	Containers []ContainerRecreateRequestContainer `json:"containers" patchStrategy:"merge" patchMergeKey:"name"`

	// Strategy tunes how the containers are recreated. Defaults to an empty strategy
	// whose fields are then defaulted.
	// +optional
	Strategy *ContainerRecreateRequestStrategy `json:"strategy,omitempty"`

	// ActiveDeadlineSeconds bounds the whole request, counted from creationTimestamp;
	// when it passes the request is completed with a message. Must be >= 3. Not defaulted
	// (no deadline).
	// +optional
	// +kubebuilder:validation:Minimum=3
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// TTLSecondsAfterFinished deletes the request this many seconds after its
	// completionTime. Not defaulted (kept forever).
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// ContainerRecreateRequestContainer names one container to recreate, together with the
// facts that admission copies from the pod when the request is created.
type ContainerRecreateRequestContainer struct {
	// Name is the container's name in the pod's spec.containers. Required.
	// +required
	Name string `json:"name"`

	// PreStop is copied by admission from the pod container's lifecycle.preStop; the node
	// agent runs it before stopping the container. Read-only: a user-supplied value is
	// rejected.
	// +optional
	PreStop *ProbeHandler `json:"preStop,omitempty"`

	// Ports is copied by admission from the pod container's ports when preStop is an
	// httpGet hook, so that named ports can be resolved. Read-only: a user-supplied value
	// is rejected.
	// +optional
	Ports []corev1.ContainerPort `json:"ports,omitempty"`

	// StatusContext is the container's status when the request was admitted, used to tell
	// the old container from its replacement. Read-only: a user-supplied value is rejected.
	// +optional
	StatusContext *ContainerRecreateRequestContainerContext `json:"statusContext,omitempty"`
}

// ProbeHandler is a hook action: exactly one of exec, httpGet and tcpSocket is set.
type ProbeHandler struct {
	// Exec runs a command inside the container.
	// +optional
	Exec *corev1.ExecAction `json:"exec,omitempty"`

	// HTTPGet sends an HTTP GET request.
	// +optional
	HTTPGet *corev1.HTTPGetAction `json:"httpGet,omitempty"`

	// TCPSocket opens a TCP connection. Accepted for compatibility; the node agent does
	// not run TCP hooks.
	// +optional
	TCPSocket *corev1.TCPSocketAction `json:"tcpSocket,omitempty"`
}

// ContainerRecreateRequestContainerContext is the status of a container when the request
// was admitted.
type ContainerRecreateRequestContainerContext struct {
	// ContainerID is the runtime ID of the container, as "<runtime>://<id>" (for example
	// containerd://0123...).
	ContainerID string `json:"containerID"`

	// RestartCount is the container's restart count as reported in the pod status.
	RestartCount int32 `json:"restartCount"`
}

// ContainerRecreateRequestFailurePolicyType says what happens to the remaining containers
// when recreating one of them fails.
type ContainerRecreateRequestFailurePolicyType string

const (
	// ContainerRecreateRequestFailurePolicyFail completes the request at the first failed
	// container. It is the default.
	ContainerRecreateRequestFailurePolicyFail ContainerRecreateRequestFailurePolicyType = "Fail"
	// ContainerRecreateRequestFailurePolicyIgnore goes on with the other containers.
	ContainerRecreateRequestFailurePolicyIgnore ContainerRecreateRequestFailurePolicyType = "Ignore"
)

// ContainerRecreateRequestStrategy tunes how the containers of a request are recreated.
type ContainerRecreateRequestStrategy struct {
	// FailurePolicy is Fail or Ignore; other values are rejected. Defaults to Fail.
	// +optional
	// +kubebuilder:validation:Enum=Fail;Ignore
	FailurePolicy ContainerRecreateRequestFailurePolicyType `json:"failurePolicy,omitempty"`

	// OrderedRecreate, when true, recreates a container only after the previous one has
	// succeeded. Defaults to false.
	// +optional
	OrderedRecreate bool `json:"orderedRecreate,omitempty"`

	// ForceRecreate, when true, stops the container even if it is already restarting or
	// starting. Defaults to false.
	// +optional
	ForceRecreate bool `json:"forceRecreate,omitempty"`

	// TerminationGracePeriodSeconds is the grace period for stopping each container (the
	// time spent in its preStop hook is subtracted; the runtime is given at least 2 s).
	// Defaults, at admission, to the pod's terminationGracePeriodSeconds. Must be >= 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`

	// UnreadyGracePeriodSeconds, when set, marks the pod not ready (through the
	// KruisePodReady readiness gate) this many seconds before the first container is
	// stopped. Not defaulted. Must be >= 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	UnreadyGracePeriodSeconds *int64 `json:"unreadyGracePeriodSeconds,omitempty"`

	// MinStartedSeconds is how long a recreated container must have been running and
	// ready before it counts as Succeeded. Defaults to 0.
	// +optional
	MinStartedSeconds int32 `json:"minStartedSeconds,omitempty"`
}

// ContainerRecreateRequestPhase is the phase of a request, or of one of its containers.
type ContainerRecreateRequestPhase string

const (
	// ContainerRecreateRequestPending means the request waits behind another request for
	// the same pod, or a container waits for its turn.
	ContainerRecreateRequestPending ContainerRecreateRequestPhase = "Pending"
	// ContainerRecreateRequestRecreating means the request is being worked on, or a
	// container has been stopped and not yet come back.
	ContainerRecreateRequestRecreating ContainerRecreateRequestPhase = "Recreating"
	// ContainerRecreateRequestSucceeded means a container was recreated (container phase
	// only).
	ContainerRecreateRequestSucceeded ContainerRecreateRequestPhase = "Succeeded"
	// ContainerRecreateRequestFailed means a container could not be recreated (container
	// phase only).
	ContainerRecreateRequestFailed ContainerRecreateRequestPhase = "Failed"
	// ContainerRecreateRequestCompleted means the request is finished (request phase
	// only). It does not mean success: inspect the container phases.
	ContainerRecreateRequestCompleted ContainerRecreateRequestPhase = "Completed"
)

// ContainerRecreateRequestStatus is the progress of a request.
type ContainerRecreateRequestStatus struct {
	// Phase of the request: empty (not yet picked up), Pending, Recreating or Completed.
	Phase ContainerRecreateRequestPhase `json:"phase"`

	// CompletionTime is when the request became Completed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Message explains an abnormal completion (for example "pod has gone"); it is empty
	// when every container finished.
	// +optional
	Message string `json:"message,omitempty"`

	// ContainerRecreateStates is the state of each container, in spec order.
	// +optional
	ContainerRecreateStates []ContainerRecreateRequestContainerRecreateState `json:"containerRecreateStates,omitempty"`
}

// ContainerRecreateRequestContainerRecreateState is the recreation state of one container.
type ContainerRecreateRequestContainerRecreateState struct {
	// Name of the container.
	Name string `json:"name"`

	// Phase of the container: Pending, Recreating, Succeeded or Failed.
	Phase ContainerRecreateRequestPhase `json:"phase"`

	// Message gives details, for example why the container failed.
	// +optional
	Message string `json:"message,omitempty"`

	// IsKilled is true once the node agent has stopped this container for the request.
	// +optional
	IsKilled bool `json:"isKilled,omitempty"`
}

// ContainerRecreateRequestSyncContainerStatus is one entry of the JSON list stored in the
// annotation crr.apps.kruise.io/sync-container-statuses: the pod-side status of a target
// container that started after the request was created. It is not part of the object
// schema.
type ContainerRecreateRequestSyncContainerStatus struct {
	// Name of the container.
	Name string `json:"name"`

	// Ready is the container's readiness from the pod status.
	Ready bool `json:"ready"`

	// RestartCount is the container's restart count from the pod status.
	RestartCount int32 `json:"restartCount"`

	// ContainerID is the container's runtime ID from the pod status.
	// +optional
	ContainerID string `json:"containerID,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// ContainerRecreateRequestList is a list of ContainerRecreateRequests.
type ContainerRecreateRequestList struct {
	// TypeMeta carries the kind and apiVersion of the object.
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the ContainerRecreateRequests.
	Items []ContainerRecreateRequest `json:"items"`
}
