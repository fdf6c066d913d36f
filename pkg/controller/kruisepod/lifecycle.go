package kruisepod

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

// IsPreparingDelete reports whether a preDelete hook holds pod.
func IsPreparingDelete(pod *corev1.Pod) bool {
	return pod.Labels[appsv1beta1.LifecycleStateKey] == string(appsv1beta1.LifecycleStatePreparingDelete)
}

// IsHooked reports whether hook holds pod: the pod carries one of its label pairs or one of
// its finalizers.
func IsHooked(hook *appsv1beta1.LifecycleHook, pod *corev1.Pod) bool {
	if hook == nil {
		return false
	}
	for key, value := range hook.LabelsHandler {
		if got, ok := pod.Labels[key]; ok && got == value {
			return true
		}
	}
	for _, finalizer := range hook.FinalizersHandler {
		if slices.Contains(pod.Finalizers, finalizer) {
			return true
		}
	}
	return false
}

// IsAllHooked reports whether pod carries every label pair and every finalizer of hook;
// false for a nil hook.
func IsAllHooked(hook *appsv1beta1.LifecycleHook, pod *corev1.Pod) bool {
	if hook == nil {
		return false
	}
	for key, value := range hook.LabelsHandler {
		if got, ok := pod.Labels[key]; !ok || got != value {
			return false
		}
	}
	for _, finalizer := range hook.FinalizersHandler {
		if !slices.Contains(pod.Finalizers, finalizer) {
			return false
		}
	}
	return true
}

// SetLifecycleState moves pod, a copy the caller is about to write, to lifecycle state state
// at now: the state label and the timestamp annotation, as LifecycleStatePatch writes them.
// A writer that updates the pod's status anyway uses it to carry the state in the same
// write, since the status subresource of pods keeps label and annotation changes.
func SetLifecycleState(pod *corev1.Pod, state appsv1beta1.LifecycleStateType, now time.Time) {
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Labels[appsv1beta1.LifecycleStateKey] = string(state)
	pod.Annotations[appsv1beta1.LifecycleTimestampKey] = LifecycleTimestamp(now)
}

// LifecycleTimestamp formats the lifecycle timestamp annotation: RFC 3339, UTC.
func LifecycleTimestamp(now time.Time) string {
	return now.UTC().Format(time.RFC3339)
}

// LifecycleStatePatch returns the strategic merge patch that moves a pod to lifecycle state
// state at now: the state label and the timestamp annotation (RFC 3339, UTC). With hook it
// also puts the hook's label pairs and finalizers (back) on the pod, as a pod chosen again
// for an in-place update gets them.
func LifecycleStatePatch(state appsv1beta1.LifecycleStateType, now time.Time, hook *appsv1beta1.LifecycleHook) []byte {
	labels := map[string]string{appsv1beta1.LifecycleStateKey: string(state)}
	metadata := map[string]any{
		"labels":      labels,
		"annotations": map[string]string{appsv1beta1.LifecycleTimestampKey: LifecycleTimestamp(now)},
	}
	if hook != nil {
		maps.Copy(labels, hook.LabelsHandler)
		labels[appsv1beta1.LifecycleStateKey] = string(state)
		if len(hook.FinalizersHandler) > 0 {
			// Finalizers merge into the pod's list; the others stay.
			metadata["finalizers"] = hook.FinalizersHandler
		}
	}
	body, _ := json.Marshal(map[string]any{"metadata": metadata})
	return body
}
