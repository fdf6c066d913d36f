package deployment

import (
	"context"
	"fmt"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/deployment/deploymentutil"
)

// syncRolloutStatus writes the status of a rollout (§10.2): the counters and Available of
// §10.1, the Progressing condition judged against spec.progressDeadlineSeconds, and the
// ReplicaFailure condition copied from the ReplicaSets. When nothing changed, it schedules a
// check for the moment the deadline would pass, because no event may arrive before then.
func (c *Controller) syncRolloutStatus(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	now := c.now()
	newStatus := deploymentutil.CalculateStatus(d, allRSs, newRS, c.countTerminating(), now)

	if !deploymentutil.HasProgressDeadline(d) {
		deploymentutil.RemoveCondition(&newStatus, appsv1.DeploymentProgressing)
	}

	current := deploymentutil.GetCondition(d.Status, appsv1.DeploymentProgressing)
	// A completed rollout stays complete while every replica belongs to the new ReplicaSet,
	// so that scaling does not reopen it; a template change brings old replicas and does.
	alreadyComplete := newStatus.Replicas == newStatus.UpdatedReplicas &&
		current != nil && current.Reason == deploymentutil.ReasonNewReplicaSetAvailable
	if deploymentutil.HasProgressDeadline(d) && !alreadyComplete {
		switch {
		case deploymentutil.DeploymentComplete(d, &newStatus):
			msg := subjectMessage(d, newRS, "has successfully progressed.")
			cond := deploymentutil.NewCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, deploymentutil.ReasonNewReplicaSetAvailable, msg, now)
			deploymentutil.SetCondition(&newStatus, *cond)
		case deploymentutil.DeploymentProgressing(d, &newStatus):
			msg := subjectMessage(d, newRS, "is progressing.")
			cond := deploymentutil.NewCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, deploymentutil.ReasonReplicaSetUpdated, msg, now)
			if current != nil {
				// Progress restarts the deadline clock (lastUpdateTime) but is no transition
				// while the condition stays True. SetCondition keeps an identical condition
				// untouched, so remove the old one to force the new lastUpdateTime in.
				if current.Status == corev1.ConditionTrue {
					cond.LastTransitionTime = current.LastTransitionTime
				}
				deploymentutil.RemoveCondition(&newStatus, appsv1.DeploymentProgressing)
			}
			deploymentutil.SetCondition(&newStatus, *cond)
		case deploymentutil.DeploymentTimedOut(d, &newStatus, now.Time):
			msg := subjectMessage(d, newRS, "has timed out progressing.")
			cond := deploymentutil.NewCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, deploymentutil.ReasonProgressDeadlineExceeded, msg, now)
			deploymentutil.SetCondition(&newStatus, *cond)
		}
	}

	if failure := replicaFailure(allRSs, newRS); failure != nil {
		deploymentutil.SetCondition(&newStatus, *failure)
	} else {
		deploymentutil.RemoveCondition(&newStatus, appsv1.DeploymentReplicaFailure)
	}

	if reflect.DeepEqual(d.Status, newStatus) {
		c.requeueStuckDeployment(ctx, d, newStatus)
		return nil
	}
	d.Status = newStatus
	return c.updateStatus(ctx, d)
}

// subjectMessage words a Progressing message about the new ReplicaSet, or about the
// Deployment itself when there is none.
func subjectMessage(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, predicate string) string {
	if newRS != nil {
		return fmt.Sprintf("ReplicaSet %q %s", newRS.Name, predicate)
	}
	return fmt.Sprintf("Deployment %q %s", d.Name, predicate)
}

// replicaFailure returns the ReplicaFailure condition to mirror on the Deployment: the new
// ReplicaSet's if it has one, else the first found on any ReplicaSet, else nil.
func replicaFailure(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) *appsv1.DeploymentCondition {
	candidates := allRSs
	if newRS != nil {
		candidates = append([]*appsv1.ReplicaSet{newRS}, allRSs...)
	}
	for _, rs := range candidates {
		if rs == nil {
			continue
		}
		for _, c := range rs.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure {
				cond := deploymentutil.ReplicaSetToDeploymentCondition(c)
				return &cond
			}
		}
	}
	return nil
}

// requeueStuckDeployment schedules a sync for when a rollout that shows no progress would
// pass its deadline (kubernetes issue #34458): without it, the timeout would only be noticed
// at the next unrelated event or resync. It returns the delay, or -1 when no check is needed.
func (c *Controller) requeueStuckDeployment(ctx context.Context, d *appsv1.Deployment, newStatus appsv1.DeploymentStatus) time.Duration {
	logger := klog.FromContext(ctx)
	current := deploymentutil.GetCondition(d.Status, appsv1.DeploymentProgressing)
	if !deploymentutil.HasProgressDeadline(d) || current == nil {
		// No deadline, or no progress record to measure it from.
		return -1
	}
	if deploymentutil.DeploymentComplete(d, &newStatus) || current.Reason == deploymentutil.ReasonProgressDeadlineExceeded {
		return -1
	}
	deadline := current.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second)
	after := deadline.Sub(c.clock.Now())
	if after < time.Second {
		// Due now: check again with backoff, so a deadline that keeps being "due" (clock
		// skew) cannot spin the worker.
		logger.V(4).Info("Queueing up deployment for a progress check now", "deployment", klog.KObj(d))
		c.enqueueRateLimited(logger, d)
		return 0
	}
	logger.V(4).Info("Queueing up deployment for a progress check", "deployment", klog.KObj(d), "queueAfter", int(after.Seconds()))
	// The extra second keeps a check landing a few milliseconds early from finding the
	// deadline not yet passed.
	c.enqueueAfter(logger, d, after+time.Second)
	return after
}

// checkPausedConditions records pausing and resuming in the Progressing condition (§11), as
// Unknown so that the deadline clock restarts at resume (kubernetes issue #36427). A rollout
// that already timed out keeps saying so.
func (c *Controller) checkPausedConditions(ctx context.Context, d *appsv1.Deployment) error {
	if !deploymentutil.HasProgressDeadline(d) {
		return nil
	}
	current := deploymentutil.GetCondition(d.Status, appsv1.DeploymentProgressing)
	if current != nil && current.Reason == deploymentutil.ReasonProgressDeadlineExceeded {
		return nil
	}
	pausedRecorded := current != nil && current.Reason == deploymentutil.ReasonDeploymentPaused

	var cond *appsv1.DeploymentCondition
	switch {
	case d.Spec.Paused && !pausedRecorded:
		cond = deploymentutil.NewCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, deploymentutil.ReasonDeploymentPaused, "Deployment is paused", c.now())
	case !d.Spec.Paused && pausedRecorded:
		cond = deploymentutil.NewCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, deploymentutil.ReasonDeploymentResumed, "Deployment is resumed", c.now())
	default:
		return nil
	}
	deploymentutil.SetCondition(&d.Status, *cond)
	return c.updateStatus(ctx, d)
}
