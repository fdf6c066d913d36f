package cloneset

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	clienttesting "k8s.io/client-go/testing"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
)

// withLaunchPriority makes cs update in place and gives it a second container, side, with
// launch priority 10 (c has none, so 0).
func withLaunchPriority(cs *appsv1beta1.CloneSet) {
	inPlace(cs)
	cs.Spec.Template.Spec.Containers = append(cs.Spec.Template.Spec.Containers, corev1.Container{
		Name: "side", Image: "side:v1", Env: []corev1.EnvVar{{Name: kruisepod.LaunchPriorityEnv, Value: "10"}},
	})
}

// reportContainer sets what the kubelet reports for container name of pod.
func reportContainer(pod *corev1.Pod, name, image string, ready bool) {
	for i := range pod.Status.ContainerStatuses {
		if s := &pod.Status.ContainerStatuses[i]; s.Name == name {
			s.Image, s.ImageID, s.Ready = image, "sha-"+image, ready
		}
	}
}

func onlyPodUpdate(t *testing.T, f *fixture) *corev1.Pod {
	t.Helper()
	updates := f.actions("update", "pods")
	if len(updates) != 1 {
		t.Fatalf("%d pod updates, want 1", len(updates))
	}
	return updates[0].(clienttesting.UpdateAction).GetObject().(*corev1.Pod)
}

// Containers with launch priorities are updated in place highest priority first; the next
// batch goes only once the last one runs its new images and is ready, and the pod counts as
// updated only after the last batch.
func TestInPlaceUpdateInLaunchPriorityBatches(t *testing.T) {
	old := newCS(1)
	withLaunchPriority(old)
	current := revisionOf(t, old, 1)
	cs := newCS(1)
	withLaunchPriority(cs)
	cs.Spec.Template.Spec.Containers[0].Image = "img:v2"
	cs.Spec.Template.Spec.Containers[1].Image = "side:v2"
	cs.Status.CurrentRevision = current.Name
	update := revisionOf(t, cs, 2)
	pod := newPod(old, "aaaaa", current)
	// As the pod webhook leaves it.
	pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, kruisepod.BarrierEnv(pod.Name, 0))
	pod.Spec.Containers[1].Env = append(pod.Spec.Containers[1].Env, kruisepod.BarrierEnv(pod.Name, 10))

	f := newFixture(t, fixtureOption{}, cs, current, update, pod)
	f.sync(cs)
	first := onlyPodUpdate(t, f)
	state, err := kruisepod.ReadInPlaceUpdateState(first)
	if err != nil || state == nil {
		t.Fatalf("state = %v, %v", state, err)
	}
	if first.Spec.Containers[0].Image != "img:v1" || first.Spec.Containers[1].Image != "side:v2" {
		t.Errorf("first batch runs %s and %s, want side updated alone", first.Spec.Containers[0].Image, first.Spec.Containers[1].Image)
	}
	if len(state.ContainerBatchesRecord) != 1 || !slices.Equal(state.ContainerBatchesRecord[0].Containers, []string{"side"}) ||
		state.NextContainerImages["c"] != "img:v2" || !slices.Equal(state.PreCheckBeforeNext.ContainersRequiredReady, []string{"side"}) {
		t.Errorf("state after the first batch = %+v", state)
	}
	first.Status = *f.podStatusUpdates()[0].Status.DeepCopy()

	// side has not restarted, then restarted but is not ready: the pod is left as it is.
	for _, ready := range []bool{false, true} {
		waiting := first.DeepCopy()
		if ready {
			reportContainer(waiting, "side", "side:v2", false)
		}
		f = newFixture(t, fixtureOption{}, cs, current, update, waiting)
		f.sync(cs)
		if len(f.actions("update", "pods")) != 0 || len(f.podStatusUpdates()) != 0 {
			t.Errorf("restarted %v: wrote %v, want nothing while side is not ready", ready, f.writes())
		}
	}

	// side runs its new image and is ready: c goes.
	reportContainer(first, "side", "side:v2", true)
	f = newFixture(t, fixtureOption{}, cs, current, update, first)
	f.sync(cs)
	second := onlyPodUpdate(t, f)
	state, _ = kruisepod.ReadInPlaceUpdateState(second)
	if second.Spec.Containers[0].Image != "img:v2" || state.NextBatchPending() || len(state.ContainerBatchesRecord) != 2 ||
		!slices.Equal(state.ContainerBatchesRecord[1].Containers, []string{"c"}) || state.LastContainerStatuses["c"].ImageID != "sha-img:v1" {
		t.Errorf("after the second batch: image %s, state %+v", second.Spec.Containers[0].Image, state)
	}
	if len(f.podStatusUpdates()) != 0 {
		t.Errorf("status written with the second batch: %v", f.podStatusUpdates())
	}

	// c runs its new image: the update is done.
	reportContainer(second, "c", "img:v2", true)
	f = newFixture(t, fixtureOption{}, cs, current, update, second)
	f.sync(cs)
	f.wantInPlaceUpdateDone(t)
}
