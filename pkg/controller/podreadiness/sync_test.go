package podreadiness

import (
	"errors"
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// expectReady checks that pod carries KruisePodReady True, set at the fake clock's time,
// after its other conditions.
func expectReady(t *testing.T, pod *corev1.Pod, others int) {
	t.Helper()
	cond := kruisePodReady(pod)
	if cond == nil || cond.Status != corev1.ConditionTrue || !cond.LastTransitionTime.Time.Equal(t0) || cond.Message != "" || cond.Reason != "" {
		t.Errorf("KruisePodReady = %+v, want True since %v", cond, t0)
	}
	if len(pod.Status.Conditions) != others+1 || pod.Status.Conditions[others].Type != appsv1beta1.KruisePodReadyConditionType {
		t.Errorf("conditions %+v, want the %d others kept and KruisePodReady added", pod.Status.Conditions, others)
	}
}

// A gated pod without the condition gets it True, once: the second sync, on a cache that
// saw the write, writes nothing.
func TestSyncSetsTheConditionOnce(t *testing.T) {
	scheduled := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}
	f := newFixture(t, newPod("p", withCondition(scheduled)))
	if err := f.sync("p"); err != nil {
		t.Fatal(err)
	}
	writes := f.statusWrites()
	if len(writes) != 1 {
		t.Fatalf("%d status writes, want 1", len(writes))
	}
	if writes[0].ResourceVersion != "1" {
		t.Errorf("written with resourceVersion %q, want the cached one", writes[0].ResourceVersion)
	}
	expectReady(t, f.stored("p"), 1)

	if err := f.pods.Update(f.stored("p")); err != nil {
		t.Fatal(err)
	}
	if err := f.sync("p"); err != nil {
		t.Fatal(err)
	}
	if writes := f.statusWrites(); len(writes) != 0 {
		t.Errorf("second sync wrote %d times, want none", len(writes))
	}
}

// Pods that do not wait for the condition are not written: without the gate, with the
// condition (whatever its status), being deleted, or gone.
func TestSyncLeavesOtherPodsAlone(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
	}{
		{"without the gate", newPod("p", ungated)},
		{"condition False with a mark", newPod("p", withCondition(notReadyMark))},
		{"condition True", newPod("p", withCondition(corev1.PodCondition{Type: appsv1beta1.KruisePodReadyConditionType, Status: corev1.ConditionTrue}))},
		{"being deleted", newPod("p", deleting)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.pod)
			if err := f.sync("p"); err != nil {
				t.Fatal(err)
			}
			if writes := f.statusWrites(); len(writes) != 0 {
				t.Errorf("%d status writes, want none", len(writes))
			}
		})
	}
	t.Run("not in the cache", func(t *testing.T) {
		f := newFixture(t)
		if err := f.sync("p"); err != nil {
			t.Fatal(err)
		}
		if actions := f.client.Actions(); len(actions) != 0 {
			t.Errorf("actions %v, want none", actions)
		}
	})
}

// A pod deleted after the cache saw it is no failure.
func TestSyncOfAPodGoneFromTheServer(t *testing.T) {
	f := newFixture(t, newPod("p"))
	if err := f.client.Tracker().Delete(podsResource, ns, "p"); err != nil {
		t.Fatal(err)
	}
	if err := f.sync("p"); err != nil {
		t.Errorf("sync: %v, want no error", err)
	}
}

// onFirstStatusUpdate makes the first status write of a pod fail with a conflict, after
// change (if any) has been made to the pod the server holds, as another writer would.
func (f *fixture) onFirstStatusUpdate(change func(*corev1.Pod)) {
	called := false
	f.client.PrependReactor("update", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "status" || called {
			return false, nil, nil
		}
		called = true
		if change != nil {
			// The tracker, not the clientset, whose lock the reactor holds.
			obj, err := f.client.Tracker().Get(podsResource, ns, "p")
			if err != nil {
				return true, nil, err
			}
			live := obj.(*corev1.Pod).DeepCopy()
			change(live)
			if err := f.client.Tracker().Update(podsResource, live, ns); err != nil {
				return true, nil, err
			}
		}
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", errors.New("the object has been modified"))
	})
}

// Another writer marked the pod not ready between the cache and the write: the conflict
// makes the controller read the live pod, which has its condition, and leave it as it is.
func TestSyncNeverOverwritesAConditionSetMeanwhile(t *testing.T) {
	f := newFixture(t, newPod("p"))
	f.onFirstStatusUpdate(func(live *corev1.Pod) {
		live.ResourceVersion = "2"
		live.Status.Conditions = append(live.Status.Conditions, notReadyMark)
	})
	if err := f.sync("p"); err != nil {
		t.Fatal(err)
	}
	if writes := f.statusWrites(); len(writes) != 1 {
		t.Errorf("%d status writes, want only the one that met the conflict", len(writes))
	}
	if cond := kruisePodReady(f.stored("p")); cond == nil || cond.Status != corev1.ConditionFalse || cond.Message != notReadyMark.Message {
		t.Errorf("KruisePodReady = %+v, want the not-ready mark kept", cond)
	}
}

// After a conflict from an unrelated change, the write is made again on the live pod.
func TestSyncRetriesAConflictOnTheLivePod(t *testing.T) {
	f := newFixture(t, newPod("p"))
	f.onFirstStatusUpdate(func(live *corev1.Pod) {
		live.ResourceVersion = "2"
		live.Labels = map[string]string{"changed": "meanwhile"}
	})
	if err := f.sync("p"); err != nil {
		t.Fatal(err)
	}
	writes := f.statusWrites()
	if len(writes) != 2 {
		t.Fatalf("%d status writes, want 2", len(writes))
	}
	if writes[1].ResourceVersion != "2" || writes[1].Labels["changed"] != "meanwhile" {
		t.Errorf("retried on %+v, want the live pod", writes[1].ObjectMeta)
	}
	expectReady(t, f.stored("p"), 0)
}

// A conflict that outlasts the retries is returned as a conflict, which the worker loop
// treats as a normal wait and retries with backoff.
func TestSyncReturnsAPersistentConflict(t *testing.T) {
	f := newFixture(t, newPod("p"))
	f.client.PrependReactor("update", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "status" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", errors.New("the object has been modified"))
	})
	err := f.sync("p")
	if reason, ok := queue.IsNormalWait(err); !ok || reason != "Conflict" {
		t.Errorf("sync: %v (wait %q %v), want a conflict", err, reason, ok)
	}
}

// Other write failures are returned for the queue's backoff.
func TestSyncReturnsWriteFailures(t *testing.T) {
	f := newFixture(t, newPod("p"))
	f.client.PrependReactor("update", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("try later")
	})
	err := f.sync("p")
	if err == nil || !apierrors.IsServiceUnavailable(err) {
		t.Errorf("sync: %v, want the server's error", err)
	}
	if _, wait := queue.IsNormalWait(err); wait {
		t.Errorf("sync: %v counted as a normal wait", err)
	}
}

// The transition time comes from the controller's clock.
func TestSyncStampsTheClockTime(t *testing.T) {
	f := newFixture(t, newPod("p"))
	if err := f.sync("p"); err != nil {
		t.Fatal(err)
	}
	if cond := kruisePodReady(f.stored("p")); cond == nil || cond.LastTransitionTime.Sub(t0) != 0*time.Second {
		t.Errorf("KruisePodReady = %+v, want lastTransitionTime %v", cond, t0)
	}
}
