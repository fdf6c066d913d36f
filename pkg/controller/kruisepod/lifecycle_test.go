package kruisepod

import (
	"testing"

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
