package clonesetutil

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

func TestAvailability(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	pod := func(state appsv1beta1.LifecycleStateType, phase corev1.PodPhase, readySince time.Duration, inPlace *corev1.ConditionStatus) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}}, Status: corev1.PodStatus{Phase: phase}}
		if state != "" {
			p.Labels[appsv1beta1.LifecycleStateKey] = string(state)
		}
		if readySince >= 0 {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-readySince))})
		}
		if inPlace != nil {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: appsv1beta1.InPlaceUpdateReady, Status: *inPlace})
		}
		return p
	}
	falseStatus, trueStatus := corev1.ConditionFalse, corev1.ConditionTrue
	for _, tc := range []struct {
		name                 string
		pod                  *corev1.Pod
		updateReady, avail10 bool
		available0           bool
	}{
		{"normal, ready long", pod(appsv1beta1.LifecycleStateNormal, corev1.PodRunning, time.Hour, nil), true, true, true},
		{"no state", pod("", corev1.PodRunning, time.Hour, &trueStatus), true, true, true},
		{"ready briefly", pod("", corev1.PodRunning, time.Second, nil), true, false, true},
		{"pending", pod("", corev1.PodPending, time.Hour, nil), false, false, false},
		{"not ready", pod("", corev1.PodRunning, -1, nil), false, false, false},
		{"in-place update under way", pod("", corev1.PodRunning, time.Hour, &falseStatus), false, false, false},
		{"preparing normal", pod(appsv1beta1.LifecycleStatePreparingNormal, corev1.PodRunning, time.Hour, nil), true, false, false},
		{"preparing delete", pod(appsv1beta1.LifecycleStatePreparingDelete, corev1.PodRunning, time.Hour, nil), true, false, false},
	} {
		if got := IsUpdateReady(tc.pod, 0, now); got != tc.updateReady {
			t.Errorf("%s: IsUpdateReady = %v, want %v", tc.name, got, tc.updateReady)
		}
		if got := IsAvailable(tc.pod, 10, now); got != tc.avail10 {
			t.Errorf("%s: IsAvailable(10s) = %v, want %v", tc.name, got, tc.avail10)
		}
		if got := IsAvailable(tc.pod, 0, now); got != tc.available0 {
			t.Errorf("%s: IsAvailable(0) = %v, want %v", tc.name, got, tc.available0)
		}
	}
}

func TestNextLifecycleState(t *testing.T) {
	hook := &appsv1beta1.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}, FinalizersHandler: []string{"f"}}
	withLifecycle := func(l *appsv1beta1.Lifecycle) *appsv1beta1.CloneSet {
		cs := testCloneSet()
		cs.Spec.Lifecycle = l
		return cs
	}
	pod := func(state appsv1beta1.LifecycleStateType, node string, hooked bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{appsv1beta1.LifecycleStateKey: string(state)}}, Spec: corev1.PodSpec{NodeName: node}}
		if hooked {
			p.Labels["hold"] = "true"
			p.Finalizers = []string{"f"}
		}
		return p
	}
	none := withLifecycle(nil)
	preNormal := withLifecycle(&appsv1beta1.Lifecycle{PreNormal: hook})
	inPlace := withLifecycle(&appsv1beta1.Lifecycle{InPlaceUpdate: hook})
	otherHook := withLifecycle(&appsv1beta1.Lifecycle{PreDelete: hook})
	const (
		normal   = appsv1beta1.LifecycleStateNormal
		updated  = appsv1beta1.LifecycleStateUpdated
		pNormal  = appsv1beta1.LifecycleStatePreparingNormal
		pUpdate  = appsv1beta1.LifecycleStatePreparingUpdate
		updating = appsv1beta1.LifecycleStateUpdating
	)
	for _, tc := range []struct {
		name                string
		cs                  *appsv1beta1.CloneSet
		pod                 *corev1.Pod
		atUpdate, completed bool
		want                appsv1beta1.LifecycleStateType
	}{
		{"preparing normal, unscheduled", none, pod(pNormal, "", false), false, false, ""},
		{"preparing normal, scheduled", none, pod(pNormal, "n", false), false, false, normal},
		{"preNormal hook not carried", preNormal, pod(pNormal, "n", false), false, false, ""},
		{"preNormal hook carried", preNormal, pod(pNormal, "", true), false, false, normal},
		{"preparing update, old revision", inPlace, pod(pUpdate, "n", true), false, false, ""},
		{"preparing update, rolled back, hooked", inPlace, pod(pUpdate, "n", true), true, false, normal},
		{"preparing update, rolled back, released", inPlace, pod(pUpdate, "n", false), true, false, updated},
		{"preparing update, rolled back, no lifecycle", none, pod(pUpdate, "n", false), true, false, normal},
		{"preparing update, rolled back, lifecycle without the hook", otherHook, pod(pUpdate, "n", true), true, false, updated},
		{"updating, not done", inPlace, pod(updating, "n", false), true, false, ""},
		{"updating, done, released", inPlace, pod(updating, "n", false), true, true, updated},
		{"updating, done, no lifecycle", none, pod(updating, "n", false), true, true, normal},
		{"updated, hook back", inPlace, pod(updated, "n", true), true, false, normal},
		{"updated, hook still away", inPlace, pod(updated, "n", false), true, false, ""},
		{"updated, no inPlaceUpdate hook", otherHook, pod(updated, "n", false), true, false, normal},
		{"normal stays", inPlace, pod(normal, "n", false), true, true, ""},
	} {
		if got := NextLifecycleState(tc.cs, tc.pod, tc.atUpdate, tc.completed); got != tc.want {
			t.Errorf("%s: NextLifecycleState = %q, want %q", tc.name, got, tc.want)
		}
	}
	if !MarksPodNotReady(withLifecycle(&appsv1beta1.Lifecycle{InPlaceUpdate: &appsv1beta1.LifecycleHook{MarkPodNotReady: true}})) ||
		MarksPodNotReady(withLifecycle(&appsv1beta1.Lifecycle{PreNormal: &appsv1beta1.LifecycleHook{MarkPodNotReady: true}})) || MarksPodNotReady(none) {
		t.Error("MarksPodNotReady is wrong")
	}
}
