package replicaset

import (
	"context"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
)

// Reasons of the ReplicaFailure condition.
const (
	// FailedCreateReason: creating pods failed (for example, rejected by a quota).
	FailedCreateReason = "FailedCreate"
	// FailedDeleteReason: deleting surplus pods failed.
	FailedDeleteReason = "FailedDelete"
)

// calculateStatus computes rs's status from the pods it owns (claimed, all active) and
// its terminating pods at time now. manageErr is the result of this sync's create or delete
// work and drives the ReplicaFailure condition. countTerminating reports whether
// status.terminatingReplicas is maintained (feature DeploymentReplicaSetTerminatingReplicas);
// without it the field stays unset. observedGeneration is left for writeStatus.
func calculateStatus(rs *appsv1.ReplicaSet, claimed, terminating []*corev1.Pod, manageErr error, now time.Time, countTerminating bool) appsv1.ReplicaSetStatus {
	status := *rs.Status.DeepCopy()

	// Pods whose labels equal the template's are "fully labeled"; the selector may select
	// pods carrying only part of the template's labels.
	templateLabels := labels.Set(rs.Spec.Template.Labels).AsSelectorPreValidated()
	var fullyLabeled, ready, available int32
	at := metav1.NewTime(now)
	for _, pod := range claimed {
		if templateLabels.Matches(labels.Set(pod.Labels)) {
			fullyLabeled++
		}
		if podutil.IsPodReady(pod) {
			ready++
			if podutil.IsPodAvailable(pod, rs.Spec.MinReadySeconds, at) {
				available++
			}
		}
	}
	status.Replicas = int32(len(claimed))
	status.FullyLabeledReplicas = fullyLabeled
	status.ReadyReplicas = ready
	status.AvailableReplicas = available
	status.TerminatingReplicas = nil
	if countTerminating {
		status.TerminatingReplicas = ptr.To(int32(len(terminating)))
	}

	failure := getCondition(rs.Status, appsv1.ReplicaSetReplicaFailure)
	switch {
	case manageErr != nil && failure == nil:
		var reason string
		if diff := len(claimed) - int(ptr.Deref(rs.Spec.Replicas, 1)); diff < 0 {
			reason = FailedCreateReason
		} else if diff > 0 {
			reason = FailedDeleteReason
		}
		setCondition(&status, newCondition(appsv1.ReplicaSetReplicaFailure, corev1.ConditionTrue, reason, manageErr.Error(), now))
	case manageErr == nil && failure != nil:
		removeCondition(&status, appsv1.ReplicaSetReplicaFailure)
	}
	return status
}

// writeStatus writes newStatus to rs (a copy the caller owns) unless nothing would change,
// and returns the ReplicaSet as written (rs itself when the write was skipped). A failed
// write is retried statusUpdateRetries times on a freshly read ReplicaSet.
func (c *Controller) writeStatus(ctx context.Context, rs *appsv1.ReplicaSet, newStatus appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, error) {
	if statusUnchanged(rs, newStatus) {
		return rs, nil
	}
	// observedGeneration tells readers (kubectl rollout status, the Deployment controller)
	// that this status reflects the current spec.
	newStatus.ObservedGeneration = rs.Generation

	logger := klog.FromContext(ctx)
	client := c.client.AppsV1().ReplicaSets(rs.Namespace)
	for attempt := 0; ; attempt++ {
		logger.V(4).Info("Updating ReplicaSet status", "replicaSet", klog.KObj(rs), "transitions", describeTransitions(rs, newStatus))
		rs.Status = newStatus
		updated, err := client.UpdateStatus(ctx, rs, metav1.UpdateOptions{})
		if err == nil {
			c.writes.replicaSetWritten(updated)
			return updated, nil
		}
		if attempt >= statusUpdateRetries {
			return nil, fmt.Errorf("updating status of ReplicaSet %s/%s: %w", rs.Namespace, rs.Name, err)
		}
		// Most likely a conflict with a newer version; retry once on the live object.
		live, getErr := client.Get(ctx, rs.Name, metav1.GetOptions{})
		if getErr != nil {
			return nil, fmt.Errorf("getting ReplicaSet %s/%s to retry its status update: %w", rs.Namespace, rs.Name, getErr)
		}
		rs = live
	}
}

// statusUnchanged reports whether writing newStatus to rs would change nothing.
func statusUnchanged(rs *appsv1.ReplicaSet, newStatus appsv1.ReplicaSetStatus) bool {
	old := rs.Status
	return old.Replicas == newStatus.Replicas &&
		old.FullyLabeledReplicas == newStatus.FullyLabeledReplicas &&
		old.ReadyReplicas == newStatus.ReadyReplicas &&
		old.AvailableReplicas == newStatus.AvailableReplicas &&
		ptr.Equal(old.TerminatingReplicas, newStatus.TerminatingReplicas) &&
		rs.Generation == old.ObservedGeneration &&
		equality.Semantic.DeepEqual(old.Conditions, newStatus.Conditions)
}

// describeTransitions renders the status changes a write makes, for the log.
func describeTransitions(rs *appsv1.ReplicaSet, newStatus appsv1.ReplicaSetStatus) string {
	old := rs.Status
	return fmt.Sprintf("replicas %d->%d (need %d), fullyLabeledReplicas %d->%d, readyReplicas %d->%d, "+
		"availableReplicas %d->%d, terminatingReplicas %s->%s, sequence No: %d->%d",
		old.Replicas, newStatus.Replicas, ptr.Deref(rs.Spec.Replicas, 1),
		old.FullyLabeledReplicas, newStatus.FullyLabeledReplicas,
		old.ReadyReplicas, newStatus.ReadyReplicas,
		old.AvailableReplicas, newStatus.AvailableReplicas,
		optionalCount(old.TerminatingReplicas), optionalCount(newStatus.TerminatingReplicas),
		old.ObservedGeneration, newStatus.ObservedGeneration)
}

func optionalCount(n *int32) string {
	if n == nil {
		return "nil"
	}
	return strconv.Itoa(int(*n))
}

// newCondition returns a ReplicaSet condition that changed at now.
func newCondition(condType appsv1.ReplicaSetConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) appsv1.ReplicaSetCondition {
	return appsv1.ReplicaSetCondition{
		Type:               condType,
		Status:             status,
		LastTransitionTime: metav1.NewTime(now),
		Reason:             reason,
		Message:            message,
	}
}

// getCondition returns the condition of type condType, or nil.
func getCondition(status appsv1.ReplicaSetStatus, condType appsv1.ReplicaSetConditionType) *appsv1.ReplicaSetCondition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == condType {
			return &status.Conditions[i]
		}
	}
	return nil
}

// setCondition puts cond into status, replacing a condition of the same type. A condition
// with the same status and reason is kept as it is: its transition time and message stay,
// so that a repeating failure does not rewrite status on every sync.
func setCondition(status *appsv1.ReplicaSetStatus, cond appsv1.ReplicaSetCondition) {
	if current := getCondition(*status, cond.Type); current != nil && current.Status == cond.Status && current.Reason == cond.Reason {
		return
	}
	status.Conditions = append(withoutCondition(status.Conditions, cond.Type), cond)
}

// removeCondition drops the condition of type condType from status; other conditions,
// including ones written by users, stay.
func removeCondition(status *appsv1.ReplicaSetStatus, condType appsv1.ReplicaSetConditionType) {
	status.Conditions = withoutCondition(status.Conditions, condType)
}

func withoutCondition(conditions []appsv1.ReplicaSetCondition, condType appsv1.ReplicaSetConditionType) []appsv1.ReplicaSetCondition {
	var kept []appsv1.ReplicaSetCondition
	for _, c := range conditions {
		if c.Type != condType {
			kept = append(kept, c)
		}
	}
	return kept
}
