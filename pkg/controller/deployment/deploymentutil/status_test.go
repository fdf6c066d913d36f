package deploymentutil

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/conditions"
)

func terminating(n *int32, observedGeneration int64) rsOption {
	return func(rs *appsv1.ReplicaSet) {
		rs.Status.TerminatingReplicas = n
		rs.Status.ObservedGeneration = observedGeneration
	}
}

func TestCalculateStatusCounts(t *testing.T) {
	d := rolling(8, pct25, pct25)
	d.Generation = 4
	d.Status.CollisionCount = ptr.To[int32](2)
	old := replicaSet("old", 0, 3, status(4, 3, 2))
	newRS := replicaSet("new", 10, 5, status(3, 2, 1))
	got := CalculateStatus(d, []*appsv1.ReplicaSet{old, newRS}, newRS, false, at(50))
	want := appsv1.DeploymentStatus{
		ObservedGeneration:  4,
		Replicas:            7,
		UpdatedReplicas:     3,
		ReadyReplicas:       5,
		AvailableReplicas:   3,
		UnavailableReplicas: 5,
		CollisionCount:      ptr.To[int32](2),
		Conditions: []appsv1.DeploymentCondition{NewCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse,
			ReasonMinimumReplicasUnavailable, MessageMinimumReplicasUnavailable, at(50))},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}

	// Scaling down: more available than asked for is not negative unavailability.
	down := CalculateStatus(rolling(2, pct25, pct25), []*appsv1.ReplicaSet{replicaSet("rs", 0, 2, status(4, 4, 4))}, nil, false, at(50))
	if down.UnavailableReplicas != 0 || down.UpdatedReplicas != 0 {
		t.Errorf("scale down: unavailable %d updated %d, want 0 0", down.UnavailableReplicas, down.UpdatedReplicas)
	}
}

func TestCalculateStatusTerminatingReplicas(t *testing.T) {
	tests := []struct {
		name             string
		rsList           []*appsv1.ReplicaSet
		countTerminating bool
		want             *int32
	}{
		{name: "sum over synced ReplicaSets", countTerminating: true, want: ptr.To[int32](5), rsList: []*appsv1.ReplicaSet{
			replicaSet("a", 0, 1, terminating(ptr.To[int32](2), 1)),
			replicaSet("b", 0, 1, terminating(ptr.To[int32](3), 4)),
		}},
		{name: "never-synced ReplicaSet is skipped", countTerminating: true, want: ptr.To[int32](2), rsList: []*appsv1.ReplicaSet{
			replicaSet("a", 0, 1, terminating(ptr.To[int32](2), 1)),
			replicaSet("fresh", 0, 1, terminating(nil, 0)),
		}},
		{name: "synced ReplicaSet without the field makes it unknown", countTerminating: true, want: nil, rsList: []*appsv1.ReplicaSet{
			replicaSet("a", 0, 1, terminating(ptr.To[int32](2), 1)),
			replicaSet("old-controller", 0, 1, terminating(nil, 3)),
		}},
		{name: "zero reported by a fresh ReplicaSet counts", countTerminating: true, want: ptr.To[int32](0), rsList: []*appsv1.ReplicaSet{
			replicaSet("fresh", 0, 1, terminating(ptr.To[int32](0), 0)),
		}},
		{name: "no ReplicaSets: zero", countTerminating: true, want: ptr.To[int32](0), rsList: nil},
		{name: "gate off", countTerminating: false, want: nil, rsList: []*appsv1.ReplicaSet{
			replicaSet("a", 0, 1, terminating(ptr.To[int32](2), 1)),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := CalculateStatus(rolling(1, pct25, pct25), tc.rsList, nil, tc.countTerminating, at(0)).TerminatingReplicas
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("terminatingReplicas (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCalculateStatusAvailableCondition(t *testing.T) {
	tests := []struct {
		name       string
		d          *appsv1.Deployment
		available  int32
		wantStatus corev1.ConditionStatus
		wantReason string
	}{
		{name: "at minAvailable", d: rolling(10, pct25, pct25), available: 8, wantStatus: corev1.ConditionTrue, wantReason: ReasonMinimumReplicasAvailable},
		{name: "below minAvailable", d: rolling(10, pct25, pct25), available: 7, wantStatus: corev1.ConditionFalse, wantReason: ReasonMinimumReplicasUnavailable},
		{name: "Recreate needs every replica", d: recreate(3), available: 2, wantStatus: corev1.ConditionFalse, wantReason: ReasonMinimumReplicasUnavailable},
		{name: "Recreate with every replica", d: recreate(3), available: 3, wantStatus: corev1.ConditionTrue, wantReason: ReasonMinimumReplicasAvailable},
		{name: "scaled to zero", d: rolling(0, pct25, pct25), available: 0, wantStatus: corev1.ConditionTrue, wantReason: ReasonMinimumReplicasAvailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := replicaSet("rs", 0, *tc.d.Spec.Replicas, status(tc.available, tc.available, tc.available))
			got := conditions.Deployment.Get(CalculateStatus(tc.d, []*appsv1.ReplicaSet{rs}, rs, true, at(0)).Conditions, appsv1.DeploymentAvailable)
			if got == nil || got.Status != tc.wantStatus || got.Reason != tc.wantReason {
				t.Errorf("Available = %+v, want %s/%s", got, tc.wantStatus, tc.wantReason)
			}
		})
	}
}

func TestCalculateStatusKeepsOtherConditions(t *testing.T) {
	d := rolling(1, pct25, pct25)
	progressing := NewCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewReplicaSetAvailable, "done", at(1))
	custom := appsv1.DeploymentCondition{Type: "example.com/Custom", Status: corev1.ConditionTrue, Reason: "Mine"}
	availableSince := NewCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinimumReplicasAvailable, MessageMinimumReplicasAvailable, at(2))
	d.Status.Conditions = []appsv1.DeploymentCondition{progressing, custom, availableSince}
	snapshot := append([]appsv1.DeploymentCondition(nil), d.Status.Conditions...)

	rs := replicaSet("rs", 0, 1, status(1, 1, 1))
	got := CalculateStatus(d, []*appsv1.ReplicaSet{rs}, rs, true, at(99))
	if diff := cmp.Diff(snapshot, got.Conditions); diff != "" {
		t.Errorf("unchanged availability must keep every condition as is (-want +got):\n%s", diff)
	}

	rs.Status.AvailableReplicas = 0
	got = CalculateStatus(d, []*appsv1.ReplicaSet{rs}, rs, true, at(99))
	want := []appsv1.DeploymentCondition{progressing, custom, NewCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse,
		ReasonMinimumReplicasUnavailable, MessageMinimumReplicasUnavailable, at(99))}
	if diff := cmp.Diff(want, got.Conditions); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(snapshot, d.Status.Conditions); diff != "" {
		t.Errorf("Deployment's conditions modified:\n%s", diff)
	}
}

func TestDeploymentComplete(t *testing.T) {
	d := rolling(3, pct25, pct25)
	d.Generation = 2
	tests := []struct {
		name   string
		status appsv1.DeploymentStatus
		want   bool
	}{
		{name: "complete", status: appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3, ObservedGeneration: 2}, want: true},
		{name: "old pods remain", status: appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 3, AvailableReplicas: 3, ObservedGeneration: 2}, want: false},
		{name: "not all updated", status: appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 2, AvailableReplicas: 3, ObservedGeneration: 2}, want: false},
		{name: "not all available", status: appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 2, ObservedGeneration: 2}, want: false},
		{name: "older generation", status: appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3, ObservedGeneration: 1}, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := DeploymentComplete(d, &tc.status); got != tc.want {
				t.Errorf("DeploymentComplete = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDeploymentProgressing(t *testing.T) {
	d := rolling(10, pct25, pct25)
	d.Status = appsv1.DeploymentStatus{Replicas: 12, UpdatedReplicas: 4, ReadyReplicas: 9, AvailableReplicas: 8}
	tests := []struct {
		name   string
		status appsv1.DeploymentStatus
		want   bool
	}{
		{name: "no change", status: d.Status, want: false},
		{name: "more updated", status: appsv1.DeploymentStatus{Replicas: 13, UpdatedReplicas: 5, ReadyReplicas: 9, AvailableReplicas: 8}, want: true},
		{name: "fewer old", status: appsv1.DeploymentStatus{Replicas: 11, UpdatedReplicas: 4, ReadyReplicas: 9, AvailableReplicas: 8}, want: true},
		{name: "more ready", status: appsv1.DeploymentStatus{Replicas: 12, UpdatedReplicas: 4, ReadyReplicas: 10, AvailableReplicas: 8}, want: true},
		{name: "more available", status: appsv1.DeploymentStatus{Replicas: 12, UpdatedReplicas: 4, ReadyReplicas: 9, AvailableReplicas: 9}, want: true},
		{name: "only losses", status: appsv1.DeploymentStatus{Replicas: 13, UpdatedReplicas: 4, ReadyReplicas: 8, AvailableReplicas: 7}, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := DeploymentProgressing(d, &tc.status); got != tc.want {
				t.Errorf("DeploymentProgressing = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDeploymentTimedOut(t *testing.T) {
	withDeadline := func(seconds *int32) *appsv1.Deployment {
		d := rolling(1, pct25, pct25)
		d.Spec.ProgressDeadlineSeconds = seconds
		return d
	}
	progressing := func(reason string, updatedSec int) *appsv1.DeploymentStatus {
		c := NewCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, reason, "", at(updatedSec))
		return &appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{c}}
	}
	now := at(100).Time
	tests := []struct {
		name   string
		d      *appsv1.Deployment
		status *appsv1.DeploymentStatus
		want   bool
	}{
		{name: "past the deadline", d: withDeadline(ptr.To[int32](30)), status: progressing(ReasonReplicaSetUpdated, 69), want: true},
		{name: "exactly at the deadline", d: withDeadline(ptr.To[int32](30)), status: progressing(ReasonReplicaSetUpdated, 70), want: false},
		{name: "within the deadline", d: withDeadline(ptr.To[int32](30)), status: progressing(ReasonReplicaSetUpdated, 80), want: false},
		{name: "no deadline", d: withDeadline(nil), status: progressing(ReasonReplicaSetUpdated, 0), want: false},
		{name: "MaxInt32 is no deadline", d: withDeadline(ptr.To[int32](math.MaxInt32)), status: progressing(ReasonReplicaSetUpdated, 0), want: false},
		{name: "no Progressing condition", d: withDeadline(ptr.To[int32](30)), status: &appsv1.DeploymentStatus{}, want: false},
		{name: "complete never times out", d: withDeadline(ptr.To[int32](30)), status: progressing(ReasonNewReplicaSetAvailable, 0), want: false},
		{name: "timed out stays timed out", d: withDeadline(ptr.To[int32](30)), status: progressing(ReasonProgressDeadlineExceeded, 99), want: true},
		{name: "resumed restarts the clock", d: withDeadline(ptr.To[int32](30)), status: progressing(ReasonDeploymentResumed, 90), want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := DeploymentTimedOut(tc.d, tc.status, now); got != tc.want {
				t.Errorf("DeploymentTimedOut = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHasLimits(t *testing.T) {
	d := rolling(1, pct25, pct25)
	if HasProgressDeadline(d) || HasRevisionHistoryLimit(d) {
		t.Error("unset fields reported as set")
	}
	d.Spec.ProgressDeadlineSeconds, d.Spec.RevisionHistoryLimit = ptr.To[int32](math.MaxInt32), ptr.To[int32](math.MaxInt32)
	if HasProgressDeadline(d) || HasRevisionHistoryLimit(d) {
		t.Error("MaxInt32 reported as a limit")
	}
	d.Spec.ProgressDeadlineSeconds, d.Spec.RevisionHistoryLimit = ptr.To[int32](600), ptr.To[int32](0)
	if !HasProgressDeadline(d) || !HasRevisionHistoryLimit(d) {
		t.Error("real limits not reported")
	}
}

func TestCleanupCandidates(t *testing.T) {
	withLimit := func(limit *int32) *appsv1.Deployment {
		d := rolling(1, pct25, pct25)
		d.Spec.RevisionHistoryLimit = limit
		return d
	}
	scaledDown := func(rev string, sec int) *appsv1.ReplicaSet {
		return replicaSet("rev"+rev, sec, 0, revision(rev))
	}
	deleting := scaledDown("4", 4)
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(time.Unix(0, 0)))
	withPods := scaledDown("1", 1)
	withPods.Status.Replicas = 2
	stale := scaledDown("2", 2)
	stale.Generation, stale.Status.ObservedGeneration = 3, 2
	stillWanted := replicaSet("rev3", 3, 1, revision("3"))

	tests := []struct {
		name string
		d    *appsv1.Deployment
		olds []*appsv1.ReplicaSet
		want []string
	}{
		{name: "no limit keeps all", d: withLimit(nil), olds: []*appsv1.ReplicaSet{scaledDown("1", 1), scaledDown("2", 2)}, want: nil},
		{name: "MaxInt32 keeps all", d: withLimit(ptr.To[int32](math.MaxInt32)), olds: []*appsv1.ReplicaSet{scaledDown("1", 1)}, want: nil},
		{
			name: "oldest revisions beyond the limit, in revision order",
			d:    withLimit(ptr.To[int32](1)),
			olds: []*appsv1.ReplicaSet{scaledDown("3", 1), scaledDown("10", 2), scaledDown("1", 3), scaledDown("2", 4)},
			want: []string{"rev1", "rev2", "rev3"},
		},
		{name: "limit 0 deletes every idle old ReplicaSet", d: withLimit(ptr.To[int32](0)), olds: []*appsv1.ReplicaSet{scaledDown("2", 2), scaledDown("1", 1)}, want: []string{"rev1", "rev2"}},
		{name: "within the limit", d: withLimit(ptr.To[int32](2)), olds: []*appsv1.ReplicaSet{scaledDown("1", 1), scaledDown("2", 2)}, want: nil},
		{
			name: "ReplicaSets being deleted do not count",
			d:    withLimit(ptr.To[int32](2)),
			olds: []*appsv1.ReplicaSet{scaledDown("1", 1), scaledDown("2", 2), deleting},
			want: nil,
		},
		{
			name: "ReplicaSets with pods, wanted pods or stale status are skipped, not replaced",
			d:    withLimit(ptr.To[int32](1)),
			olds: []*appsv1.ReplicaSet{withPods, stale, stillWanted, scaledDown("5", 5), scaledDown("6", 6)},
			want: []string{"rev5"},
		},
		{
			name: "unparsable revisions fall back to creation time",
			d:    withLimit(ptr.To[int32](1)),
			olds: []*appsv1.ReplicaSet{scaledDown("y", 9), scaledDown("x", 1)},
			want: []string{"revx"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := CleanupCandidates(tc.d, tc.olds)
			if diff := cmp.Diff(tc.want, names(got), cmpEmpty); diff != "" {
				t.Errorf("candidates (-want +got):\n%s", diff)
			}
		})
	}
}
