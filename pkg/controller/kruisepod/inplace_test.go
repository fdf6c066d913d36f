package kruisepod

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
)

func templateData(t *testing.T, mutate func(*corev1.PodTemplateSpec)) []byte {
	t.Helper()
	template := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x", "old": "1"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "main", Image: "main:v1"}, {Name: "side", Image: "side:v1"},
		}},
	}
	mutate(template)
	data, err := RevisionData(template)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestPlanInPlaceUpdate(t *testing.T) {
	old := templateData(t, func(*corev1.PodTemplateSpec) {})
	tests := []struct {
		name   string
		mutate func(*corev1.PodTemplateSpec)
		images map[string]string
	}{
		{"image only", func(p *corev1.PodTemplateSpec) { p.Spec.Containers[1].Image = "side:v2" }, map[string]string{"side": "side:v2"}},
		{"image and labels", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].Image = "main:v2"
			p.Labels = map[string]string{"app": "x", "new": "2"}
			p.Annotations = map[string]string{"note": "x"}
		}, map[string]string{"main": "main:v2"}},
		{"env change", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].Image = "main:v2"
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
		}, nil},
		{"container added", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "third", Image: "x"})
		}, nil},
		{"container renamed", func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Name = "other" }, nil},
		{"unchanged", func(*corev1.PodTemplateSpec) {}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			update, err := PlanInPlaceUpdate(old, templateData(t, tc.mutate), true)
			if err != nil {
				t.Fatal(err)
			}
			if tc.images == nil {
				if update != nil {
					t.Fatalf("qualified for in-place update: %+v", update)
				}
				return
			}
			if update == nil {
				t.Fatal("did not qualify for in-place update")
			}
			if len(update.Images) != len(tc.images) {
				t.Errorf("images = %v, want %v", update.Images, tc.images)
			}
			for name, image := range tc.images {
				if update.Images[name] != image {
					t.Errorf("images = %v, want %v", update.Images, tc.images)
				}
			}
		})
	}
}

func TestApplyAndCompleteInPlaceUpdate(t *testing.T) {
	old := templateData(t, func(*corev1.PodTemplateSpec) {})
	update, err := PlanInPlaceUpdate(old, templateData(t, func(p *corev1.PodTemplateSpec) {
		p.Spec.Containers[0].Image = "main:v2"
		p.Labels = map[string]string{"app": "x", "new": "2"}
	}), true)
	if err != nil || update == nil {
		t.Fatalf("plan = %v, %v", update, err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x", "old": "1", appsv1alpha1.ControllerRevisionHashLabelKey: "h1"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "main:v1"}, {Name: "side", Image: "side:v1"}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "main", Image: "main:v1", ImageID: "sha-main-1"}, {Name: "side", Image: "side:v1", ImageID: "sha-side-1"},
		}},
	}
	now := metav1.NewTime(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	if !ApplyInPlaceUpdate(pod, update, "h2", now) {
		t.Fatal("ApplyInPlaceUpdate failed")
	}
	if pod.Spec.Containers[0].Image != "main:v2" || pod.Labels["new"] != "2" || pod.Labels["old"] != "" || pod.Labels[appsv1alpha1.ControllerRevisionHashLabelKey] != "h2" {
		t.Errorf("pod after update: %+v", pod.ObjectMeta.Labels)
	}
	const wantState = `{"revision":"h2","updateTimestamp":"2026-03-01T00:00:00Z","lastContainerStatuses":{"main":{"imageID":"sha-main-1"}},"updateImages":true,` +
		`"containerBatchesRecord":[{"timestamp":"2026-03-01T00:00:00Z","containers":["main"]}]}`
	if got := pod.Annotations[appsv1alpha1.InPlaceUpdateStateKey]; got != wantState {
		t.Errorf("state = %s, want %s", got, wantState)
	}
	state, err := ReadInPlaceUpdateState(pod)
	if err != nil || state == nil {
		t.Fatalf("ReadInPlaceUpdateState = %v, %v", state, err)
	}
	if InPlaceUpdateCompleted(pod, state) {
		t.Error("completed before the kubelet restarted the container")
	}
	pod.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "main", Image: "main:v2", ImageID: "sha-main-2"}
	if !InPlaceUpdateCompleted(pod, state) {
		t.Error("not completed after the image ID changed")
	}
	pod.Annotations[appsv1alpha1.InPlaceUpdateGraceKey] = "{}"
	if InPlaceUpdateCompleted(pod, state) {
		t.Error("completed while in grace")
	}
	delete(pod.Annotations, appsv1alpha1.InPlaceUpdateGraceKey)
	// Same image ID, but the runtime reports the spec image (untagged = latest).
	pod.Spec.Containers[0].Image = "main"
	pod.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "main", Image: "main:latest", ImageID: "sha-main-1"}
	if !InPlaceUpdateCompleted(pod, state) {
		t.Error("not completed although the reported image is the spec image")
	}
	// The legacy annotation key is read too.
	legacy := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{appsv1alpha1.InPlaceUpdateStateKeyOld: wantState}}}
	if state, err := ReadInPlaceUpdateState(legacy); err != nil || state == nil || state.Revision != "h2" {
		t.Errorf("legacy state = %+v, %v", state, err)
	}
}
