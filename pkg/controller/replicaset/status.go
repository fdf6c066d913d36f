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

	"github.com/bosun-dev/bosun/pkg/controller/conditions"
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

	status.Conditions = replicaFailureConditions(rs, status.Conditions, len(claimed), manageErr, now)
	return status
}

// replicaFailureConditions returns conds (a copy of rs's conditions) with ReplicaFailure
// brought in line with manageErr, this sync's create or delete error: added when the sync
// failed and no failure is recorded yet (a recorded one keeps its first time and message,
// so that a repeating failure does not rewrite status), removed once a sync succeeds.
// Conditions of other types, users' included, stay.
func replicaFailureConditions(rs *appsv1.ReplicaSet, conds []appsv1.ReplicaSetCondition, owned int, manageErr error, now time.Time) []appsv1.ReplicaSetCondition {
	recorded := conditions.ReplicaSet.Get(conds, appsv1.ReplicaSetReplicaFailure) != nil
	switch {
	case manageErr == nil && recorded:
		return conditions.ReplicaSet.Remove(conds, appsv1.ReplicaSetReplicaFailure)
	case manageErr != nil && !recorded:
		reason := ""
		switch want := int(ptr.Deref(rs.Spec.Replicas, 1)); {
		case owned < want:
			reason = FailedCreateReason
		case owned > want:
			reason = FailedDeleteReason
		}
		return conditions.ReplicaSet.Set(conds, appsv1.ReplicaSetCondition{
			Type:               appsv1.ReplicaSetReplicaFailure,
			Status:             corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now),
			Reason:             reason,
			Message:            manageErr.Error(),
		})
	}
	return conds
}

// writeStatus writes status to rs (a copy the caller owns) unless rs already carries it,
// and returns the ReplicaSet as written (rs itself when nothing was written). A failed
// write is retried statusUpdateRetries times on a freshly read ReplicaSet.
func (c *Controller) writeStatus(ctx context.Context, rs *appsv1.ReplicaSet, status appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, error) {
	if statusIsCurrent(rs, status) {
		return rs, nil
	}
	// observedGeneration tells readers (kubectl rollout status, the Deployment controller)
	// that this status reflects the current spec.
	status.ObservedGeneration = rs.Generation
	logger := klog.FromContext(ctx)
	client := c.client.AppsV1().ReplicaSets(rs.Namespace)
	for attempt := 0; ; attempt++ {
		logger.V(4).Info("Writing ReplicaSet status", "want", ptr.Deref(rs.Spec.Replicas, 1), "from", statusSummary(rs.Status), "to", statusSummary(status))
		rs.Status = status
		written, err := client.UpdateStatus(ctx, rs, metav1.UpdateOptions{})
		if err == nil {
			c.writes.replicaSetWritten(written)
			return written, nil
		}
		if attempt >= statusUpdateRetries {
			return nil, fmt.Errorf("updating status of ReplicaSet %s: %w", klog.KObj(rs), err)
		}
		// Most likely a conflict with a newer version; try again on the live object.
		live, err := client.Get(ctx, rs.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading ReplicaSet %s to retry its status update: %w", klog.KObj(rs), err)
		}
		rs = live
	}
}

// statusIsCurrent reports whether rs already carries status, counting observedGeneration
// as what writeStatus would set: rs's generation.
func statusIsCurrent(rs *appsv1.ReplicaSet, status appsv1.ReplicaSetStatus) bool {
	status.ObservedGeneration = rs.Generation
	return equality.Semantic.DeepEqual(rs.Status, status)
}

// statusSummary renders the counts of a status for the log.
func statusSummary(s appsv1.ReplicaSetStatus) string {
	terminating := "-"
	if s.TerminatingReplicas != nil {
		terminating = strconv.Itoa(int(*s.TerminatingReplicas))
	}
	return fmt.Sprintf("replicas=%d fullyLabeled=%d ready=%d available=%d terminating=%s generation=%d",
		s.Replicas, s.FullyLabeledReplicas, s.ReadyReplicas, s.AvailableReplicas, terminating, s.ObservedGeneration)
}
