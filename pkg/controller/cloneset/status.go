package cloneset

import (
	"context"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/cloneset/clonesetutil"
	"github.com/bosun-dev/bosun/pkg/controller/conditions"
)

// Messages of the Progressing condition, as OpenKruise words them.
const (
	availableMessage          = "CloneSet is available"
	pausedMessage             = "CloneSet is paused"
	partitionAvailableMessage = "CloneSet has been paused due to partition ready"
	progressingMessage        = "CloneSet is progressing"
	deadlineExceededMessage   = "CloneSet revision %s has timed out progressing"
)

// calculateStatus completes status (the revisions, collision count, selector and
// conditions the sync found) with the counts of cs's pods at now, the current revision,
// and the Progressing condition (restartOnProgress: see progressingCondition). It returns
// when the CloneSet should be looked at again for its progress deadline; 0 for never.
func calculateStatus(cs *appsv1beta1.CloneSet, status appsv1beta1.CloneSetStatus, pods []*corev1.Pod, now metav1.Time, restartOnProgress bool) (appsv1beta1.CloneSetStatus, time.Duration) {
	for _, pod := range pods {
		status.Replicas++
		updated := clonesetutil.AtRevision(pod, status.UpdateRevision)
		if clonesetutil.IsUpdateReady(pod, 0, now) {
			status.ReadyReplicas++
			if updated {
				status.UpdatedReadyReplicas++
			}
		}
		if clonesetutil.IsAvailable(pod, cs.Spec.MinReadySeconds, now) {
			status.AvailableReplicas++
			if updated {
				status.UpdatedAvailableReplicas++
			}
		}
		if updated {
			status.UpdatedReplicas++
		}
	}
	replicas := ptr.Deref(cs.Spec.Replicas, 1)
	if status.UpdatedReplicas == status.Replicas && status.Replicas == replicas {
		status.CurrentRevision = status.UpdateRevision
	}
	status.ExpectedUpdatedReplicas = clonesetutil.ExpectedUpdatedReplicas(cs)
	var recheck time.Duration
	status.Conditions, recheck = progressingCondition(cs, status, now, restartOnProgress)
	return status, recheck
}

// progressingCondition returns status's conditions with the Progressing condition brought
// up to date, and when the CloneSet should be looked at again for its deadline (0: never).
// Without a progress deadline (unset or MaxInt32) there is no Progressing condition. Else
// the first that applies:
//   - every pod is updated and available at the update revision, which is current:
//     True, CloneSetAvailable;
//   - the update is paused: True, CloneSetPaused;
//   - the partition holds back pods and the updated ones are available: True,
//     ProgressPartitionAvailable;
//   - the deadline passed since the condition last changed, or already had: False,
//     ProgressDeadlineExceeded;
//   - otherwise True, CloneSetUpdated, to be looked at again when the deadline passes.
//
// A condition with unchanged status and reason keeps its times (and its message), so the
// deadline counts from when the rollout started to progress, as in OpenKruise: a slow but
// steady rollout of many pods times out. With restartOnProgress the deadline counts from
// the last progress instead, as a Deployment's does: a new update revision, or more
// updated or updated-and-available pods than cs's status recorded, starts the window
// again, and lifts an exceeded deadline.
func progressingCondition(cs *appsv1beta1.CloneSet, status appsv1beta1.CloneSetStatus, now metav1.Time, restartOnProgress bool) ([]appsv1beta1.CloneSetCondition, time.Duration) {
	deadline := cs.Spec.ProgressDeadlineSeconds
	if deadline == nil || *deadline == math.MaxInt32 {
		return conditions.CloneSet.Remove(status.Conditions, appsv1beta1.CloneSetConditionTypeProgressing), 0
	}
	replicas := ptr.Deref(cs.Spec.Replicas, 1)
	set := func(s corev1.ConditionStatus, reason appsv1beta1.CloneSetConditionReason, message string) []appsv1beta1.CloneSetCondition {
		return conditions.CloneSet.Set(status.Conditions, appsv1beta1.CloneSetCondition{
			Type: appsv1beta1.CloneSetConditionTypeProgressing, Status: s, Reason: string(reason), Message: message,
			LastUpdateTime: now, LastTransitionTime: now,
		})
	}
	current := conditions.CloneSet.Get(status.Conditions, appsv1beta1.CloneSetConditionTypeProgressing)
	window := time.Duration(*deadline) * time.Second
	progressed := restartOnProgress && madeProgress(cs.Status, status)
	switch {
	case status.CurrentRevision == status.UpdateRevision && status.Replicas == replicas &&
		status.UpdatedReplicas == replicas && status.UpdatedAvailableReplicas == replicas:
		return set(corev1.ConditionTrue, appsv1beta1.CloneSetAvailable, availableMessage), 0
	case cs.Spec.UpdateStrategy.RollingUpdate != nil && cs.Spec.UpdateStrategy.RollingUpdate.Paused:
		return set(corev1.ConditionTrue, appsv1beta1.CloneSetProgressPaused, pausedMessage), 0
	case status.ExpectedUpdatedReplicas < replicas && status.ExpectedUpdatedReplicas <= status.UpdatedAvailableReplicas:
		return set(corev1.ConditionTrue, appsv1beta1.CloneSetProgressPartitionAvailable, partitionAvailableMessage), 0
	case !progressed && current != nil &&
		(current.Reason == string(appsv1beta1.CloneSetProgressDeadlineExceeded) || current.LastUpdateTime.Add(window).Before(now.Time)):
		return set(corev1.ConditionFalse, appsv1beta1.CloneSetProgressDeadlineExceeded, fmt.Sprintf(deadlineExceededMessage, status.UpdateRevision)), 0
	}
	conds := set(corev1.ConditionTrue, appsv1beta1.CloneSetProgressUpdated, progressingMessage)
	if progressed {
		// Set keeps the times of a condition that reads the same; only lastUpdateTime moves.
		restarted := *conditions.CloneSet.Get(conds, appsv1beta1.CloneSetConditionTypeProgressing)
		restarted.LastUpdateTime = now
		conds = conditions.CloneSet.Set(conditions.CloneSet.Remove(conds, appsv1beta1.CloneSetConditionTypeProgressing), restarted)
	}
	since := conditions.CloneSet.Get(conds, appsv1beta1.CloneSetConditionTypeProgressing).LastUpdateTime
	// A second more than the deadline, so that the next sync finds it passed.
	after := since.Add(window).Sub(now.Time)
	if after >= time.Second {
		after += time.Second
	}
	return conds, after
}

// madeProgress reports whether the rollout moved between the recorded status and the new
// one: another update revision, or more pods updated, or more updated pods available.
func madeProgress(recorded, computed appsv1beta1.CloneSetStatus) bool {
	return recorded.UpdateRevision != computed.UpdateRevision ||
		computed.UpdatedReplicas > recorded.UpdatedReplicas ||
		computed.UpdatedAvailableReplicas > recorded.UpdatedAvailableReplicas
}

// failureCondition returns conds with the condition of type t (FailedScale or
// FailedUpdate) set when err happened, True with err's message, and removed when not.
func failureCondition(conds []appsv1beta1.CloneSetCondition, t appsv1beta1.CloneSetConditionType, err error, now metav1.Time) []appsv1beta1.CloneSetCondition {
	if err == nil {
		return conditions.CloneSet.Remove(conds, t)
	}
	return conditions.CloneSet.Set(conds, appsv1beta1.CloneSetCondition{
		Type: t, Status: corev1.ConditionTrue, Message: err.Error(), LastTransitionTime: now,
	})
}

// updateStatus computes the CloneSet's status and writes it when it changed, retrying
// conflicts on the live CloneSet. It returns the CloneSet as written (its copy in v when
// nothing was written), and asks for another look when the progress deadline will pass.
func (c *Controller) updateStatus(ctx context.Context, v *view, base appsv1beta1.CloneSetStatus, again *requeue) (*appsv1beta1.CloneSet, error) {
	status, recheck := calculateStatus(v.cs, base, v.pods, v.now, c.restartDeadlineOnProgress)
	again.after(recheck)
	if !statusChanged(v.cs.Status, status) {
		return v.cs, nil
	}
	logger := klog.FromContext(ctx)
	logger.V(2).Info("Writing CloneSet status", "replicas", status.Replicas, "ready", status.ReadyReplicas,
		"available", status.AvailableReplicas, "updated", status.UpdatedReplicas, "updatedReady", status.UpdatedReadyReplicas,
		"currentRevision", status.CurrentRevision, "updateRevision", status.UpdateRevision)
	client := c.bosunClient.AppsV1beta1().CloneSets(v.cs.Namespace)
	cs := v.cs.DeepCopy()
	var written *appsv1beta1.CloneSet
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cs.Status = status
		var err error
		written, err = client.UpdateStatus(ctx, cs, metav1.UpdateOptions{})
		if err == nil {
			return nil
		}
		live, getErr := client.Get(ctx, cs.Name, metav1.GetOptions{})
		if getErr != nil {
			return getErr
		}
		cs = live
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("updating status of CloneSet %s: %w", klog.KObj(v.cs), err)
	}
	return written, nil
}

// statusChanged reports whether status differs from old in what is worth a write: a
// counter, a revision, the collision count, the selector, a newer observed generation, the
// Progressing condition's status or reason, or whether a FailedScale or FailedUpdate
// condition is set. Conditions' times and messages alone are not.
func statusChanged(old, status appsv1beta1.CloneSetStatus) bool {
	return status.ObservedGeneration > old.ObservedGeneration ||
		status.Replicas != old.Replicas ||
		status.ReadyReplicas != old.ReadyReplicas ||
		status.AvailableReplicas != old.AvailableReplicas ||
		status.UpdatedReplicas != old.UpdatedReplicas ||
		status.UpdatedReadyReplicas != old.UpdatedReadyReplicas ||
		status.UpdatedAvailableReplicas != old.UpdatedAvailableReplicas ||
		status.ExpectedUpdatedReplicas != old.ExpectedUpdatedReplicas ||
		status.UpdateRevision != old.UpdateRevision ||
		status.CurrentRevision != old.CurrentRevision ||
		ptr.Deref(status.CollisionCount, 0) != ptr.Deref(old.CollisionCount, 0) ||
		status.LabelSelector != old.LabelSelector ||
		conditionChanged(old.Conditions, status.Conditions, appsv1beta1.CloneSetConditionTypeProgressing, true) ||
		conditionChanged(old.Conditions, status.Conditions, appsv1beta1.CloneSetConditionFailedScale, false) ||
		conditionChanged(old.Conditions, status.Conditions, appsv1beta1.CloneSetConditionFailedUpdate, false)
}

// conditionChanged reports whether the condition of type t is set in one list and not in
// the other, or, with statusAndReason, set in both with another status or reason.
func conditionChanged(old, cur []appsv1beta1.CloneSetCondition, t appsv1beta1.CloneSetConditionType, statusAndReason bool) bool {
	before, after := conditions.CloneSet.Get(old, t), conditions.CloneSet.Get(cur, t)
	if before == nil || after == nil {
		return (before == nil) != (after == nil)
	}
	return statusAndReason && (before.Status != after.Status || before.Reason != after.Reason)
}
