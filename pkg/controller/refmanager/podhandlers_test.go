package refmanager

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
)

// podHandlersFixture is a PodHandlers over ReplicaSets "a" and "b" (selecting app=web) that
// writes down, in order, every hook call and every key queued.
type podHandlersFixture struct {
	ctx      context.Context
	h        *PodHandlers[*appsv1.ReplicaSet]
	calls    []string
	selected []string
}

func newPodHandlersFixture(t *testing.T, owning bool) *podHandlersFixture {
	_, ctx := ktesting.NewTestContext(t)
	f := &podHandlersFixture{ctx: ctx}
	owners := map[string]*appsv1.ReplicaSet{}
	for _, name := range []string{"a", "b"} {
		owners[name] = &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
			Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		}
	}
	all := []*appsv1.ReplicaSet{owners["a"], owners["b"]}
	f.h = &PodHandlers[*appsv1.ReplicaSet]{
		Kind: "ReplicaSet",
		Selecting: func(ctx context.Context, pod *corev1.Pod) []*appsv1.ReplicaSet {
			f.selected = append(f.selected, pod.Name)
			return AdoptersOf(ctx, all, pod, func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector })
		},
		Enqueue: func(key string) { f.calls = append(f.calls, "queue "+key) },
		Created: func(_ context.Context, key string, owner *appsv1.ReplicaSet, pod *corev1.Pod) {
			f.check(t, key, owner)
			f.calls = append(f.calls, "created "+pod.Name)
		},
		Updated: func(_ context.Context, key string, owner *appsv1.ReplicaSet, old, cur *corev1.Pod) {
			f.check(t, key, owner)
			f.calls = append(f.calls, "updated "+old.ResourceVersion+"->"+cur.ResourceVersion)
		},
		Gone: func(_ context.Context, key string, owner *appsv1.ReplicaSet, pod *corev1.Pod) {
			f.check(t, key, owner)
			f.calls = append(f.calls, "gone "+pod.Name)
		},
	}
	if owning {
		f.h.ControllerOf = func(_ string, ref *metav1.OwnerReference) (*appsv1.ReplicaSet, bool) {
			return ResolveControllerRef(ref, "ReplicaSet", func(name string) (*appsv1.ReplicaSet, error) {
				if rs, ok := owners[name]; ok {
					return rs, nil
				}
				return nil, errors.New("not found")
			})
		}
	}
	return f
}

// check fails the test when a hook gets a key that is not its owner's.
func (f *podHandlersFixture) check(t *testing.T, key string, owner *appsv1.ReplicaSet) {
	t.Helper()
	if want := owner.Namespace + "/" + owner.Name; key != want {
		t.Errorf("hook got key %q for owner %s", key, want)
	}
}

func (f *podHandlersFixture) take() []string {
	calls := f.calls
	f.calls, f.selected = nil, nil
	return calls
}

// testPod returns pod name at resource version rv, labelled app=web, controlled by the
// ReplicaSet owner when it is not empty.
func testPod(name, rv, owner string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: name, ResourceVersion: rv, Labels: map[string]string{"app": "web"},
	}}
	if owner != "" {
		pod.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner, UID: types.UID("uid-" + owner), Controller: ptr.To(true),
		}}
	}
	return pod
}

func with(pod *corev1.Pod, change func(*corev1.Pod)) *corev1.Pod {
	pod = pod.DeepCopy()
	change(pod)
	return pod
}

func terminating(pod *corev1.Pod) { pod.DeletionTimestamp = ptr.To(metav1.Now()) }

func TestPodHandlersOwningPods(t *testing.T) {
	owned := testPod("p", "1", "a")
	orphan := testPod("o", "1", "")
	tests := []struct {
		name   string
		handle func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context)
		want   []string
	}{
		{"created", func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context) { h.Add(ctx, owned) },
			[]string{"created p", "queue ns/a"}},
		{"created, owner gone", func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context) { h.Add(ctx, testPod("p", "1", "gone")) }, nil},
		{"created terminating: a deletion", func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context) {
			h.Add(ctx, with(owned, terminating))
		}, []string{"gone p", "queue ns/a"}},
		{"orphan created: its adopters", func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context) { h.Add(ctx, orphan) },
			[]string{"queue ns/a", "queue ns/b"}},
		{"not a pod", func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context) { h.Add(ctx, &appsv1.ReplicaSet{}) }, nil},
		{"resync", func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context) { h.Update(ctx, owned, owned.DeepCopy()) }, nil},
		{"changed", func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context) {
			h.Update(ctx, owned, with(owned, func(p *corev1.Pod) { p.ResourceVersion = "2" }))
		}, []string{"updated 1->2", "queue ns/a"}},
		{"deletion started", func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context) {
			h.Update(ctx, owned, with(owned, func(p *corev1.Pod) { p.ResourceVersion = "2"; terminating(p) }))
		}, []string{"gone p", "queue ns/a"}},
		// The labels before the update may have led elsewhere: that owner counts it too.
		{"deletion started with a label change", func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context) {
			h.Update(ctx, owned, with(owned, func(p *corev1.Pod) { p.ResourceVersion = "2"; p.Labels = nil; terminating(p) }))
		}, []string{"gone p", "queue ns/a", "gone p", "queue ns/a"}},
		{"moved to another owner", func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context) {
			h.Update(ctx, owned, testPod("p", "2", "b"))
		}, []string{"queue ns/a", "updated 1->2", "queue ns/b"}},
		{"released", func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context) {
			h.Update(ctx, owned, testPod("p", "2", ""))
		}, []string{"queue ns/a", "queue ns/a", "queue ns/b"}},
		{"orphan relabelled", func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context) {
			h.Update(ctx, with(orphan, func(p *corev1.Pod) { p.Labels = nil }), testPod("o", "2", ""))
		}, []string{"queue ns/a", "queue ns/b"}},
		{"orphan's status changed", func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context) {
			h.Update(ctx, orphan, testPod("o", "2", ""))
		}, nil},
		{"deleted", func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context) { h.Delete(ctx, owned) },
			[]string{"gone p", "queue ns/a"}},
		{"deleted, tombstone", func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context) {
			h.Delete(ctx, cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: owned})
		}, []string{"gone p", "queue ns/a"}},
		{"orphan deleted", func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context) { h.Delete(ctx, orphan) }, nil},
		{"deleted, not a pod", func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context) {
			h.Delete(ctx, cache.DeletedFinalStateUnknown{Key: "ns/x", Obj: &appsv1.ReplicaSet{}})
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newPodHandlersFixture(t, true)
			tc.handle(f.h, f.ctx)
			if got := f.take(); !slices.Equal(got, tc.want) {
				t.Errorf("calls %v, want %v", got, tc.want)
			}
		})
	}
}

// A pod turning ready queues its owner again minReadySeconds later, when it becomes
// available; other changes, and owners without minReadySeconds, queue it only at once.
func TestPodHandlersRecheckAvailability(t *testing.T) {
	notReady := testPod("p", "1", "a")
	ready := with(notReady, func(p *corev1.Pod) {
		p.ResourceVersion = "2"
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	})
	stillReady := with(ready, func(p *corev1.Pod) { p.ResourceVersion = "3" })
	tests := []struct {
		name            string
		minReadySeconds int32
		old, cur        *corev1.Pod
		want            []string
	}{
		{"turned ready", 7, notReady, ready, []string{"updated 1->2", "queue ns/a after 7s", "queue ns/a"}},
		{"turned ready, no minReadySeconds", 0, notReady, ready, []string{"updated 1->2", "queue ns/a"}},
		{"stayed ready", 7, ready, stillReady, []string{"updated 2->3", "queue ns/a"}},
		{"turned unready", 7, ready, with(notReady, func(p *corev1.Pod) { p.ResourceVersion = "3" }),
			[]string{"updated 2->3", "queue ns/a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newPodHandlersFixture(t, true)
			f.h.MinReadySeconds = func(rs *appsv1.ReplicaSet) int32 {
				if rs.Name != "a" {
					t.Errorf("minReadySeconds asked of %s, want a", rs.Name)
				}
				return tc.minReadySeconds
			}
			f.h.EnqueueAfter = func(key string, delay time.Duration) {
				f.calls = append(f.calls, "queue "+key+" after "+delay.String())
			}
			f.h.Update(f.ctx, tc.old, tc.cur)
			if got := f.take(); !slices.Equal(got, tc.want) {
				t.Errorf("calls %v, want %v", got, tc.want)
			}
		})
	}
}

// Only orphans are matched against selectors when the owners own pods.
func TestPodHandlersAskSelectingOnlyAboutOrphans(t *testing.T) {
	f := newPodHandlersFixture(t, true)
	f.h.Add(f.ctx, testPod("p", "1", "a"))
	f.h.Update(f.ctx, testPod("p", "1", "a"), testPod("p", "2", "a"))
	f.h.Delete(f.ctx, testPod("p", "2", "a"))
	f.h.Delete(f.ctx, testPod("o", "1", ""))
	if len(f.selected) != 0 {
		t.Errorf("Selecting asked about %v", f.selected)
	}
	f.h.Add(f.ctx, testPod("o", "1", ""))
	if !slices.Equal(f.selected, []string{"o"}) {
		t.Errorf("Selecting asked about %v, want the orphan o", f.selected)
	}
}

func TestPodHandlersSelectingPods(t *testing.T) {
	web := testPod("p", "1", "a")
	// The ReplicaSets select app=web; "p" selected before the update, not after.
	unselected := with(web, func(p *corev1.Pod) { p.Labels = map[string]string{"app": "db"} })
	tests := []struct {
		name     string
		concerns bool
		handle   func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context)
		want     []string
	}{
		{"added: the selecting owners, no hook even for a controlled pod", false, func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context) {
			h.Add(ctx, web)
		}, []string{"queue ns/a", "queue ns/b"}},
		{"added terminating", false, func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context) {
			h.Add(ctx, with(web, terminating))
		}, []string{"queue ns/a", "queue ns/b"}},
		{"update that does not concern the owners", false, func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context) {
			h.Update(ctx, web, unselected)
		}, nil},
		// Before and after, each owner once.
		{"update that concerns them", true, func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context) {
			h.Update(ctx, web, unselected)
		}, []string{"queue ns/a", "queue ns/b"}},
		{"deleted, tombstone", false, func(h *PodHandlers[*appsv1.ReplicaSet], ctx context.Context) {
			h.Delete(ctx, cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: web})
		}, []string{"queue ns/a", "queue ns/b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newPodHandlersFixture(t, false)
			f.h.UpdateConcerns = func(old, cur *corev1.Pod) bool { return tc.concerns }
			tc.handle(f.h, f.ctx)
			if got := f.take(); !slices.Equal(got, tc.want) {
				t.Errorf("calls %v, want %v", got, tc.want)
			}
		})
	}
}

// UpdateConcerns replaces the resource version check: an update it accepts is handled
// even when the resource version did not move, and one it refuses is not, even when it
// did.
func TestPodHandlersUpdateConcerns(t *testing.T) {
	f := newPodHandlersFixture(t, true)
	var asked int
	f.h.UpdateConcerns = func(old, cur *corev1.Pod) bool {
		asked++
		return old.Annotations["x"] != cur.Annotations["x"]
	}
	pod := testPod("p", "1", "a")
	f.h.Update(f.ctx, pod, with(pod, func(p *corev1.Pod) { p.Annotations = map[string]string{"x": "y"} }))
	if got := f.take(); !slices.Equal(got, []string{"updated 1->1", "queue ns/a"}) {
		t.Errorf("accepted update: calls %v", got)
	}
	f.h.Update(f.ctx, pod, with(pod, func(p *corev1.Pod) { p.ResourceVersion = "2" }))
	if got := f.take(); len(got) != 0 {
		t.Errorf("refused update: calls %v", got)
	}
	if asked != 2 {
		t.Errorf("UpdateConcerns asked %d times, want 2", asked)
	}
}

func TestPodHandlersLogKey(t *testing.T) {
	for kind, want := range map[string]string{
		"ReplicaSet":               "replicaSet",
		"ContainerRecreateRequest": "containerRecreateRequest",
		"":                         "owner",
	} {
		if got := (&PodHandlers[*appsv1.ReplicaSet]{Kind: kind}).logKey(); got != want {
			t.Errorf("logKey(%q) = %q, want %q", kind, got, want)
		}
	}
}
