package kruisepod

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
)

func TestReadinessGates(t *testing.T) {
	spec := corev1.PodSpec{}
	AddReadinessGate(&spec, appsv1alpha1.KruisePodReadyConditionType)
	AddReadinessGate(&spec, appsv1alpha1.KruisePodReadyConditionType)
	if len(spec.ReadinessGates) != 1 {
		t.Errorf("gates after adding twice = %v, want one", spec.ReadinessGates)
	}
	pod := &corev1.Pod{Spec: spec}
	if !HasReadinessGate(pod, appsv1alpha1.KruisePodReadyConditionType) || HasReadinessGate(pod, "other") {
		t.Errorf("HasReadinessGate is wrong for gates %v", spec.ReadinessGates)
	}
}

func TestSetPodConditionKeepsTransitionTimeWhileStatusStays(t *testing.T) {
	before := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(before.Add(time.Hour))
	for _, tc := range []struct {
		name      string
		existing  []corev1.PodCondition
		set       corev1.PodCondition
		wantTime  metav1.Time
		wantCount int
	}{
		{"new condition", nil, corev1.PodCondition{Type: "X", Status: corev1.ConditionTrue, LastTransitionTime: now}, now, 1},
		{"same status", []corev1.PodCondition{{Type: "X", Status: corev1.ConditionTrue, LastTransitionTime: before}},
			corev1.PodCondition{Type: "X", Status: corev1.ConditionTrue, Message: "m", LastTransitionTime: now}, before, 1},
		{"status changes", []corev1.PodCondition{{Type: "X", Status: corev1.ConditionFalse, LastTransitionTime: before}},
			corev1.PodCondition{Type: "X", Status: corev1.ConditionTrue, LastTransitionTime: now}, now, 1},
		{"other types kept", []corev1.PodCondition{{Type: "Y", Status: corev1.ConditionTrue}},
			corev1.PodCondition{Type: "X", Status: corev1.ConditionTrue, LastTransitionTime: now}, now, 2},
	} {
		pod := &corev1.Pod{Status: corev1.PodStatus{Conditions: tc.existing}}
		SetPodCondition(pod, tc.set)
		got := PodCondition(pod, "X")
		if got == nil || got.Status != tc.set.Status || got.Message != tc.set.Message || !got.LastTransitionTime.Equal(&tc.wantTime) ||
			len(pod.Status.Conditions) != tc.wantCount {
			t.Errorf("%s: conditions = %+v, want X %s since %v among %d", tc.name, pod.Status.Conditions, tc.set.Status, tc.wantTime, tc.wantCount)
		}
	}
}

func TestRecomputeReady(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cond := func(t corev1.PodConditionType, s corev1.ConditionStatus) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: s}
	}
	gate := appsv1alpha1.KruisePodReadyConditionType
	for _, tc := range []struct {
		name       string
		gated      bool
		conditions []corev1.PodCondition
		want       corev1.ConditionStatus
	}{
		{"containers ready, no gate", false, []corev1.PodCondition{cond(corev1.ContainersReady, corev1.ConditionTrue)}, corev1.ConditionTrue},
		{"containers not ready", false, []corev1.PodCondition{cond(corev1.ContainersReady, corev1.ConditionFalse)}, corev1.ConditionFalse},
		{"no containers condition", false, nil, corev1.ConditionFalse},
		{"gate True", true, []corev1.PodCondition{cond(corev1.ContainersReady, corev1.ConditionTrue), cond(gate, corev1.ConditionTrue)}, corev1.ConditionTrue},
		{"gate False", true, []corev1.PodCondition{cond(corev1.ContainersReady, corev1.ConditionTrue), cond(gate, corev1.ConditionFalse)}, corev1.ConditionFalse},
		{"gate missing", true, []corev1.PodCondition{cond(corev1.ContainersReady, corev1.ConditionTrue)}, corev1.ConditionFalse},
	} {
		pod := &corev1.Pod{Status: corev1.PodStatus{Conditions: tc.conditions}}
		if tc.gated {
			AddReadinessGate(&pod.Spec, gate)
		}
		RecomputeReady(pod, now)
		if ready := PodCondition(pod, corev1.PodReady); ready == nil || ready.Status != tc.want {
			t.Errorf("%s: Ready = %+v, want %s", tc.name, ready, tc.want)
		}
	}
}

func TestInPlaceUpdateReady(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	gated := func(conds ...corev1.PodCondition) *corev1.Pod {
		pod := &corev1.Pod{Status: corev1.PodStatus{Conditions: conds}}
		AddReadinessGate(&pod.Spec, appsv1alpha1.InPlaceUpdateReady)
		return pod
	}
	if AwaitsInPlaceUpdateReady(&corev1.Pod{}) {
		t.Error("a pod without the readiness gate awaits InPlaceUpdateReady")
	}
	if AwaitsInPlaceUpdateReady(gated(corev1.PodCondition{Type: appsv1alpha1.InPlaceUpdateReady, Status: corev1.ConditionTrue})) {
		t.Error("a pod whose condition is True awaits it")
	}
	pod := gated(corev1.PodCondition{Type: appsv1alpha1.InPlaceUpdateReady, Status: corev1.ConditionFalse})
	if !AwaitsInPlaceUpdateReady(pod) || !AwaitsInPlaceUpdateReady(gated()) {
		t.Error("a gated pod whose condition is False or missing does not await it")
	}
	if !MarkInPlaceUpdateReady(pod, now) {
		t.Error("turning a False condition True reported no change")
	}
	if c := PodCondition(pod, appsv1alpha1.InPlaceUpdateReady); c.Status != corev1.ConditionTrue || !c.LastTransitionTime.Equal(&now) {
		t.Errorf("condition %+v, want True since %v", c, now)
	}
	if MarkInPlaceUpdateReady(pod, metav1.NewTime(now.Add(time.Hour))) || AwaitsInPlaceUpdateReady(pod) {
		t.Error("marking a True condition again reported a change, or the pod still awaits it")
	}
}
