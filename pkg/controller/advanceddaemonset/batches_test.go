package advanceddaemonset

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	clienttesting "k8s.io/client-go/testing"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
)

// A pod whose in-place update by launch priority has its first batch done gets the next
// one once the first batch's container runs its new image and is ready, and not before.
func TestInPlaceNextBatch(t *testing.T) {
	ds := newDS()
	ds.Spec.UpdateStrategy.RollingUpdate.Type = appsv1beta1.InplaceRollingUpdateType
	pod := newPod("p1", ds, hashOf(ds), "n1")
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: appsv1beta1.InPlaceUpdateReady}}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "side", Image: "side:v2", Env: []corev1.EnvVar{kruisepod.BarrierEnv("p1", 10)}})
	pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, kruisepod.BarrierEnv("p1", 0))
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: appsv1beta1.InPlaceUpdateReady, Status: corev1.ConditionFalse, Reason: "StartInPlaceUpdate"})
	pod.Annotations = map[string]string{appsv1beta1.InPlaceUpdateStateKey: `{"revision":"` + hashOf(ds) + `","updateTimestamp":"2026-03-01T00:00:00Z",` +
		`"lastContainerStatuses":{"side":{"imageID":"sha-side-1"}},"updateImages":true,"nextContainerImages":{"c":"img:v2"},` +
		`"preCheckBeforeNext":{"containersRequiredReady":["side"]},"containerBatchesRecord":[{"timestamp":"2026-03-01T00:00:00Z","containers":["side"]}]}`}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{
		{Name: "c", Image: pod.Spec.Containers[0].Image, ImageID: "sha-c-1", Ready: true},
		{Name: "side", Image: "side:v2", ImageID: "sha-side-2", Ready: false},
	}
	f := newFixture(t, fixtureOption{}, ds, revisionOf(t, ds, 1), newNode("n1"), pod)
	f.sync(ds)
	if updates := f.actions("update", "pods"); len(updates) != 0 {
		t.Fatalf("%d pod updates while side is not ready, want none", len(updates))
	}

	ready := pod.DeepCopy()
	ready.Status.ContainerStatuses[1].Ready = true
	f = newFixture(t, fixtureOption{}, ds, revisionOf(t, ds, 1), newNode("n1"), ready)
	f.sync(ds)
	updates := f.actions("update", "pods")
	if len(updates) != 1 || updates[0].GetSubresource() != "" {
		t.Fatalf("pod updates %v, want one update of the pod", updates)
	}
	written := updates[0].(clienttesting.UpdateAction).GetObject().(*corev1.Pod)
	state, err := kruisepod.ReadInPlaceUpdateState(written)
	if err != nil || written.Spec.Containers[0].Image != "img:v2" || state.NextBatchPending() || len(state.ContainerBatchesRecord) != 2 {
		t.Errorf("after the next batch: image %s, state %+v, %v", written.Spec.Containers[0].Image, state, err)
	}
	if cond := kruisepod.PodCondition(written, appsv1beta1.InPlaceUpdateReady); cond.Status != corev1.ConditionFalse {
		t.Errorf("InPlaceUpdateReady = %+v, want False until the last batch runs", cond)
	}
}
