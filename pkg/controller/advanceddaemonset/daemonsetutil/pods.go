package daemonsetutil

import (
	"cmp"
	"encoding/json"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
)

// SortOldestFirst orders pods so that the one a node keeps comes first: bound pods before
// pending ones, then by creation time, then by name.
func SortOldestFirst(pods []*corev1.Pod) {
	slices.SortStableFunc(pods, func(a, b *corev1.Pod) int {
		if boundA, boundB := a.Spec.NodeName != "", b.Spec.NodeName != ""; boundA != boundB {
			if boundA {
				return -1
			}
			return 1
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			if a.CreationTimestamp.Before(&b.CreationTimestamp) {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

// IsUpdated reports whether pod runs the DaemonSet's current revision: it carries the
// current hash, or the DaemonSet's deprecated template generation (generation empty when
// the DaemonSet has none).
func IsUpdated(pod *corev1.Pod, hash, generation string) bool {
	if value, ok := pod.Labels[appsv1alpha1.ControllerRevisionHashLabelKey]; ok && value == hash {
		return true
	}
	if generation == "" {
		return false
	}
	value, ok := pod.Labels[appsv1alpha1.DaemonSetTemplateGenerationLabelKey]
	return ok && value == generation
}

// IsPreparingDelete reports whether a preDelete hook holds pod.
func IsPreparingDelete(pod *corev1.Pod) bool {
	return pod.Labels[appsv1alpha1.LifecycleStateKey] == string(appsv1alpha1.LifecycleStatePreparingDelete)
}

// IsHooked reports whether hook holds pod: the pod carries one of its label pairs or one of
// its finalizers.
func IsHooked(hook *appsv1alpha1.LifecycleHook, pod *corev1.Pod) bool {
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

// HasReadinessGate reports whether pod's readiness depends on condition t.
func HasReadinessGate(pod *corev1.Pod, t corev1.PodConditionType) bool {
	return slices.ContainsFunc(pod.Spec.ReadinessGates, func(g corev1.PodReadinessGate) bool { return g.ConditionType == t })
}

// AddReadinessGate adds the gate t to spec unless it is there.
func AddReadinessGate(spec *corev1.PodSpec, t corev1.PodConditionType) {
	if !slices.ContainsFunc(spec.ReadinessGates, func(g corev1.PodReadinessGate) bool { return g.ConditionType == t }) {
		spec.ReadinessGates = append(spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: t})
	}
}

// PodCondition returns a pointer into pod's conditions to the one of type t, or nil.
func PodCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// SetPodCondition records cond in pod's status. The transition time moves only when the
// status changes, as the kubelet does it.
func SetPodCondition(pod *corev1.Pod, cond corev1.PodCondition) {
	current := PodCondition(pod, cond.Type)
	if current == nil {
		pod.Status.Conditions = append(pod.Status.Conditions, cond)
		return
	}
	if current.Status == cond.Status {
		cond.LastTransitionTime = current.LastTransitionTime
	}
	*current = cond
}

// RecomputeReady sets pod's Ready condition from its containers and readiness gates, the
// way the kubelet would, so that a gate turned False takes the pod out of service at once
// rather than at the kubelet's next status sync.
func RecomputeReady(pod *corev1.Pod, now metav1.Time) {
	ready := corev1.ConditionTrue
	if c := PodCondition(pod, corev1.ContainersReady); c == nil || c.Status != corev1.ConditionTrue {
		ready = corev1.ConditionFalse
	}
	for _, gate := range pod.Spec.ReadinessGates {
		if c := PodCondition(pod, gate.ConditionType); c == nil || c.Status != corev1.ConditionTrue {
			ready = corev1.ConditionFalse
		}
	}
	SetPodCondition(pod, corev1.PodCondition{Type: corev1.PodReady, Status: ready, LastTransitionTime: now})
}

// NotReadyMark is one entry of the JSON list in the KruisePodReady condition's message:
// a party that wants the pod out of service.
type NotReadyMark struct {
	UserAgent string `json:"userAgent"`
	Key       string `json:"key"`
}

// PreDeleteMark is the mark a preDelete hook with markPodNotReady sets.
var PreDeleteMark = NotReadyMark{UserAgent: appsv1alpha1.KruisePodReadyUserAgentLifecycle, Key: appsv1alpha1.KruisePodReadyKeyPreDeleteHook}

// AddNotReadyMark returns the KruisePodReady message with mark added, and whether it was
// missing. A message that is not a mark list is replaced.
func AddNotReadyMark(message string, mark NotReadyMark) (string, bool) {
	var marks []NotReadyMark
	if message != "" {
		_ = json.Unmarshal([]byte(message), &marks)
	}
	if slices.Contains(marks, mark) {
		return message, false
	}
	marks = append(marks, mark)
	encoded, _ := json.Marshal(marks)
	return string(encoded), true
}
