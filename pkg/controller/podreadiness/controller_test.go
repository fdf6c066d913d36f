package podreadiness

import (
	"slices"
	"testing"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
)

// The handlers queue exactly the pods that wait for their condition: gated, without it,
// not being deleted.
func TestHandlersQueueOnlyPodsAwaitingTheCondition(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"gated, no condition", newPod("p"), true},
		{"gated, other conditions only", newPod("p", withCondition(corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})), true},
		{"without the gate", newPod("p", ungated), false},
		{"condition True", newPod("p", withCondition(corev1.PodCondition{Type: appsv1beta1.KruisePodReadyConditionType, Status: corev1.ConditionTrue})), false},
		{"condition False with a mark", newPod("p", withCondition(notReadyMark)), false},
		{"being deleted", newPod("p", deleting), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []string
			if tt.want {
				want = []string{ns + "/p"}
			}

			f := newFixture(t)
			f.c.addPod(f.ctx, tt.pod)
			if got := f.queue.AddedKeys(); !slices.Equal(got, want) {
				t.Errorf("add queued %v, want %v", got, want)
			}

			f.queue.Reset()
			old := newPod("p", ungated)
			f.c.updatePod(f.ctx, old, tt.pod)
			if got := f.queue.AddedKeys(); !slices.Equal(got, want) {
				t.Errorf("update queued %v, want %v", got, want)
			}
		})
	}
}

// A resync (an update without change) brings back a pod still waiting, so that a write
// that failed for good is tried again.
func TestResyncRequeuesAWaitingPod(t *testing.T) {
	f := newFixture(t)
	pod := newPod("p")
	f.c.updatePod(f.ctx, pod, pod)
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{ns + "/p"}) {
		t.Errorf("queued %v, want [%s/p]", got, ns)
	}
}

// Objects of other types, which no pod informer delivers, are ignored.
func TestHandlersIgnoreOtherObjects(t *testing.T) {
	f := newFixture(t)
	f.c.addPod(f.ctx, "not a pod")
	f.c.updatePod(f.ctx, nil, &corev1.Node{})
	if got := f.queue.AddedKeys(); len(got) != 0 {
		t.Errorf("queued %v", got)
	}
}
