package replicaset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/podcontrol"
	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
	"github.com/bosun-dev/bosun/pkg/features"
)

var podsGR = schema.GroupResource{Resource: "pods"}

func quotaExceeded() error {
	return apierrors.NewForbidden(podsGR, "", errors.New("exceeded quota: pods, requested: pods=1, used: pods=3, limited: pods=3"))
}

func namespaceTerminating() error {
	err := apierrors.NewForbidden(podsGR, "", errors.New("namespace ns is being terminated"))
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: "namespace is terminating"}}
	return err
}

func TestManageReplicasScaleUp(t *testing.T) {
	tests := []struct {
		name     string
		replicas int32
		existing int
		burst    int
		fail     func(n int) error
		// wantCalls is the number of create requests; wantCreated the successful ones.
		wantCalls, wantCreated int
		wantErr                bool
		// wantPendingCreations is the expectation left: successful creates not yet observed.
		wantPendingCreations int64
		wantEvents           []string
	}{
		{
			name: "all succeed in batches 1, 2, 4, 3", replicas: 10,
			wantCalls: 10, wantCreated: 10, wantPendingCreations: 10,
		},
		{
			name: "existing pods are counted", replicas: 5, existing: 3,
			wantCalls: 2, wantCreated: 2, wantPendingCreations: 2,
		},
		{
			name: "capped at the burst size", replicas: 8, burst: 5,
			wantCalls: 5, wantCreated: 5, wantPendingCreations: 5,
		},
		{
			name: "a failing create stops later batches", replicas: 10,
			fail: func(n int) error {
				if n == 5 {
					return quotaExceeded()
				}
				return nil
			},
			// Batches 1, 2 and 4 run; the 4-batch holds the failure; 3 pods are never tried.
			wantCalls: 7, wantCreated: 6, wantErr: true, wantPendingCreations: 6,
		},
		{
			name: "quota exhausted from the start: one request", replicas: 600,
			fail:      func(int) error { return quotaExceeded() },
			wantCalls: 1, wantErr: true, wantPendingCreations: 0,
			wantEvents: []string{"Warning FailedCreate Error creating: "},
		},
		{
			name: "namespace terminating counts as success", replicas: 4,
			fail:      func(int) error { return namespaceTerminating() },
			wantCalls: 4, wantPendingCreations: 4,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := newRS("a", tc.replicas)
			var claimed []*corev1.Pod
			for i := range tc.existing {
				claimed = append(claimed, newPod(fmt.Sprintf("p%d", i), rs))
			}
			f := newFixture(t, fixtureOption{burst: tc.burst}, []*appsv1.ReplicaSet{rs}, claimed)
			reactor := &podCreateReactor{fail: tc.fail}
			reactor.install(f.client)

			err := f.c.manageReplicas(f.ctx, rs, claimed)

			if (err != nil) != tc.wantErr {
				t.Fatalf("manageReplicas error = %v, want error %v", err, tc.wantErr)
			}
			if got := reactor.count(); got != tc.wantCalls {
				t.Errorf("create requests = %d, want %d", got, tc.wantCalls)
			}
			if got := len(reactor.pods); got != tc.wantCreated {
				t.Errorf("created pods = %d, want %d", got, tc.wantCreated)
			}
			add, del, _ := f.c.expectations.Get("ns/a")
			if add != tc.wantPendingCreations || del != 0 {
				t.Errorf("expectations = (add %d, del %d), want (add %d, del 0)", add, del, tc.wantPendingCreations)
			}
			for _, pod := range reactor.pods {
				ref := metav1.GetControllerOf(pod)
				want := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "a", UID: rs.UID,
					Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
				if ref == nil || !cmp.Equal(*ref, want) {
					t.Errorf("pod %s controller ref = %v, want %v", pod.Name, ref, want)
				}
				if pod.GenerateName != "a-" || pod.Labels["app"] != "a" {
					t.Errorf("pod %s: generateName %q labels %v, want a- and the template's", pod.Name, pod.GenerateName, pod.Labels)
				}
			}
			events := f.events()
			successes := 0
			for _, e := range events {
				if strings.HasPrefix(e, "Normal SuccessfulCreate Created pod: a-") {
					successes++
				}
			}
			if successes != tc.wantCreated {
				t.Errorf("SuccessfulCreate events = %d, want %d (events %q)", successes, tc.wantCreated, events)
			}
			for _, want := range tc.wantEvents {
				if !slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, want) }) {
					t.Errorf("no event starting %q in %q", want, events)
				}
			}
		})
	}
}

// TestManageReplicasScaleDownRanking follows the rank-based scale-down scenario: ReplicaSets
// A and B belong to one Deployment; node n1 holds 3 pods of A and 2 of B, node n2 one pod of
// A. Scaling A from 4 to 3 must delete a pod on n1.
func TestManageReplicasScaleDownRanking(t *testing.T) {
	deployment := types.UID("deployment-uid")
	a := ownedBy(newRS("a", 3), "Deployment", "d", deployment)
	b := ownedBy(newRS("b", 2), "Deployment", "d", deployment)
	unrelated := newRS("c", 5)

	var podsA []*corev1.Pod
	for i, node := range []string{"n2", "n1", "n1", "n1"} {
		// The pod on n2 is the youngest, so without ranking by node it would go first.
		pod := ready(onNode(newPod(fmt.Sprintf("a%d", i), a), node), t0.Add(-time.Hour))
		pod.CreationTimestamp = metav1.NewTime(t0.Add(-time.Duration(4-i) * time.Hour))
		if i == 0 {
			pod.CreationTimestamp = metav1.NewTime(t0.Add(-time.Minute))
		}
		podsA = append(podsA, pod)
	}
	pods := slices.Clone(podsA)
	pods = append(pods,
		ready(onNode(newPod("b0", b), "n1"), t0),
		ready(onNode(newPod("b1", b), "n1"), t0),
		// Pods of a ReplicaSet with another owner, and terminated siblings, do not count.
		ready(onNode(newPod("c0", unrelated), "n2"), t0),
		ready(onNode(newPod("c1", unrelated), "n2"), t0),
		withPhase(onNode(newPod("b2", b), "n2"), corev1.PodSucceeded),
		withPhase(onNode(newPod("b3", b), "n2"), corev1.PodFailed),
	)
	f := newFixture(t, fixtureOption{}, []*appsv1.ReplicaSet{a, b, unrelated}, pods)

	if err := f.c.manageReplicas(f.ctx, a, podsA); err != nil {
		t.Fatalf("manageReplicas: %v", err)
	}
	deletes := f.actions("delete", "pods")
	if len(deletes) != 1 {
		t.Fatalf("delete requests = %d, want 1", len(deletes))
	}
	victim := deletes[0].(clienttesting.DeleteAction).GetName()
	if victim == "a0" {
		t.Errorf("deleted %s on n2, want a pod on n1 (shared with the sibling's pods)", victim)
	}
	if diff := cmp.Diff([]string{"ns/" + victim}, f.c.expectations.PendingDeletions("ns/a")); diff != "" {
		t.Errorf("pending deletions (-want +got):\n%s", diff)
	}
	if events := f.events(); !slices.Contains(events, "Normal SuccessfulDelete Deleted pod: "+victim) {
		t.Errorf("events %q lack SuccessfulDelete for %s", events, victim)
	}
}

func TestManageReplicasScaleDownErrors(t *testing.T) {
	internal := apierrors.NewInternalError(errors.New("etcd is sad"))
	tests := []struct {
		name        string
		failures    map[string]error
		wantErr     error
		wantPending []string
	}{
		{
			name:        "all deleted",
			wantPending: []string{"ns/p0", "ns/p1", "ns/p2"},
		},
		{
			name:        "NotFound is tolerated and no longer expected",
			failures:    map[string]error{"p1": apierrors.NewNotFound(podsGR, "p1")},
			wantPending: []string{"ns/p0", "ns/p2"},
		},
		{
			name:        "other errors are returned and no longer expected",
			failures:    map[string]error{"p0": internal, "p2": apierrors.NewNotFound(podsGR, "p2")},
			wantErr:     internal,
			wantPending: []string{"ns/p1"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := newRS("a", 0)
			var claimed []*corev1.Pod
			for i := range 3 {
				claimed = append(claimed, newPod(fmt.Sprintf("p%d", i), rs))
			}
			// Each delete waits until all three have been issued: a controller deleting one
			// pod after another would never get past the first. (The barrier sits in front
			// of pod control because the fake clientset serialises its reactors.)
			barrier := func(control podcontrol.Interface) podcontrol.Interface {
				return &deleteBarrier{Interface: control, waiting: len(claimed), released: make(chan struct{})}
			}
			f := newFixture(t, fixtureOption{podControl: barrier}, []*appsv1.ReplicaSet{rs}, claimed)

			f.client.PrependReactor("delete", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, tc.failures[action.(clienttesting.DeleteAction).GetName()]
			})

			err := f.c.manageReplicas(f.ctx, rs, claimed)

			if !errors.Is(err, tc.wantErr) {
				t.Errorf("manageReplicas error = %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantPending, f.c.expectations.PendingDeletions("ns/a")); diff != "" {
				t.Errorf("pending deletions (-want +got):\n%s", diff)
			}
			_, del, _ := f.c.expectations.Get("ns/a")
			if del != int64(len(tc.wantPending)) {
				t.Errorf("deletion counter = %d, want %d", del, len(tc.wantPending))
			}
		})
	}
}

func TestSyncReplicaSet(t *testing.T) {
	tests := []struct {
		name     string
		rs       func() *appsv1.ReplicaSet
		pods     func(rs *appsv1.ReplicaSet) []*corev1.Pod
		gates    map[featuregate.Feature]bool
		prepare  func(f *fixture)
		failPods bool

		wantErr     bool
		wantCreates int
		wantDeletes int
		wantPatches int
		// wantStatus is the status written, nil for no write.
		wantStatus *appsv1.ReplicaSetStatus
	}{
		{
			name:        "creates missing pods and writes status",
			rs:          func() *appsv1.ReplicaSet { return newRS("a", 2) },
			wantCreates: 2,
			wantStatus:  &appsv1.ReplicaSetStatus{ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](0)},
		},
		{
			name: "unsatisfied expectations skip manage but still write status",
			rs:   func() *appsv1.ReplicaSet { return newRS("a", 3) },
			pods: func(rs *appsv1.ReplicaSet) []*corev1.Pod {
				return []*corev1.Pod{ready(newPod("p0", rs), t0)}
			},
			prepare: func(f *fixture) { f.c.expectations.ExpectCreations(f.ctx, "ns/a", 2) },
			wantStatus: &appsv1.ReplicaSetStatus{Replicas: 1, FullyLabeledReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
				ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](0)},
		},
		{
			name: "expired expectations let manage run again",
			rs:   func() *appsv1.ReplicaSet { return newRS("a", 1) },
			prepare: func(f *fixture) {
				f.c.expectations.ExpectCreations(f.ctx, "ns/a", 2)
				f.clock.Step(5*time.Minute + time.Nanosecond)
			},
			wantCreates: 1,
			wantStatus:  &appsv1.ReplicaSetStatus{ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](0)},
		},
		{
			name: "deletes surplus pods",
			rs:   func() *appsv1.ReplicaSet { return newRS("a", 1) },
			pods: func(rs *appsv1.ReplicaSet) []*corev1.Pod {
				return []*corev1.Pod{newPod("p0", rs), newPod("p1", rs), newPod("p2", rs)}
			},
			wantDeletes: 2,
			wantStatus:  &appsv1.ReplicaSetStatus{Replicas: 3, FullyLabeledReplicas: 3, ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](0)},
		},
		{
			name: "being deleted: no manage",
			rs: func() *appsv1.ReplicaSet {
				rs := newRS("a", 3)
				rs.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
				return rs
			},
			wantStatus: &appsv1.ReplicaSetStatus{ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](0)},
		},
		{
			name: "matching orphan is adopted instead of creating a pod",
			rs:   func() *appsv1.ReplicaSet { return newRS("a", 1) },
			pods: func(*appsv1.ReplicaSet) []*corev1.Pod {
				pod := newPod("o", nil)
				pod.Labels = map[string]string{"app": "a"}
				return []*corev1.Pod{pod}
			},
			wantPatches: 1,
			wantStatus:  &appsv1.ReplicaSetStatus{Replicas: 1, FullyLabeledReplicas: 1, ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](0)},
		},
		{
			name: "terminating and finished pods are replaced; terminating ones counted",
			rs:   func() *appsv1.ReplicaSet { return newRS("a", 2) },
			pods: func(rs *appsv1.ReplicaSet) []*corev1.Pod {
				terminatingOrphan := deleting(newPod("t-orphan", nil))
				terminatingOrphan.Labels = map[string]string{"app": "a"}
				return []*corev1.Pod{
					deleting(newPod("t", rs)),
					withPhase(newPod("f", rs), corev1.PodFailed),
					terminatingOrphan,
				}
			},
			wantCreates: 2,
			wantStatus:  &appsv1.ReplicaSetStatus{ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](1)},
		},
		{
			name:  "terminatingReplicas is omitted with the gate off",
			gates: map[featuregate.Feature]bool{features.DeploymentReplicaSetTerminatingReplicas: false},
			rs:    func() *appsv1.ReplicaSet { return newRS("a", 1) },
			pods: func(rs *appsv1.ReplicaSet) []*corev1.Pod {
				return []*corev1.Pod{newPod("p", rs), deleting(newPod("t", rs))}
			},
			wantStatus: &appsv1.ReplicaSetStatus{Replicas: 1, FullyLabeledReplicas: 1, ObservedGeneration: 1},
		},
		{
			name: "unchanged status is not written",
			rs: func() *appsv1.ReplicaSet {
				rs := newRS("a", 1)
				rs.Status = appsv1.ReplicaSetStatus{Replicas: 1, FullyLabeledReplicas: 1, ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](0)}
				return rs
			},
			pods: func(rs *appsv1.ReplicaSet) []*corev1.Pod { return []*corev1.Pod{newPod("p", rs)} },
		},
		{
			name: "invalid selector: nothing happens and no retry",
			rs: func() *appsv1.ReplicaSet {
				rs := newRS("a", 1)
				rs.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}
				return rs
			},
		},
		{
			name:     "failed create is written as ReplicaFailure, then returned",
			rs:       func() *appsv1.ReplicaSet { return newRS("a", 3) },
			failPods: true,
			wantErr:  true,
			wantStatus: &appsv1.ReplicaSetStatus{ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](0),
				Conditions: []appsv1.ReplicaSetCondition{{
					Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
					LastTransitionTime: metav1.NewTime(t0),
				}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := tc.rs()
			var pods []*corev1.Pod
			if tc.pods != nil {
				pods = tc.pods(rs)
			}
			f := newFixture(t, fixtureOption{gates: tc.gates}, []*appsv1.ReplicaSet{rs}, pods)
			reactor := &podCreateReactor{}
			if tc.failPods {
				reactor.fail = func(int) error { return quotaExceeded() }
			}
			reactor.install(f.client)
			if tc.prepare != nil {
				tc.prepare(f)
			}

			err := f.c.syncReplicaSet(f.ctx, "ns/a")

			if (err != nil) != tc.wantErr {
				t.Fatalf("sync error = %v, want error %v", err, tc.wantErr)
			}
			if got := len(reactor.pods); got != tc.wantCreates {
				t.Errorf("creates = %d, want %d", got, tc.wantCreates)
			}
			if got := len(f.actions("delete", "pods")); got != tc.wantDeletes {
				t.Errorf("deletes = %d, want %d", got, tc.wantDeletes)
			}
			if got := len(f.actions("patch", "pods")); got != tc.wantPatches {
				t.Errorf("patches = %d, want %d", got, tc.wantPatches)
			}
			updates := f.statusUpdates()
			if tc.wantStatus == nil {
				if len(updates) != 0 {
					t.Errorf("status written %d times, want none: %+v", len(updates), updates[0].Status)
				}
				return
			}
			if len(updates) != 1 {
				t.Fatalf("status writes = %d, want 1", len(updates))
			}
			// The message carries the API error; check it separately.
			got := updates[0].Status.DeepCopy()
			for i := range got.Conditions {
				if got.Conditions[i].Message == "" {
					t.Errorf("condition %s has an empty message", got.Conditions[i].Type)
				}
				got.Conditions[i].Message = ""
			}
			if diff := cmp.Diff(*tc.wantStatus, *got); diff != "" {
				t.Errorf("written status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSyncDeletedReplicaSetClearsState(t *testing.T) {
	f := newFixture(t, fixtureOption{}, nil, nil)
	f.c.expectations.ExpectDeletions(f.ctx, "ns/gone", []string{"ns/p"})
	f.c.writes.wrote("ns/gone", "uid", podsResource, "5")

	if err := f.c.syncReplicaSet(f.ctx, "ns/gone"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if _, _, exists := f.c.expectations.Get("ns/gone"); exists {
		t.Error("expectations still recorded for a deleted ReplicaSet")
	}
	if pending := f.c.expectations.PendingDeletions("ns/gone"); len(pending) != 0 {
		t.Errorf("pending deletions still recorded: %v", pending)
	}
	if _, ok := f.c.writes.records["ns/gone"]; ok {
		t.Error("write record kept for a deleted ReplicaSet")
	}
}

func TestSyncRequeuesForAvailability(t *testing.T) {
	tests := []struct {
		name        string
		pods        func(rs *appsv1.ReplicaSet) []*corev1.Pod
		wantDelayed []queuetest.Delayed
	}{
		{
			name: "ready 4s of 10: check again in 6s",
			pods: func(rs *appsv1.ReplicaSet) []*corev1.Pod {
				return []*corev1.Pod{ready(newPod("p", rs), t0.Add(-4*time.Second))}
			},
			wantDelayed: []queuetest.Delayed{{Key: "ns/a", Delay: 6 * time.Second}},
		},
		{
			name: "the pod closest to available decides",
			pods: func(rs *appsv1.ReplicaSet) []*corev1.Pod {
				return []*corev1.Pod{
					ready(newPod("p", rs), t0.Add(-2*time.Second)),
					ready(newPod("q", rs), t0.Add(-7*time.Second)),
				}
			},
			wantDelayed: []queuetest.Delayed{{Key: "ns/a", Delay: 3 * time.Second}},
		},
		{
			name: "unknown transition time: fall back to minReadySeconds",
			pods: func(rs *appsv1.ReplicaSet) []*corev1.Pod {
				return []*corev1.Pod{ready(newPod("p", rs), time.Time{})}
			},
			wantDelayed: []queuetest.Delayed{{Key: "ns/a", Delay: 10 * time.Second}},
		},
		{
			name: "all ready pods available: no requeue",
			pods: func(rs *appsv1.ReplicaSet) []*corev1.Pod {
				return []*corev1.Pod{ready(newPod("p", rs), t0.Add(-time.Minute))}
			},
		},
		{
			name: "no ready pods: no requeue",
			pods: func(rs *appsv1.ReplicaSet) []*corev1.Pod {
				return []*corev1.Pod{newPod("p", rs)}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := newRS("a", 0)
			rs.Spec.MinReadySeconds = 10
			pods := tc.pods(rs)
			rs.Spec.Replicas = ptr.To(int32(len(pods)))
			f := newFixture(t, fixtureOption{}, []*appsv1.ReplicaSet{rs}, pods)

			if err := f.c.syncReplicaSet(f.ctx, "ns/a"); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if diff := cmp.Diff(tc.wantDelayed, f.queue.Delayed()); diff != "" {
				t.Errorf("delayed keys (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSyncClaimErrorStopsBeforeManageAndStatus(t *testing.T) {
	rs := newRS("a", 2)
	orphan := newPod("o", nil)
	orphan.Labels = map[string]string{"app": "a"}
	f := newFixture(t, fixtureOption{}, []*appsv1.ReplicaSet{rs}, []*corev1.Pod{orphan})
	// The live recheck before adoption finds the ReplicaSet being deleted.
	f.client.PrependReactor("get", "replicasets", func(clienttesting.Action) (bool, runtime.Object, error) {
		live := rs.DeepCopy()
		live.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
		return true, live, nil
	})
	reactor := &podCreateReactor{}
	reactor.install(f.client)

	err := f.c.syncReplicaSet(f.ctx, "ns/a")
	if err == nil || !strings.Contains(err.Error(), "is being deleted") {
		t.Fatalf("sync error = %v, want the adoption recheck's error", err)
	}
	if reactor.count() != 0 || len(f.statusUpdates()) != 0 {
		t.Errorf("creates %d, status writes %d after a claim error; want none", reactor.count(), len(f.statusUpdates()))
	}
}

// deleteBarrier holds every DeletePod call until the expected number of calls are waiting
// at the same time, then lets them all through.
type deleteBarrier struct {
	podcontrol.Interface

	mu       sync.Mutex
	waiting  int
	released chan struct{}
}

func (b *deleteBarrier) DeletePod(ctx context.Context, namespace, name string, owner runtime.Object) error {
	b.mu.Lock()
	b.waiting--
	if b.waiting == 0 {
		close(b.released)
	}
	b.mu.Unlock()
	select {
	case <-b.released:
	case <-time.After(10 * time.Second):
		return errors.New("deletes were not issued in parallel")
	}
	return b.Interface.DeletePod(ctx, namespace, name, owner)
}
