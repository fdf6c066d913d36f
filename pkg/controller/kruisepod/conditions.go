package kruisepod

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

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

// MarkInPlaceUpdateStarted turns pod's InPlaceUpdateReady condition False, and its Ready
// condition with it, before its containers change: the pod leaves service first, so that
// nothing sends it traffic while a container restarts.
func MarkInPlaceUpdateStarted(pod *corev1.Pod, now metav1.Time) {
	SetPodCondition(pod, corev1.PodCondition{
		Type: appsv1beta1.InPlaceUpdateReady, Status: corev1.ConditionFalse,
		Reason: appsv1beta1.InPlaceUpdateStartedReason, LastTransitionTime: now,
	})
	RecomputeReady(pod, now)
}

// InPlaceUpdateStarted reports whether pod's InPlaceUpdateReady condition is False because
// its workload started an in-place update (MarkInPlaceUpdateStarted).
func InPlaceUpdateStarted(pod *corev1.Pod) bool {
	cond := PodCondition(pod, appsv1beta1.InPlaceUpdateReady)
	return cond != nil && cond.Status == corev1.ConditionFalse && cond.Reason == appsv1beta1.InPlaceUpdateStartedReason
}

// AwaitsInPlaceUpdateReady reports whether pod has the InPlaceUpdateReady readiness gate
// and the condition is not True yet: whether its workload still has to turn it True.
func AwaitsInPlaceUpdateReady(pod *corev1.Pod) bool {
	if !HasReadinessGate(pod, appsv1beta1.InPlaceUpdateReady) {
		return false
	}
	cond := PodCondition(pod, appsv1beta1.InPlaceUpdateReady)
	return cond == nil || cond.Status != corev1.ConditionTrue
}

// MarkInPlaceUpdateReady turns pod's InPlaceUpdateReady condition True, and reports whether
// it was not True before.
func MarkInPlaceUpdateReady(pod *corev1.Pod, now metav1.Time) bool {
	if cond := PodCondition(pod, appsv1beta1.InPlaceUpdateReady); cond != nil && cond.Status == corev1.ConditionTrue {
		return false
	}
	SetPodCondition(pod, corev1.PodCondition{Type: appsv1beta1.InPlaceUpdateReady, Status: corev1.ConditionTrue, LastTransitionTime: now})
	return true
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
