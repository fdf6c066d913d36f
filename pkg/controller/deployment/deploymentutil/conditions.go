package deploymentutil

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition reasons. kubectl rollout status and users' tooling match on them.
const (
	// ReasonNewReplicaSetCreated (Progressing=True): the controller created the new ReplicaSet.
	ReasonNewReplicaSetCreated = "NewReplicaSetCreated"
	// ReasonFoundNewReplicaSet (Progressing=True): the new ReplicaSet already existed.
	ReasonFoundNewReplicaSet = "FoundNewReplicaSet"
	// ReasonReplicaSetUpdated (Progressing=True): the rollout made progress.
	ReasonReplicaSetUpdated = "ReplicaSetUpdated"
	// ReasonNewReplicaSetAvailable (Progressing=True): the rollout completed.
	ReasonNewReplicaSetAvailable = "NewReplicaSetAvailable"
	// ReasonProgressDeadlineExceeded (Progressing=False): no progress within the deadline.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonReplicaSetCreateError (Progressing=False): creating the new ReplicaSet failed.
	ReasonReplicaSetCreateError = "ReplicaSetCreateError"
	// ReasonDeploymentPaused (Progressing=Unknown): the Deployment is paused.
	ReasonDeploymentPaused = "DeploymentPaused"
	// ReasonDeploymentResumed (Progressing=Unknown): the Deployment was resumed; the
	// condition's new times restart the progress deadline.
	ReasonDeploymentResumed = "DeploymentResumed"
	// ReasonMinimumReplicasAvailable (Available=True).
	ReasonMinimumReplicasAvailable = "MinimumReplicasAvailable"
	// ReasonMinimumReplicasUnavailable (Available=False).
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
)

// Messages of the Available condition.
const (
	MessageMinimumReplicasAvailable   = "Deployment has minimum availability."
	MessageMinimumReplicasUnavailable = "Deployment does not have minimum availability."
)

// NewCondition returns a Deployment condition with both times set to now. The toolkit's
// conditions.Deployment records it in a status.
func NewCondition(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, message string, now metav1.Time) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{
		Type:               t,
		Status:             s,
		LastUpdateTime:     now,
		LastTransitionTime: now,
		Reason:             reason,
		Message:            message,
	}
}

// ReplicaSetToDeploymentCondition converts a ReplicaSet condition (ReplicaFailure) into the
// Deployment condition that surfaces it. Both times are the ReplicaSet condition's
// transition time, which is the only time it carries.
func ReplicaSetToDeploymentCondition(c appsv1.ReplicaSetCondition) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{
		Type:               appsv1.DeploymentConditionType(c.Type),
		Status:             c.Status,
		LastUpdateTime:     c.LastTransitionTime,
		LastTransitionTime: c.LastTransitionTime,
		Reason:             c.Reason,
		Message:            c.Message,
	}
}
