package deploymentutil

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

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
