package deploymentutil

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestSetCondition(t *testing.T) {
	before, now := at(0), at(100)
	progressing := func(s corev1.ConditionStatus, reason, msg string, ts int) appsv1.DeploymentCondition {
		return *NewCondition(appsv1.DeploymentProgressing, s, reason, msg, at(ts))
	}
	available := *NewCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinimumReplicasAvailable, MessageMinimumReplicasAvailable, before)

	tests := []struct {
		name     string
		existing []appsv1.DeploymentCondition
		set      appsv1.DeploymentCondition
		want     []appsv1.DeploymentCondition
	}{
		{
			name:     "new type is appended",
			existing: []appsv1.DeploymentCondition{available},
			set:      progressing(corev1.ConditionTrue, ReasonNewReplicaSetCreated, "Created", 100),
			want:     []appsv1.DeploymentCondition{available, progressing(corev1.ConditionTrue, ReasonNewReplicaSetCreated, "Created", 100)},
		},
		{
			name:     "same status and reason: nothing changes, message and times kept",
			existing: []appsv1.DeploymentCondition{progressing(corev1.ConditionTrue, ReasonReplicaSetUpdated, "old message", 0), available},
			set:      progressing(corev1.ConditionTrue, ReasonReplicaSetUpdated, "new message", 100),
			want:     []appsv1.DeploymentCondition{progressing(corev1.ConditionTrue, ReasonReplicaSetUpdated, "old message", 0), available},
		},
		{
			name:     "same status, new reason: replaced, transition time kept, moved to the end",
			existing: []appsv1.DeploymentCondition{progressing(corev1.ConditionTrue, ReasonReplicaSetUpdated, "progressing", 0), available},
			set:      progressing(corev1.ConditionTrue, ReasonNewReplicaSetAvailable, "done", 100),
			want: []appsv1.DeploymentCondition{available, {
				Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: ReasonNewReplicaSetAvailable,
				Message: "done", LastUpdateTime: now, LastTransitionTime: before,
			}},
		},
		{
			name:     "status changes: both times new",
			existing: []appsv1.DeploymentCondition{progressing(corev1.ConditionTrue, ReasonReplicaSetUpdated, "progressing", 0)},
			set:      progressing(corev1.ConditionFalse, ReasonProgressDeadlineExceeded, "timed out", 100),
			want:     []appsv1.DeploymentCondition{progressing(corev1.ConditionFalse, ReasonProgressDeadlineExceeded, "timed out", 100)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status := &appsv1.DeploymentStatus{Conditions: tc.existing}
			SetCondition(status, tc.set)
			if diff := cmp.Diff(tc.want, status.Conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetConditionDoesNotWriteThroughSharedSlice(t *testing.T) {
	// A status copied from an informer's object shares its backing array.
	cached := []appsv1.DeploymentCondition{
		*NewCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonReplicaSetUpdated, "", at(0)),
		*NewCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinimumReplicasAvailable, "", at(0)),
	}
	snapshot := append([]appsv1.DeploymentCondition(nil), cached...)
	status := &appsv1.DeploymentStatus{Conditions: cached}
	SetCondition(status, *NewCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonProgressDeadlineExceeded, "", at(5)))
	RemoveCondition(status, appsv1.DeploymentAvailable)
	if diff := cmp.Diff(snapshot, cached); diff != "" {
		t.Errorf("cached conditions modified:\n%s", diff)
	}
}

func TestGetAndRemoveCondition(t *testing.T) {
	status := appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{
		*NewCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinimumReplicasAvailable, "", at(0)),
		*NewCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonReplicaSetUpdated, "", at(0)),
	}}
	c := GetCondition(status, appsv1.DeploymentProgressing)
	if c == nil || c.Reason != ReasonReplicaSetUpdated {
		t.Fatalf("GetCondition = %+v", c)
	}
	c.Reason = "Mutated"
	if status.Conditions[1].Reason != ReasonReplicaSetUpdated {
		t.Error("GetCondition returned a pointer into the status")
	}
	if GetCondition(status, appsv1.DeploymentReplicaFailure) != nil {
		t.Error("GetCondition of a missing type is not nil")
	}

	RemoveCondition(&status, appsv1.DeploymentAvailable)
	if len(status.Conditions) != 1 || status.Conditions[0].Type != appsv1.DeploymentProgressing {
		t.Errorf("after remove: %+v", status.Conditions)
	}
	RemoveCondition(&status, appsv1.DeploymentReplicaFailure)
	if len(status.Conditions) != 1 {
		t.Errorf("removing a missing type changed the list: %+v", status.Conditions)
	}
}

func TestReplicaSetToDeploymentCondition(t *testing.T) {
	got := ReplicaSetToDeploymentCondition(appsv1.ReplicaSetCondition{
		Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
		LastTransitionTime: at(7), Reason: "FailedCreate", Message: "quota",
	})
	want := appsv1.DeploymentCondition{
		Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue,
		LastUpdateTime: at(7), LastTransitionTime: at(7), Reason: "FailedCreate", Message: "quota",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
