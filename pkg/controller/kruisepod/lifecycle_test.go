package kruisepod

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

func TestLifecycleHooks(t *testing.T) {
	hook := &appsv1beta1.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}, FinalizersHandler: []string{"example.com/drain"}}
	for _, tc := range []struct {
		name      string
		hook      *appsv1beta1.LifecycleHook
		meta      metav1.ObjectMeta
		hooked    bool
		preparing bool
	}{
		{"no hook", nil, metav1.ObjectMeta{Labels: map[string]string{"hold": "true"}}, false, false},
		{"label pair", hook, metav1.ObjectMeta{Labels: map[string]string{"hold": "true"}}, true, false},
		{"label with another value", hook, metav1.ObjectMeta{Labels: map[string]string{"hold": "false"}}, false, false},
		{"finalizer", hook, metav1.ObjectMeta{Finalizers: []string{"other", "example.com/drain"}}, true, false},
		{"preparing delete", hook, metav1.ObjectMeta{Labels: map[string]string{
			appsv1beta1.LifecycleStateKey: string(appsv1beta1.LifecycleStatePreparingDelete)}}, false, true},
		{"another state", hook, metav1.ObjectMeta{Labels: map[string]string{
			appsv1beta1.LifecycleStateKey: string(appsv1beta1.LifecycleStateNormal)}}, false, false},
	} {
		pod := &corev1.Pod{ObjectMeta: tc.meta}
		if got := IsHooked(tc.hook, pod); got != tc.hooked {
			t.Errorf("%s: IsHooked = %v, want %v", tc.name, got, tc.hooked)
		}
		if got := IsPreparingDelete(pod); got != tc.preparing {
			t.Errorf("%s: IsPreparingDelete = %v, want %v", tc.name, got, tc.preparing)
		}
	}
}

func TestIsAllHooked(t *testing.T) {
	hook := &appsv1beta1.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}, FinalizersHandler: []string{"example.com/drain"}}
	for _, tc := range []struct {
		name string
		hook *appsv1beta1.LifecycleHook
		meta metav1.ObjectMeta
		want bool
	}{
		{"no hook", nil, metav1.ObjectMeta{}, false},
		{"everything", hook, metav1.ObjectMeta{Labels: map[string]string{"hold": "true"}, Finalizers: []string{"example.com/drain"}}, true},
		{"label only", hook, metav1.ObjectMeta{Labels: map[string]string{"hold": "true"}}, false},
		{"finalizer only", hook, metav1.ObjectMeta{Finalizers: []string{"example.com/drain"}}, false},
		{"label with another value", hook, metav1.ObjectMeta{Labels: map[string]string{"hold": "no"}, Finalizers: []string{"example.com/drain"}}, false},
		{"empty hook", &appsv1beta1.LifecycleHook{}, metav1.ObjectMeta{}, true},
	} {
		if got := IsAllHooked(tc.hook, &corev1.Pod{ObjectMeta: tc.meta}); got != tc.want {
			t.Errorf("%s: IsAllHooked = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestLifecycleStatePatch(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("x", 3600))
	got := string(LifecycleStatePatch(appsv1beta1.LifecycleStatePreparingDelete, now, nil))
	want := `{"metadata":{"annotations":{"lifecycle.apps.kruise.io/timestamp":"2026-03-01T11:00:00Z"},"labels":{"lifecycle.apps.kruise.io/state":"PreparingDelete"}}}`
	if got != want {
		t.Errorf("patch = %s\nwant %s", got, want)
	}
	hook := &appsv1beta1.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}, FinalizersHandler: []string{"example.com/drain"}}
	got = string(LifecycleStatePatch(appsv1beta1.LifecycleStatePreparingUpdate, now, hook))
	want = `{"metadata":{"annotations":{"lifecycle.apps.kruise.io/timestamp":"2026-03-01T11:00:00Z"},"finalizers":["example.com/drain"],"labels":{"hold":"true","lifecycle.apps.kruise.io/state":"PreparingUpdate"}}}`
	if got != want {
		t.Errorf("patch with hook = %s\nwant %s", got, want)
	}
}
