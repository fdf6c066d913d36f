package replicaset

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
	"github.com/bosun-dev/bosun/pkg/features"
)

// expectationState is the outstanding (add, del) of a key, or absent.
type expectationState struct {
	Add, Del int64
	Exists   bool
}

func TestReplicaSetHandlers(t *testing.T) {
	rsA := newRS("a", 1)
	recreated := newRS("a", 1)
	recreated.UID = "uid-a-2"
	statusChanged := rsA.DeepCopy()
	statusChanged.ResourceVersion = "2"
	statusChanged.Status.ReadyReplicas = 1

	tests := []struct {
		name   string
		handle func(c *Controller, f *fixture)
		// wantExpectations for key ns/a after the event (it starts as add=2, del=0).
		wantExpectations expectationState
		wantQueued       []string
		wantRecordGone   bool
	}{
		{
			name:             "add enqueues",
			handle:           func(c *Controller, f *fixture) { c.addReplicaSet(f.ctx, rsA) },
			wantExpectations: expectationState{Add: 2, Exists: true},
			wantQueued:       []string{"ns/a"},
		},
		{
			name:             "status-only update enqueues and keeps expectations",
			handle:           func(c *Controller, f *fixture) { c.updateReplicaSet(f.ctx, rsA, statusChanged) },
			wantExpectations: expectationState{Add: 2, Exists: true},
			wantQueued:       []string{"ns/a"},
		},
		{
			name:             "update with a new UID runs delete for the old object first",
			handle:           func(c *Controller, f *fixture) { c.updateReplicaSet(f.ctx, rsA, recreated) },
			wantExpectations: expectationState{},
			wantQueued:       []string{"ns/a"},
			wantRecordGone:   true,
		},
		{
			name:             "delete clears expectations and the write record, then enqueues",
			handle:           func(c *Controller, f *fixture) { c.deleteReplicaSet(f.ctx, rsA) },
			wantExpectations: expectationState{},
			wantQueued:       []string{"ns/a"},
			wantRecordGone:   true,
		},
		{
			name: "delete from a tombstone",
			handle: func(c *Controller, f *fixture) {
				c.deleteReplicaSet(f.ctx, cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: rsA})
			},
			wantExpectations: expectationState{},
			wantQueued:       []string{"ns/a"},
			wantRecordGone:   true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fixtureOption{}, []*appsv1.ReplicaSet{rsA}, nil)
			f.c.expectations.ExpectCreations(f.ctx, "ns/a", 2)
			f.c.writes.wrote("ns/a", rsA.UID, podsResource, "10")

			tc.handle(f.c, f)

			add, del, exists := f.c.expectations.Get("ns/a")
			if diff := cmp.Diff(tc.wantExpectations, expectationState{add, del, exists}); diff != "" {
				t.Errorf("expectations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantQueued, f.queue.AddedKeys()); diff != "" {
				t.Errorf("queued keys (-want +got):\n%s", diff)
			}
			_, recorded := f.c.writes.records["ns/a"]
			if recorded == tc.wantRecordGone {
				t.Errorf("write record present = %v, want %v", recorded, !tc.wantRecordGone)
			}
		})
	}
}

func TestPodHandlers(t *testing.T) {
	rsA := newRS("a", 1)
	rsB := newRS("b", 1)
	slow := newRS("slow", 1)
	slow.Spec.MinReadySeconds = 10
	// Two ReplicaSets whose selectors both match app=x; one with an empty selector that
	// must match nothing.
	x1, x2 := newRS("x1", 1), newRS("x2", 1)
	x1.Spec.Selector.MatchLabels = map[string]string{"app": "x"}
	x2.Spec.Selector.MatchLabels = map[string]string{"app": "x"}
	empty := newRS("empty", 1)
	empty.Spec.Selector = &metav1.LabelSelector{}
	rss := []*appsv1.ReplicaSet{rsA, rsB, slow, x1, x2, empty}

	bump := func(p *corev1.Pod) *corev1.Pod { p = p.DeepCopy(); p.ResourceVersion = "2"; return p }
	podA := newPod("p", rsA)
	orphan := newPod("p", nil)
	foreignRef := newPod("p", rsA)
	foreignRef.OwnerReferences[0].UID = "someone-else"
	deploymentRef := newPod("p", rsA)
	deploymentRef.OwnerReferences[0].Kind = "Deployment"
	unlabelled := newPod("p", nil)
	unlabelled.Labels = nil

	// Every case starts with expectations on ns/a, ns/b and ns/slow of add=2 and the
	// deletion of ns/p expected.
	type state map[string]expectationState
	start := expectationState{Add: 2, Del: 1, Exists: true}
	unchanged := state{"ns/a": start, "ns/b": start, "ns/slow": start}
	with := func(key string, s expectationState) state {
		m := state{"ns/a": start, "ns/b": start, "ns/slow": start}
		m[key] = s
		return m
	}

	tests := []struct {
		name             string
		handle           func(c *Controller, f *fixture)
		wantExpectations state
		wantQueued       []string
		wantDelayed      []queuetest.Delayed
	}{
		{
			name:             "add of an owned pod observes a creation",
			handle:           func(c *Controller, f *fixture) { c.addPod(f.ctx, podA) },
			wantExpectations: with("ns/a", expectationState{Add: 1, Del: 1, Exists: true}),
			wantQueued:       []string{"ns/a"},
		},
		{
			name:             "add of a pod being deleted counts as its deletion",
			handle:           func(c *Controller, f *fixture) { c.addPod(f.ctx, deleting(podA.DeepCopy())) },
			wantExpectations: with("ns/a", expectationState{Add: 2, Del: 0, Exists: true}),
			wantQueued:       []string{"ns/a"},
		},
		{
			name:             "add with a controller ref to another UID is ignored",
			handle:           func(c *Controller, f *fixture) { c.addPod(f.ctx, foreignRef) },
			wantExpectations: unchanged,
		},
		{
			name:             "add with a controller ref of another kind is ignored",
			handle:           func(c *Controller, f *fixture) { c.addPod(f.ctx, deploymentRef) },
			wantExpectations: unchanged,
		},
		{
			name:             "add of an orphan enqueues every matching ReplicaSet, no expectations",
			handle:           func(c *Controller, f *fixture) { c.addPod(f.ctx, orphan) },
			wantExpectations: unchanged,
			wantQueued:       []string{"ns/x1", "ns/x2"},
		},
		{
			name:             "add of an orphan without labels matches nothing",
			handle:           func(c *Controller, f *fixture) { c.addPod(f.ctx, unlabelled) },
			wantExpectations: unchanged,
		},
		{
			name:             "update with the same resourceVersion (resync) is ignored",
			handle:           func(c *Controller, f *fixture) { c.updatePod(f.ctx, podA, podA.DeepCopy()) },
			wantExpectations: unchanged,
		},
		{
			name: "update setting deletionTimestamp counts the deletion once",
			handle: func(c *Controller, f *fixture) {
				cur := deleting(bump(podA))
				c.updatePod(f.ctx, podA, cur)
				// The final delete of the same pod must not count again.
				c.deletePod(f.ctx, cur)
			},
			wantExpectations: with("ns/a", expectationState{Add: 2, Del: 0, Exists: true}),
			wantQueued:       []string{"ns/a"},
		},
		{
			name: "update setting deletionTimestamp with changed labels also handles the old pod",
			handle: func(c *Controller, f *fixture) {
				old := newPod("p", rsB)
				cur := deleting(bump(podA))
				c.updatePod(f.ctx, old, cur)
			},
			wantExpectations: state{
				"ns/a":    {Add: 2, Del: 0, Exists: true},
				"ns/b":    {Add: 2, Del: 0, Exists: true},
				"ns/slow": start,
			},
			wantQueued: []string{"ns/a", "ns/b"},
		},
		{
			name: "controller ref moved: old and new owner are enqueued",
			handle: func(c *Controller, f *fixture) {
				cur := bump(newPod("p", rsB))
				c.updatePod(f.ctx, podA, cur)
			},
			wantExpectations: unchanged,
			wantQueued:       []string{"ns/a", "ns/b"},
		},
		{
			name: "released pod: old owner and matching ReplicaSets are enqueued",
			handle: func(c *Controller, f *fixture) {
				c.updatePod(f.ctx, podA, bump(orphan))
			},
			wantExpectations: unchanged,
			wantQueued:       []string{"ns/a", "ns/x1", "ns/x2"},
		},
		{
			name: "owned pod update enqueues its owner without touching expectations",
			handle: func(c *Controller, f *fixture) {
				c.updatePod(f.ctx, podA, ready(bump(podA), t0))
			},
			wantExpectations: unchanged,
			wantQueued:       []string{"ns/a"},
		},
		{
			name: "pod becoming ready with minReadySeconds is also enqueued after minReadySeconds",
			handle: func(c *Controller, f *fixture) {
				old := newPod("p", slow)
				c.updatePod(f.ctx, old, ready(bump(old), t0))
			},
			wantExpectations: unchanged,
			wantQueued:       []string{"ns/slow"},
			wantDelayed:      []queuetest.Delayed{{Key: "ns/slow", Delay: 10 * time.Second}},
		},
		{
			name: "pod staying ready is not enqueued with delay",
			handle: func(c *Controller, f *fixture) {
				old := ready(newPod("p", slow), t0)
				c.updatePod(f.ctx, old, bump(old))
			},
			wantExpectations: unchanged,
			wantQueued:       []string{"ns/slow"},
		},
		{
			name: "update of a pod whose controller does not resolve does nothing",
			handle: func(c *Controller, f *fixture) {
				c.updatePod(f.ctx, foreignRef, bump(foreignRef))
			},
			wantExpectations: unchanged,
		},
		{
			name: "orphan update without label or ref change does nothing",
			handle: func(c *Controller, f *fixture) {
				c.updatePod(f.ctx, orphan, ready(bump(orphan), t0))
			},
			wantExpectations: unchanged,
		},
		{
			name: "orphan relabelled enqueues the ReplicaSets now matching",
			handle: func(c *Controller, f *fixture) {
				old := orphan.DeepCopy()
				old.Labels = map[string]string{"app": "nothing"}
				c.updatePod(f.ctx, old, bump(orphan))
			},
			wantExpectations: unchanged,
			wantQueued:       []string{"ns/x1", "ns/x2"},
		},
		{
			name:             "delete of an owned pod observes the deletion",
			handle:           func(c *Controller, f *fixture) { c.deletePod(f.ctx, podA) },
			wantExpectations: with("ns/a", expectationState{Add: 2, Del: 0, Exists: true}),
			wantQueued:       []string{"ns/a"},
		},
		{
			name: "delete from a tombstone",
			handle: func(c *Controller, f *fixture) {
				c.deletePod(f.ctx, cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: podA})
			},
			wantExpectations: with("ns/a", expectationState{Add: 2, Del: 0, Exists: true}),
			wantQueued:       []string{"ns/a"},
		},
		{
			name:             "delete of an orphan is ignored",
			handle:           func(c *Controller, f *fixture) { c.deletePod(f.ctx, orphan) },
			wantExpectations: unchanged,
		},
		{
			name:             "delete whose controller does not resolve is ignored",
			handle:           func(c *Controller, f *fixture) { c.deletePod(f.ctx, foreignRef) },
			wantExpectations: unchanged,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fixtureOption{}, rss, nil)
			for _, k := range []string{"ns/a", "ns/b", "ns/slow"} {
				f.c.expectations.ExpectDeletions(f.ctx, k, []string{"ns/p"})
				f.store.Raise(f.ctx, k, 2, 0)
			}

			tc.handle(f.c, f)

			got := state{}
			for k := range tc.wantExpectations {
				add, del, exists := f.c.expectations.Get(k)
				got[k] = expectationState{add, del, exists}
			}
			if diff := cmp.Diff(tc.wantExpectations, got); diff != "" {
				t.Errorf("expectations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantQueued, f.queue.AddedKeys()); diff != "" {
				t.Errorf("queued keys (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDelayed, f.queue.Delayed()); diff != "" {
				t.Errorf("delayed keys (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewControllerAddsIndexes(t *testing.T) {
	owner := types.UID("deployment-uid")
	a := ownedBy(newRS("a", 1), "Deployment", "d", owner)
	b := ownedBy(newRS("b", 1), "Deployment", "d", owner)
	lone := newRS("lone", 1)
	f := newFixture(t, fixtureOption{}, []*appsv1.ReplicaSet{a, b, lone}, []*corev1.Pod{newPod("p", a), newPod("o", nil)})

	siblings, err := f.rsIndexer.ByIndex(ControllerUIDIndex, string(owner))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, obj := range siblings {
		names = append(names, obj.(*appsv1.ReplicaSet).Name)
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"a", "b"}, names); diff != "" {
		t.Errorf("ReplicaSets under the controller UID (-want +got):\n%s", diff)
	}
	pods, err := podutil.PodsForOwner(f.podIndexer, a, "ReplicaSet", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 2 {
		t.Errorf("pods for owner with orphans = %d, want 2", len(pods))
	}
}

// TestRunSyncsAndStops runs the controller on started informers: it creates the missing
// pods of a ReplicaSet, and Run returns once its context ends.
func TestRunSyncsAndStops(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	client := fake.NewClientset(newRS("a", 2))
	reactor := &podCreateReactor{}
	reactor.install(client)
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := NewController(ctx, factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), client,
		record.NewFakeRecorder(100), options.WithFeatureGate(features.NewFeatureGate()))
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()

	stopped := make(chan struct{})
	go func() {
		c.Run(ctx, 2)
		close(stopped)
	}()
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return reactor.count() == 2, nil
	})
	if err != nil {
		t.Fatalf("waiting for 2 creates (got %d): %v", reactor.count(), err)
	}
	cancel()
	<-stopped
	if !c.queue.ShuttingDown() {
		t.Error("Run returned without shutting its queue down")
	}
}

func TestRunReturnsWhenCachesNeverSync(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := NewController(ctx, factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), client,
		record.NewFakeRecorder(100), options.WithFeatureGate(features.NewFeatureGate()))
	if err != nil {
		t.Fatal(err)
	}
	// The factory is never started, so the caches never sync.
	cancel()
	c.Run(ctx, 1)
	if !c.queue.ShuttingDown() {
		t.Error("Run returned without shutting its queue down")
	}
}
