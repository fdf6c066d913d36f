package deployment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

func TestDeploymentHandlersEnqueue(t *testing.T) {
	d := newDeployment("d", 1)
	f := newFixture(t)

	f.c.addDeployment(f.ctx, d)
	if got := f.queued(); !slices.Equal(got, []string{"ns/d"}) {
		t.Errorf("add: queued %v", got)
	}
	f.c.updateDeployment(f.ctx, d, withImage(d, "image:2"))
	if got := f.queued(); !slices.Equal(got, []string{"ns/d"}) {
		t.Errorf("update: queued %v", got)
	}
	f.c.deleteDeployment(f.ctx, cache.DeletedFinalStateUnknown{Key: "ns/d", Obj: d})
	if got := f.queued(); !slices.Equal(got, []string{"ns/d"}) {
		t.Errorf("delete tombstone: queued %v", got)
	}
}

func TestReplicaSetHandlersEnqueue(t *testing.T) {
	d1 := newDeployment("d1", 1)
	d2 := newDeployment("d2", 1)
	other := newDeployment("other", 1)
	other.Spec.Selector.MatchLabels = map[string]string{"app": "other"}
	owned := newReplicaSet(d1, d1.Spec.Template, "1", testNow, 1, 1)

	orphan := owned.DeepCopy()
	orphan.OwnerReferences = nil
	unlabelledOrphan := orphan.DeepCopy()
	unlabelledOrphan.Labels = nil
	staleRef := owned.DeepCopy()
	staleRef.OwnerReferences[0].UID = "uid-of-a-previous-d1"
	deleting := owned.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: testNow}
	deletingOrphan := orphan.DeepCopy()
	deletingOrphan.DeletionTimestamp = &metav1.Time{Time: testNow}
	ownedByD2 := owned.DeepCopy()
	ownedByD2.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(d2, controllerKind)}
	ownedByD2.ResourceVersion = "2"
	orphanRelabelled := orphan.DeepCopy()
	orphanRelabelled.Labels = map[string]string{"app": "other"}
	orphanRelabelled.ResourceVersion = "2"
	orphanStatusOnly := orphan.DeepCopy()
	orphanStatusOnly.ResourceVersion = "2"
	orphanStatusOnly.Status.ReadyReplicas = 0
	resync := owned.DeepCopy()

	tests := []struct {
		name   string
		handle func(c *Controller, ctx context.Context)
		want   []string
	}{
		{"add owned", func(c *Controller, ctx context.Context) { c.addReplicaSet(ctx, owned) }, []string{"ns/d1"}},
		{"add owned by a Deployment since replaced", func(c *Controller, ctx context.Context) { c.addReplicaSet(ctx, staleRef) }, nil},
		{"add orphan wakes every matching Deployment", func(c *Controller, ctx context.Context) { c.addReplicaSet(ctx, orphan) }, []string{"ns/d1", "ns/d2"}},
		{"add orphan without labels", func(c *Controller, ctx context.Context) { c.addReplicaSet(ctx, unlabelledOrphan) }, nil},
		{"add being deleted is a delete", func(c *Controller, ctx context.Context) { c.addReplicaSet(ctx, deleting) }, []string{"ns/d1"}},
		{"add orphan being deleted", func(c *Controller, ctx context.Context) { c.addReplicaSet(ctx, deletingOrphan) }, nil},
		{"update without change (resync)", func(c *Controller, ctx context.Context) { c.updateReplicaSet(ctx, owned, resync) }, nil},
		{"update moving ownership wakes both owners", func(c *Controller, ctx context.Context) { c.updateReplicaSet(ctx, owned, ownedByD2) }, []string{"ns/d1", "ns/d2"}},
		{"update of an owned RS", func(c *Controller, ctx context.Context) {
			cur := owned.DeepCopy()
			cur.ResourceVersion = "2"
			c.updateReplicaSet(ctx, owned, cur)
		}, []string{"ns/d1"}},
		{"update releasing an RS wakes old owner and adopters", func(c *Controller, ctx context.Context) {
			cur := orphan.DeepCopy()
			cur.ResourceVersion = "2"
			c.updateReplicaSet(ctx, owned, cur)
		}, []string{"ns/d1", "ns/d2"}},
		{"update relabelling an orphan", func(c *Controller, ctx context.Context) { c.updateReplicaSet(ctx, orphan, orphanRelabelled) }, []string{"ns/other"}},
		{"update of an orphan's status only", func(c *Controller, ctx context.Context) { c.updateReplicaSet(ctx, orphan, orphanStatusOnly) }, nil},
		{"delete owned (tombstone)", func(c *Controller, ctx context.Context) {
			c.deleteReplicaSet(ctx, cache.DeletedFinalStateUnknown{Key: "ns/x", Obj: owned})
		}, []string{"ns/d1"}},
		{"delete orphan", func(c *Controller, ctx context.Context) { c.deleteReplicaSet(ctx, orphan) }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			for _, d := range []*appsv1.Deployment{d1, d2, other} {
				f.cache(d)
			}
			tc.handle(f.c, f.ctx)
			if got := f.queued(); !slices.Equal(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPodDeleteWakesRecreateDeploymentOnlyWithoutPods(t *testing.T) {
	recreate := newDeployment("d", 2)
	recreate.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	rs := newReplicaSet(recreate, recreate.Spec.Template, "1", testNow, 0, 0)
	gone := newPod("gone", rs, corev1.PodRunning)
	remaining := newPod("remaining", rs, corev1.PodRunning)

	tests := []struct {
		name string
		d    *appsv1.Deployment
		pods []*corev1.Pod
		obj  any
		want []string
	}{
		{name: "last pod of a Recreate deployment", d: recreate, obj: gone, want: []string{"ns/d"}},
		{name: "last pod, as a tombstone", d: recreate, obj: cache.DeletedFinalStateUnknown{Key: "ns/gone", Obj: gone}, want: []string{"ns/d"}},
		{name: "another pod remains", d: recreate, pods: []*corev1.Pod{remaining}, obj: gone},
		{name: "rolling update deployment", d: newDeployment("d", 2), obj: gone},
		{name: "pod of an RS with another UID", d: recreate, obj: func() *corev1.Pod {
			p := gone.DeepCopy()
			p.OwnerReferences[0].UID = "other"
			return p
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.d, rs)
			for _, p := range tc.pods {
				f.cache(p)
			}
			f.c.deletePod(f.ctx, tc.obj)
			if got := f.queued(); !slices.Equal(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
		})
	}
}

func TestProcessKeyRetries(t *testing.T) {
	terminating := apierrors.NewForbidden(schema.GroupResource{Resource: "replicasets"}, "x", errors.New("namespace is terminating"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	failure := errors.New("boom")

	tests := []struct {
		name     string
		err      error
		requeues int
		wantErr  bool
	}{
		{name: "success", err: nil},
		{name: "namespace terminating is dropped", err: fmt.Errorf("creating replica set: %w", terminating)},
		{name: "error is retried", err: failure, requeues: 14, wantErr: true},
		{name: "error after 15 retries is dropped", err: failure, requeues: 15},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.c.syncHandler = func(context.Context, string) error { return tc.err }
			for range tc.requeues {
				f.c.queue.AddRateLimited("ns/d")
			}
			err := f.c.syncOrGiveUp(f.ctx, "ns/d")
			if (err != nil) != tc.wantErr {
				t.Errorf("syncOrGiveUp error = %v, want error: %v", err, tc.wantErr)
			}
		})
	}
}

// TestRunStopsWithContext checks the worker plumbing end to end: a key added before Run is
// synced, and Run returns once the context is cancelled.
func TestRunStopsWithContext(t *testing.T) {
	f := newFixture(t)
	synced := make(chan string, 1)
	f.c.syncHandler = func(_ context.Context, key string) error {
		synced <- key
		return nil
	}
	f.c.cachesSynced = nil // the fixture's informers never run
	f.c.queue.Add("ns/d")

	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() {
		f.c.Run(ctx, 2)
		close(done)
	}()
	select {
	case key := <-synced:
		if key != "ns/d" {
			t.Errorf("synced %q", key)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("key was never synced")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}
