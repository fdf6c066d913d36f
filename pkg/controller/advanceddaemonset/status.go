package advanceddaemonset

import (
	"context"
	"fmt"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/advanceddaemonset/daemonsetutil"
	"github.com/bosun-dev/bosun/pkg/controller/conditions"
	"github.com/bosun-dev/bosun/pkg/controller/podutil"
)

// Progressing reports how the rollout of the current revision is going. OpenKruise writes
// no conditions; bosun adds this one so that a stalled rollout is visible.
const Progressing appsv1.DaemonSetConditionType = "Progressing"

// Reasons of the Progressing condition.
const (
	// ReasonRollingUpdate: pods the rollout may replace still run an old revision, or
	// their replacements are not available yet.
	ReasonRollingUpdate = "RollingUpdate"
	// ReasonRolloutComplete: every pod the rollout may replace is updated and available.
	ReasonRolloutComplete = "RolloutComplete"
	// ReasonRolloutPaused: the rollout is paused with pods left on old revisions.
	ReasonRolloutPaused = "RolloutPaused"
	// ReasonOnDelete: with the OnDelete strategy, old pods wait for someone to delete them.
	ReasonOnDelete = "OnDelete"
)

const (
	// statusUpdateRetries is how many times a conflicting status write is retried, each
	// time on the freshly read DaemonSet.
	statusUpdateRetries = 3
	// mixedRevisionRecheck is the longest a DaemonSet with nodes running both revisions
	// goes without a sync, so that a rollout never waits for an event that will not come.
	mixedRevisionRecheck = 5 * time.Second
)

// calculateStatus counts what v shows, node by node; each node is judged by its oldest
// pod. Fields the counts do not cover are carried over from ds.
func calculateStatus(v *view) appsv1beta1.DaemonSetStatus {
	status := *v.ds.Status.DeepCopy()
	var desired, current, misscheduled, ready, available, updated int32
	for _, node := range v.nodes {
		pods := v.podsByNode[node.Name]
		if !v.eligible[node.Name].ShouldRun {
			if len(pods) > 0 {
				misscheduled++
			}
			continue
		}
		desired++
		if len(pods) == 0 {
			continue
		}
		current++
		oldest := pods[0]
		if podutil.IsPodReady(oldest) {
			ready++
			if v.available(oldest) {
				available++
			}
		}
		if v.updated(oldest) {
			updated++
		}
	}
	status.DesiredNumberScheduled = desired
	status.CurrentNumberScheduled = current
	status.NumberMisscheduled = misscheduled
	status.NumberReady = ready
	status.NumberAvailable = available
	status.NumberUnavailable = desired - available
	status.UpdatedNumberScheduled = updated
	status.UpdateRevision = v.hash
	status.Conditions = setProgressing(status.Conditions, progressingCondition(v))
	return status
}

// progressingCondition judges the rollout of the current revision over the nodes it may
// roll; pods that the partition or the rolling selector keep on old revisions do not hold
// it up, and its message says how many there are.
func progressingCondition(v *view) appsv1.DaemonSetCondition {
	cond := appsv1.DaemonSetCondition{Type: Progressing, Status: corev1.ConditionTrue, LastTransitionTime: v.now}
	if daemonsetutil.RollingUpdate(v.ds) == nil {
		waiting := 0
		for _, node := range v.nodes {
			if v.eligible[node.Name].ShouldRun && v.revisionsOn(node.Name).old != nil {
				waiting++
			}
		}
		if waiting > 0 {
			cond.Reason, cond.Message = ReasonOnDelete, fmt.Sprintf("%d pods wait to be deleted to update", waiting)
			return cond
		}
		cond.Reason, cond.Message = ReasonRolloutComplete, fmt.Sprintf("All pods are updated to revision %s", v.hash)
		return cond
	}

	inScope := map[string]bool{}
	var total, withOld, notAvailable int
	for _, node := range rolloutNodes(v) {
		inScope[node] = true
		if _, exists := v.nodeByName[node]; !exists || !v.eligible[node].ShouldRun {
			continue
		}
		total++
		revisions := v.revisionsOn(node)
		switch {
		case revisions.old != nil:
			withOld++
		case revisions.current == nil || !v.available(revisions.current):
			notAvailable++
		}
	}
	kept := 0
	for _, node := range v.nodes {
		if !inScope[node.Name] && v.eligible[node.Name].ShouldRun && v.revisionsOn(node.Name).old != nil {
			kept++
		}
	}
	switch {
	case withOld > 0 && daemonsetutil.Paused(v.ds):
		cond.Status, cond.Reason = corev1.ConditionFalse, ReasonRolloutPaused
		cond.Message = fmt.Sprintf("Rollout to revision %s is paused with %d pods on old revisions", v.hash, withOld)
	case withOld > 0 || notAvailable > 0:
		cond.Reason = ReasonRollingUpdate
		cond.Message = fmt.Sprintf("%d of %d pods updated to revision %s", total-withOld, total, v.hash)
	default:
		cond.Reason = ReasonRolloutComplete
		cond.Message = fmt.Sprintf("%d pods updated to revision %s and available", total, v.hash)
		if kept > 0 {
			cond.Message += fmt.Sprintf("; %d pods kept on old revisions by partition or rolling selector", kept)
		}
	}
	return cond
}

// setProgressing records cond in conds. Unlike conditions.Set it also takes a new message
// under an unchanged status and reason, since the message counts the rollout's progress;
// the transition time moves only with the status.
func setProgressing(conds []appsv1.DaemonSetCondition, cond appsv1.DaemonSetCondition) []appsv1.DaemonSetCondition {
	current := conditions.DaemonSet.Get(conds, Progressing)
	if current != nil && current.Status == cond.Status && current.Reason == cond.Reason {
		if current.Message == cond.Message {
			return conds
		}
		cond.LastTransitionTime = current.LastTransitionTime
		return append(conditions.DaemonSet.Remove(conds, Progressing), cond)
	}
	return conditions.DaemonSet.Set(conds, cond)
}

// updateStatus writes the status v shows, with observedGeneration when fullSync, unless
// it is what the DaemonSet already reports. It also asks for the looks again that time
// alone calls for: pods becoming available, and nodes running both revisions.
func (c *Controller) updateStatus(ctx context.Context, v *view, fullSync bool, again *requeue) error {
	status := calculateStatus(v)
	if fullSync {
		status.ObservedGeneration = v.ds.Generation
	}
	if status.NumberReady != status.NumberAvailable && v.ds.Spec.MinReadySeconds > 0 {
		again.after(c.nextAvailabilityCheck(v))
	}
	if nodesWithBothRevisions(v) {
		again.after(min(mixedRevisionRecheck, c.nextAvailabilityCheck(v)))
	}
	if reflect.DeepEqual(v.ds.Status, status) {
		return nil
	}

	ds := v.ds.DeepCopy()
	for attempt := 0; ; attempt++ {
		ds.Status = status
		_, err := c.bosunClient.AppsV1beta1().DaemonSets(ds.Namespace).UpdateStatus(ctx, ds, metav1.UpdateOptions{})
		if err == nil {
			klog.FromContext(ctx).V(4).Info("Updated DaemonSet status", "desired", status.DesiredNumberScheduled,
				"ready", status.NumberReady, "available", status.NumberAvailable, "updated", status.UpdatedNumberScheduled)
			return nil
		}
		if !apierrors.IsConflict(err) || attempt == statusUpdateRetries {
			return fmt.Errorf("updating status of DaemonSet %s: %w", klog.KObj(ds), err)
		}
		live, getErr := c.bosunClient.AppsV1beta1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
		if getErr != nil {
			return fmt.Errorf("re-reading DaemonSet %s after a status conflict: %w", klog.KObj(ds), getErr)
		}
		// The counts stand; the collision count is the server's, which only grows.
		status.CollisionCount = live.Status.CollisionCount
		ds = live
	}
}

// nextAvailabilityCheck returns when the next ready pod of v becomes available, or
// minReadySeconds when none is pending.
func (c *Controller) nextAvailabilityCheck(v *view) time.Duration {
	if next := podutil.NextAvailabilityCheck(readyPods(v.pods), v.ds.Spec.MinReadySeconds, v.now.Time, c.clock); next != nil {
		return *next
	}
	if v.ds.Spec.MinReadySeconds > 0 {
		return time.Duration(v.ds.Spec.MinReadySeconds) * time.Second
	}
	return mixedRevisionRecheck
}
