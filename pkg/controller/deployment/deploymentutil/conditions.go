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

// NewCondition returns a Deployment condition with both times set to now.
func NewCondition(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, message string, now metav1.Time) *appsv1.DeploymentCondition {
	return &appsv1.DeploymentCondition{
		Type:               t,
		Status:             s,
		LastUpdateTime:     now,
		LastTransitionTime: now,
		Reason:             reason,
		Message:            message,
	}
}

// GetCondition returns a copy of status's condition of type t, or nil.
func GetCondition(status appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == t {
			c := status.Conditions[i]
			return &c
		}
	}
	return nil
}

// SetCondition records c in status. A condition of the same type, status and reason is left
// exactly as it is (message and times included), so that re-asserting a state does not
// churn the status or restart the progress clock. With the same status but a new reason, c
// replaces it but keeps its lastTransitionTime: the status did not transition. Otherwise c
// replaces it as given. The set condition goes to the end of the list.
func SetCondition(status *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	cur := GetCondition(*status, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	status.Conditions = append(withoutCondition(status.Conditions, c.Type), c)
}

// RemoveCondition removes status's condition of type t, if any.
func RemoveCondition(status *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	status.Conditions = withoutCondition(status.Conditions, t)
}

// withoutCondition returns a new slice of conditions without those of type t, leaving the
// original (which may be shared with an informer's cache) untouched.
func withoutCondition(conditions []appsv1.DeploymentCondition, t appsv1.DeploymentConditionType) []appsv1.DeploymentCondition {
	var out []appsv1.DeploymentCondition
	for _, c := range conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	return out
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
