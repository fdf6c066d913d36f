package kruisepod

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

func TestDeferAndFinishInPlaceUpdate(t *testing.T) {
	update := &InPlaceUpdate{
		Images:       map[string]string{"main": "main:v2"},
		SetLabels:    map[string]string{"new": "2"},
		RemoveLabels: []string{"old"},
	}
	spec, err := update.GraceSpec("rev-2", 10)
	if err != nil {
		t.Fatal(err)
	}
	if string(spec.MetaDataPatch) != `{"metadata":{"labels":{"new":"2","old":null}}}` {
		t.Errorf("metadata patch = %s", spec.MetaDataPatch)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "x", "old": "1", appsv1beta1.ControllerRevisionHashLabelKey: "rev-1"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "main:v1"}, {Name: "side", Image: "side:v1"}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "main", Image: "main:v1", ImageID: "sha-main-1"}, {Name: "side", Image: "side:v1", ImageID: "sha-side-1"},
		}},
	}
	now := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	if err := DeferInPlaceUpdate(pod, spec, now); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.Containers[0].Image != "main:v1" || pod.Labels["old"] != "1" || pod.Labels[appsv1beta1.ControllerRevisionHashLabelKey] != "rev-2" {
		t.Errorf("deferring changed the pod's containers or metadata: %v %v", pod.Spec.Containers[0].Image, pod.Labels)
	}
	const wantState = `{"revision":"rev-2","updateTimestamp":"2026-03-01T12:00:00Z","lastContainerStatuses":null,"updateImages":true}`
	if got := pod.Annotations[appsv1beta1.InPlaceUpdateStateKey]; got != wantState {
		t.Errorf("state = %s, want %s", got, wantState)
	}
	read, err := ReadInPlaceUpdateGrace(pod)
	if err != nil || read == nil || read.Revision != "rev-2" || read.GraceSeconds != 10 || read.ContainerImages["main"] != "main:v2" {
		t.Fatalf("ReadInPlaceUpdateGrace = %+v, %v", read, err)
	}
	state, _ := ReadInPlaceUpdateState(pod)
	if InPlaceUpdateCompleted(pod, state) {
		t.Error("completed during the grace period")
	}
	if left := GraceRemaining(read, state, now.Add(4*time.Second)); left != 6*time.Second {
		t.Errorf("remaining = %v, want 6s", left)
	}

	finished, err := FinishInPlaceUpdate(pod, read, state, metav1.NewTime(now.Add(10*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	if finished.Spec.Containers[0].Image != "main:v2" || finished.Spec.Containers[1].Image != "side:v1" ||
		finished.Labels["new"] != "2" || finished.Labels["app"] != "x" {
		t.Errorf("finished pod: images %s %s labels %v", finished.Spec.Containers[0].Image, finished.Spec.Containers[1].Image, finished.Labels)
	}
	if _, old := finished.Labels["old"]; old {
		t.Error("the removed label is still there")
	}
	if _, grace := finished.Annotations[appsv1beta1.InPlaceUpdateGraceKey]; grace {
		t.Error("the grace annotation is still there")
	}
	var after InPlaceUpdateState
	if err := json.Unmarshal([]byte(finished.Annotations[appsv1beta1.InPlaceUpdateStateKey]), &after); err != nil {
		t.Fatal(err)
	}
	if after.LastContainerStatuses["main"].ImageID != "sha-main-1" || len(after.LastContainerStatuses) != 1 || !after.UpdateTimestamp.Equal(&now) {
		t.Errorf("state after = %+v", after)
	}
	if pod.Spec.Containers[0].Image != "main:v1" {
		t.Error("FinishInPlaceUpdate changed its argument")
	}
	if !InPlaceUpdateCompleted(withStatus(finished, "main", "main:v2", "sha-main-2"), &after) {
		t.Error("not completed once the container runs the new image")
	}
}

func withStatus(pod *corev1.Pod, name, image, imageID string) *corev1.Pod {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			pod.Status.ContainerStatuses[i].Image, pod.Status.ContainerStatuses[i].ImageID = image, imageID
		}
	}
	return pod
}

func TestGraceWrittenByOpenKruiseIsCarriedOut(t *testing.T) {
	// The annotation OpenKruise writes: its metaDataPatch is a base64-encoded two-way
	// merge patch of the pod's metadata.
	const grace = `{"revision":"web-2","containerImages":{"main":"main:v2"},"metaDataPatch":"eyJtZXRhZGF0YSI6eyJsYWJlbHMiOnsidmVyc2lvbiI6InYyIn19fQ==","graceSeconds":30}`
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{appsv1beta1.InPlaceUpdateGraceKeyOld: grace}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "main:v1"}}},
	}
	spec, err := ReadInPlaceUpdateGrace(pod)
	if err != nil || spec == nil || string(spec.MetaDataPatch) != `{"metadata":{"labels":{"version":"v2"}}}` {
		t.Fatalf("spec = %+v, %v", spec, err)
	}
	finished, err := FinishInPlaceUpdate(pod, spec, &InPlaceUpdateState{Revision: "web-2"}, metav1.Now())
	if err != nil {
		t.Fatal(err)
	}
	if finished.Labels["version"] != "v2" || finished.Spec.Containers[0].Image != "main:v2" {
		t.Errorf("finished pod: labels %v image %s", finished.Labels, finished.Spec.Containers[0].Image)
	}
	if _, grace := finished.Annotations[appsv1beta1.InPlaceUpdateGraceKeyOld]; grace {
		t.Error("the legacy grace annotation is still there")
	}
}
