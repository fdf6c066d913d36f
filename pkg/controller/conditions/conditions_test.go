package conditions

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var epoch = time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)

func at(sec int) metav1.Time { return metav1.NewTime(epoch.Add(time.Duration(sec) * time.Second)) }

func deploymentCondition(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, msg string, sec int) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: t, Status: s, Reason: reason, Message: msg, LastUpdateTime: at(sec), LastTransitionTime: at(sec)}
}

func TestSetDeploymentCondition(t *testing.T) {
	progressing := func(s corev1.ConditionStatus, reason, msg string, sec int) appsv1.DeploymentCondition {
		return deploymentCondition(appsv1.DeploymentProgressing, s, reason, msg, sec)
	}
	available := deploymentCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable", "", 0)

	tests := []struct {
		name     string
		existing []appsv1.DeploymentCondition
		set      appsv1.DeploymentCondition
		want     []appsv1.DeploymentCondition
	}{
		{
			name:     "new type is appended",
			existing: []appsv1.DeploymentCondition{available},
			set:      progressing(corev1.ConditionTrue, "NewReplicaSetCreated", "Created", 100),
			want:     []appsv1.DeploymentCondition{available, progressing(corev1.ConditionTrue, "NewReplicaSetCreated", "Created", 100)},
		},
		{
			name:     "same status and reason: nothing changes, message and times kept",
			existing: []appsv1.DeploymentCondition{progressing(corev1.ConditionTrue, "ReplicaSetUpdated", "old message", 0), available},
			set:      progressing(corev1.ConditionTrue, "ReplicaSetUpdated", "new message", 100),
			want:     []appsv1.DeploymentCondition{progressing(corev1.ConditionTrue, "ReplicaSetUpdated", "old message", 0), available},
		},
		{
			name:     "same status, new reason: replaced, transition time kept, moved to the end",
			existing: []appsv1.DeploymentCondition{progressing(corev1.ConditionTrue, "ReplicaSetUpdated", "progressing", 0), available},
			set:      progressing(corev1.ConditionTrue, "NewReplicaSetAvailable", "done", 100),
			want: []appsv1.DeploymentCondition{available, {
				Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
				Message: "done", LastUpdateTime: at(100), LastTransitionTime: at(0),
			}},
		},
		{
			name:     "status changes: both times new",
			existing: []appsv1.DeploymentCondition{progressing(corev1.ConditionTrue, "ReplicaSetUpdated", "progressing", 0)},
			set:      progressing(corev1.ConditionFalse, "ProgressDeadlineExceeded", "timed out", 100),
			want:     []appsv1.DeploymentCondition{progressing(corev1.ConditionFalse, "ProgressDeadlineExceeded", "timed out", 100)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Deployment.Set(tc.existing, tc.set)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetReplicaSetCondition(t *testing.T) {
	earlier := at(-3600)
	conds := []appsv1.ReplicaSetCondition{{
		Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: "first", LastTransitionTime: earlier,
	}}
	conds = ReplicaSet.Set(conds, appsv1.ReplicaSetCondition{
		Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: "second", LastTransitionTime: at(0),
	})
	if got := conds[0]; got.Message != "first" || !got.LastTransitionTime.Equal(&earlier) {
		t.Errorf("same status and reason replaced the condition: %+v", got)
	}
	conds = ReplicaSet.Set(conds, appsv1.ReplicaSetCondition{
		Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedDelete", Message: "third", LastTransitionTime: at(0),
	})
	if len(conds) != 1 || conds[0].Reason != "FailedDelete" || conds[0].Message != "third" || !conds[0].LastTransitionTime.Equal(&earlier) {
		t.Errorf("a new reason must replace the condition and keep its transition time: %+v", conds)
	}
}

func TestEditsDoNotWriteThroughSharedSlice(t *testing.T) {
	// A status copied from an informer's object shares its backing array.
	cached := []appsv1.DeploymentCondition{
		deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, "ReplicaSetUpdated", "", 0),
		deploymentCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable", "", 0),
	}
	snapshot := append([]appsv1.DeploymentCondition(nil), cached...)
	edited := Deployment.Set(cached, deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ProgressDeadlineExceeded", "", 5))
	Deployment.Remove(edited, appsv1.DeploymentAvailable)
	Deployment.Remove(cached, appsv1.DeploymentAvailable)
	if diff := cmp.Diff(snapshot, cached); diff != "" {
		t.Errorf("cached conditions modified:\n%s", diff)
	}
}

func TestGetAndRemove(t *testing.T) {
	conds := []appsv1.DeploymentCondition{
		deploymentCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable", "", 0),
		deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, "ReplicaSetUpdated", "", 0),
	}
	c := Deployment.Get(conds, appsv1.DeploymentProgressing)
	if c == nil || c.Reason != "ReplicaSetUpdated" {
		t.Fatalf("Get = %+v", c)
	}
	c.Reason = "Mutated"
	if conds[1].Reason != "ReplicaSetUpdated" {
		t.Error("Get returned a pointer into the list")
	}
	if Deployment.Get(conds, appsv1.DeploymentReplicaFailure) != nil {
		t.Error("Get of a missing type is not nil")
	}

	conds = Deployment.Remove(conds, appsv1.DeploymentAvailable)
	if len(conds) != 1 || conds[0].Type != appsv1.DeploymentProgressing {
		t.Errorf("after remove: %+v", conds)
	}
	conds = Deployment.Remove(conds, appsv1.DeploymentReplicaFailure)
	if len(conds) != 1 {
		t.Errorf("removing a missing type changed the list: %+v", conds)
	}
}

func TestSetDaemonSetCondition(t *testing.T) {
	earlier := at(-3600)
	conds := []appsv1.DaemonSetCondition{{
		Type: "Progressing", Status: corev1.ConditionTrue, Reason: "RollingUpdate", Message: "1 of 3", LastTransitionTime: earlier,
	}}
	conds = DaemonSet.Set(conds, appsv1.DaemonSetCondition{
		Type: "Progressing", Status: corev1.ConditionTrue, Reason: "RolloutComplete", Message: "done", LastTransitionTime: at(0),
	})
	if len(conds) != 1 || conds[0].Reason != "RolloutComplete" || !conds[0].LastTransitionTime.Equal(&earlier) {
		t.Errorf("same status with a new reason must keep the transition time: %+v", conds)
	}
	conds = DaemonSet.Set(conds, appsv1.DaemonSetCondition{
		Type: "Progressing", Status: corev1.ConditionFalse, Reason: "RolloutPaused", LastTransitionTime: at(0),
	})
	if now := at(0); len(conds) != 1 || !conds[0].LastTransitionTime.Equal(&now) {
		t.Errorf("a status change must take the new transition time: %+v", conds)
	}
	if got := DaemonSet.Get(conds, "Progressing"); got == nil || got.Reason != "RolloutPaused" {
		t.Errorf("Get = %+v", got)
	}
}

func TestSetMetaCondition(t *testing.T) {
	other := metav1.Condition{Type: "Other", Status: metav1.ConditionTrue, Reason: "Someone", LastTransitionTime: at(-60)}
	conds := []metav1.Condition{other, {Type: "PreRecreateGrace", Status: metav1.ConditionFalse, Reason: "Waiting", LastTransitionTime: at(-3600)}}
	conds = Meta.Set(conds, metav1.Condition{Type: "PreRecreateGrace", Status: metav1.ConditionTrue, Reason: "PreRecreateGrace", LastTransitionTime: at(0)})
	now := at(0)
	if len(conds) != 2 || conds[0] != other || conds[1].Status != metav1.ConditionTrue || !conds[1].LastTransitionTime.Equal(&now) {
		t.Errorf("a status change must replace the condition and keep the others: %+v", conds)
	}
	again := Meta.Set(conds, metav1.Condition{Type: "PreRecreateGrace", Status: metav1.ConditionTrue, Reason: "PreRecreateGrace", LastTransitionTime: at(100)})
	if got := Meta.Get(again, "PreRecreateGrace"); got == nil || !got.LastTransitionTime.Equal(&now) {
		t.Errorf("re-asserting the condition moved its time: %+v", got)
	}
}
