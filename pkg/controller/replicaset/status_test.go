package replicaset

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

func TestCalculateStatusCounts(t *testing.T) {
	rs := newRS("a", 5)
	rs.Spec.MinReadySeconds = 60
	// The template carries one label more than the selector requires.
	rs.Spec.Template.Labels = map[string]string{"app": "a", "extra": "yes"}
	fullyLabeled := func(p *corev1.Pod) *corev1.Pod { p.Labels["extra"] = "yes"; return p }

	tests := []struct {
		name             string
		claimed          []*corev1.Pod
		terminating      []*corev1.Pod
		countTerminating bool
		want             appsv1.ReplicaSetStatus
	}{
		{
			name:             "no pods",
			countTerminating: true,
			want:             appsv1.ReplicaSetStatus{ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](0)},
		},
		{
			name: "ready, available and fully labeled are counted separately",
			claimed: []*corev1.Pod{
				newPod("not-ready", rs),
				fullyLabeled(ready(newPod("ready-new", rs), t0.Add(-59*time.Second))),
				fullyLabeled(ready(newPod("ready-old", rs), t0.Add(-60*time.Second))),
				ready(newPod("ready-unknown-since", rs), time.Time{}),
			},
			terminating:      []*corev1.Pod{deleting(newPod("t1", rs)), deleting(newPod("t2", rs))},
			countTerminating: true,
			want: appsv1.ReplicaSetStatus{
				Replicas: 4, FullyLabeledReplicas: 2, ReadyReplicas: 3, AvailableReplicas: 1,
				ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](2),
			},
		},
		{
			name:        "terminatingReplicas is nil when not counted",
			claimed:     []*corev1.Pod{newPod("p", rs)},
			terminating: []*corev1.Pod{deleting(newPod("t1", rs))},
			want:        appsv1.ReplicaSetStatus{Replicas: 1, ObservedGeneration: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cached := rs.DeepCopy()
			// A stale count from an earlier gate setting must not survive.
			cached.Status.TerminatingReplicas = ptr.To[int32](7)
			got := calculateStatus(cached, tc.claimed, tc.terminating, nil, t0, tc.countTerminating)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCalculateStatusReplicaFailure(t *testing.T) {
	earlier := metav1.NewTime(t0.Add(-time.Hour))
	userCondition := appsv1.ReplicaSetCondition{Type: "Custom", Status: corev1.ConditionTrue, Reason: "Mine", LastTransitionTime: earlier}
	existingFailure := appsv1.ReplicaSetCondition{
		Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
		Message: "old message", LastTransitionTime: earlier,
	}
	quota := errors.New(`pods "a-x" is forbidden: exceeded quota`)

	tests := []struct {
		name     string
		replicas int32
		claimed  int
		existing []appsv1.ReplicaSetCondition
		err      error
		want     []appsv1.ReplicaSetCondition
	}{
		{
			name: "create failure adds FailedCreate", replicas: 3, claimed: 1, err: quota,
			existing: []appsv1.ReplicaSetCondition{userCondition},
			want: []appsv1.ReplicaSetCondition{userCondition, {
				Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
				Message: quota.Error(), LastTransitionTime: metav1.NewTime(t0),
			}},
		},
		{
			name: "delete failure adds FailedDelete", replicas: 1, claimed: 3, err: quota,
			want: []appsv1.ReplicaSetCondition{{
				Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedDelete",
				Message: quota.Error(), LastTransitionTime: metav1.NewTime(t0),
			}},
		},
		{
			name: "an existing condition is not refreshed", replicas: 3, claimed: 1, err: errors.New("new message"),
			existing: []appsv1.ReplicaSetCondition{existingFailure},
			want:     []appsv1.ReplicaSetCondition{existingFailure},
		},
		{
			name: "an existing condition is kept even when the failure changes kind", replicas: 1, claimed: 3, err: errors.New("delete failed"),
			existing: []appsv1.ReplicaSetCondition{existingFailure},
			want:     []appsv1.ReplicaSetCondition{existingFailure},
		},
		{
			name: "success removes the condition and keeps others", replicas: 2, claimed: 2,
			existing: []appsv1.ReplicaSetCondition{userCondition, existingFailure},
			want:     []appsv1.ReplicaSetCondition{userCondition},
		},
		{
			name: "success without a condition changes nothing", replicas: 2, claimed: 2,
			existing: []appsv1.ReplicaSetCondition{userCondition},
			want:     []appsv1.ReplicaSetCondition{userCondition},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := newRS("a", tc.replicas)
			rs.Status.Conditions = tc.existing
			var claimed []*corev1.Pod
			for range tc.claimed {
				claimed = append(claimed, newPod("p", rs))
			}
			got := calculateStatus(rs, claimed, nil, tc.err, t0, true)
			if diff := cmp.Diff(tc.want, got.Conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if len(rs.Status.Conditions) != len(tc.existing) {
				t.Error("calculateStatus modified the cached ReplicaSet's conditions")
			}
		})
	}
}

func TestStatusIsCurrent(t *testing.T) {
	base := func() *appsv1.ReplicaSet {
		rs := newRS("a", 2)
		rs.Generation = 3
		rs.Status = appsv1.ReplicaSetStatus{
			Replicas: 2, FullyLabeledReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1,
			TerminatingReplicas: ptr.To[int32](0), ObservedGeneration: 3,
			Conditions: []appsv1.ReplicaSetCondition{{Type: "Custom", Status: corev1.ConditionTrue}},
		}
		return rs
	}
	tests := []struct {
		name          string
		changeRS      func(rs *appsv1.ReplicaSet)
		changeStatus  func(s *appsv1.ReplicaSetStatus)
		wantUnchanged bool
	}{
		{name: "identical", wantUnchanged: true},
		{name: "observedGeneration is not compared itself", changeStatus: func(s *appsv1.ReplicaSetStatus) { s.ObservedGeneration = 0 }, wantUnchanged: true},
		{name: "replicas", changeStatus: func(s *appsv1.ReplicaSetStatus) { s.Replicas = 3 }},
		{name: "fullyLabeledReplicas", changeStatus: func(s *appsv1.ReplicaSetStatus) { s.FullyLabeledReplicas = 1 }},
		{name: "readyReplicas", changeStatus: func(s *appsv1.ReplicaSetStatus) { s.ReadyReplicas = 2 }},
		{name: "availableReplicas", changeStatus: func(s *appsv1.ReplicaSetStatus) { s.AvailableReplicas = 0 }},
		{name: "terminatingReplicas value", changeStatus: func(s *appsv1.ReplicaSetStatus) { s.TerminatingReplicas = ptr.To[int32](1) }},
		{name: "terminatingReplicas 0 to nil", changeStatus: func(s *appsv1.ReplicaSetStatus) { s.TerminatingReplicas = nil }},
		{
			name:          "terminatingReplicas nil equals nil",
			changeRS:      func(rs *appsv1.ReplicaSet) { rs.Status.TerminatingReplicas = nil },
			changeStatus:  func(s *appsv1.ReplicaSetStatus) { s.TerminatingReplicas = nil },
			wantUnchanged: true,
		},
		{name: "new generation", changeRS: func(rs *appsv1.ReplicaSet) { rs.Generation = 4 }},
		{name: "conditions", changeStatus: func(s *appsv1.ReplicaSetStatus) { s.Conditions[0].Message = "x" }},
		{
			name:          "no conditions, nil or empty",
			changeRS:      func(rs *appsv1.ReplicaSet) { rs.Status.Conditions = nil },
			changeStatus:  func(s *appsv1.ReplicaSetStatus) { s.Conditions = []appsv1.ReplicaSetCondition{} },
			wantUnchanged: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := base()
			if tc.changeRS != nil {
				tc.changeRS(rs)
			}
			status := *base().Status.DeepCopy()
			if tc.changeStatus != nil {
				tc.changeStatus(&status)
			}
			if got := statusIsCurrent(rs, status); got != tc.wantUnchanged {
				t.Errorf("statusIsCurrent = %v, want %v", got, tc.wantUnchanged)
			}
		})
	}
}

func TestWriteStatus(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "a", errors.New("stale"))
	tests := []struct {
		name         string
		updateErrors []error // per UpdateStatus call
		getErr       error
		wantErr      string
		wantUpdates  int
		wantGets     int
	}{
		{name: "written", wantUpdates: 1},
		{name: "retried once on the live object", updateErrors: []error{conflict}, wantUpdates: 2, wantGets: 1},
		{name: "second failure is returned", updateErrors: []error{conflict, conflict}, wantUpdates: 2, wantGets: 1, wantErr: "updating status of ReplicaSet ns/a"},
		{name: "failing GET is returned", updateErrors: []error{conflict}, getErr: errors.New("no route"), wantUpdates: 1, wantGets: 1, wantErr: "no route"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := newRS("a", 1)
			rs.Generation = 4
			live := rs.DeepCopy()
			live.ResourceVersion = "9"
			live.Labels = map[string]string{"live": "yes"}
			f := newFixture(t, fixtureOption{}, []*appsv1.ReplicaSet{rs}, nil)
			calls := 0
			f.client.PrependReactor("update", "replicasets", func(action clienttesting.Action) (bool, runtime.Object, error) {
				calls++
				if calls <= len(tc.updateErrors) {
					return true, nil, tc.updateErrors[calls-1]
				}
				return true, action.(clienttesting.UpdateAction).GetObject(), nil
			})
			f.client.PrependReactor("get", "replicasets", func(clienttesting.Action) (bool, runtime.Object, error) {
				if tc.getErr != nil {
					return true, nil, tc.getErr
				}
				return true, live.DeepCopy(), nil
			})
			newStatus := appsv1.ReplicaSetStatus{Replicas: 1}

			updated, err := f.c.writeStatus(f.ctx, rs.DeepCopy(), newStatus)

			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatalf("writeStatus: %v", err)
			}
			updates, gets := f.statusUpdates(), f.actions("get", "replicasets")
			if len(updates) != tc.wantUpdates || len(gets) != tc.wantGets {
				t.Errorf("status updates %d, gets %d; want %d, %d", len(updates), len(gets), tc.wantUpdates, tc.wantGets)
			}
			for _, u := range updates {
				if u.Status.ObservedGeneration != 4 || u.Status.Replicas != 1 {
					t.Errorf("sent status %+v, want replicas 1 and observedGeneration 4", u.Status)
				}
			}
			if tc.wantGets > 0 && len(updates) == 2 && updates[1].Labels["live"] != "yes" {
				t.Error("the retry was not sent on the live object")
			}
			if err == nil && updated.Status.Replicas != 1 {
				t.Errorf("returned ReplicaSet has status %+v", updated.Status)
			}
		})
	}
}
