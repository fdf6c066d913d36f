package kruisepod

import (
	"slices"

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
