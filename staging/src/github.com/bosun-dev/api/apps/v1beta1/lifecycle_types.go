package v1beta1

// Lifecycle holds the pod lifecycle hooks of a workload. A hook holds a pod in a
// "preparing" lifecycle state (label lifecycle.apps.kruise.io/state) while the pod matches
// the hook's handlers, so that another party can finish its work before the workload goes
// on. Which hooks a workload honours is up to the workload; see its field documentation.
type Lifecycle struct {
	// PreDelete holds a pod in state PreparingDelete, instead of deleting it, while the
	// pod matches the hook.
	// +optional
	PreDelete *LifecycleHook `json:"preDelete,omitempty"`

	// InPlaceUpdate holds a pod around an in-place update while the pod matches the hook.
	// +optional
	InPlaceUpdate *LifecycleHook `json:"inPlaceUpdate,omitempty"`

	// PreNormal holds a newly created pod in state PreparingNormal until the pod matches
	// the hook.
	// +optional
	PreNormal *LifecycleHook `json:"preNormal,omitempty"`
}

// LifecycleHook says when a pod is "hooked": it is when the pod carries any of the label
// pairs in labelsHandler or any of the finalizers in finalizersHandler.
type LifecycleHook struct {
	// LabelsHandler is a set of label pairs; a pod carrying any of them is hooked.
	// +optional
	LabelsHandler map[string]string `json:"labelsHandler,omitempty"`

	// FinalizersHandler is a list of finalizers; a pod carrying any of them is hooked.
	// +optional
	FinalizersHandler []string `json:"finalizersHandler,omitempty"`

	// MarkPodNotReady, when true, marks the pod not ready (through the KruisePodReady
	// readiness gate) while it is held by the hook. Defaults to false.
	// +optional
	MarkPodNotReady bool `json:"markPodNotReady,omitempty"`
}

// LifecycleStateType is the value of the pod label lifecycle.apps.kruise.io/state.
type LifecycleStateType string

const (
	// LifecycleStatePreparingNormal means the pod was created but a preNormal hook still
	// holds it.
	LifecycleStatePreparingNormal LifecycleStateType = "PreparingNormal"
	// LifecycleStateNormal means the pod is in regular service.
	LifecycleStateNormal LifecycleStateType = "Normal"
	// LifecycleStatePreparingUpdate means the pod is about to be updated in place.
	LifecycleStatePreparingUpdate LifecycleStateType = "PreparingUpdate"
	// LifecycleStateUpdating means the pod is being updated in place.
	LifecycleStateUpdating LifecycleStateType = "Updating"
	// LifecycleStateUpdated means the in-place update finished but the pod is not yet back
	// in regular service.
	LifecycleStateUpdated LifecycleStateType = "Updated"
	// LifecycleStatePreparingDelete means the workload wants to delete the pod and a
	// preDelete hook holds it.
	LifecycleStatePreparingDelete LifecycleStateType = "PreparingDelete"
)
