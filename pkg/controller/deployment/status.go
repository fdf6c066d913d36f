package deployment

import (
	"context"
	"fmt"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/conditions"
	"github.com/bosun-dev/bosun/pkg/controller/deployment/deploymentutil"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/features"
)

// writeStatus writes the counts and the Available condition computed from the
// ReplicaSets, leaving Progressing as it is, when they differ from d's status.
func (c *Controller) writeStatus(ctx context.Context, d *appsv1.Deployment, revs revisionSet) error {
	computed := deploymentutil.CalculateStatus(d, revs.all(), revs.current, c.countTerminating(), c.now())
	if reflect.DeepEqual(d.Status, computed) {
		return nil
	}
	d.Status = computed
	return c.updateStatus(ctx, d)
}

// writeRolloutStatus writes the status of a rollout: what writeStatus writes, plus the
// Progressing condition judged against spec.progressDeadlineSeconds and the ReplicaFailure
// condition mirrored from the ReplicaSets. When nothing changed it schedules a look at the
// moment the deadline would pass, because no event may come before then.
func (c *Controller) writeRolloutStatus(ctx context.Context, d *appsv1.Deployment, revs revisionSet) error {
	now := c.now()
	computed := deploymentutil.CalculateStatus(d, revs.all(), revs.current, c.countTerminating(), now)
	if deploymentutil.HasProgressDeadline(d) {
		judgeProgress(d, &computed, rolloutSubject(d, revs.current), now)
	} else {
		computed.Conditions = conditions.Deployment.Remove(computed.Conditions, appsv1.DeploymentProgressing)
	}
	if failure := mirroredReplicaFailure(revs); failure != nil {
		computed.Conditions = conditions.Deployment.Set(computed.Conditions, *failure)
	} else {
		computed.Conditions = conditions.Deployment.Remove(computed.Conditions, appsv1.DeploymentReplicaFailure)
	}

	if reflect.DeepEqual(d.Status, computed) {
		c.scheduleDeadlineCheck(ctx, d, computed)
		return nil
	}
	d.Status = computed
	return c.updateStatus(ctx, d)
}

// judgeProgress records in computed the Progressing condition d's rollout has earned:
// finished, progressing (which pushes the deadline back), or timed out. The condition
// carried over from d stands when none of them applies.
func judgeProgress(d *appsv1.Deployment, computed *appsv1.DeploymentStatus, subject string, now metav1.Time) {
	current := conditions.Deployment.Get(d.Status.Conditions, appsv1.DeploymentProgressing)
	if current != nil && current.Reason == deploymentutil.ReasonNewReplicaSetAvailable && computed.Replicas == computed.UpdatedReplicas {
		// A finished rollout stays finished while every pod runs the current template, so
		// that scaling does not reopen it; a template change brings old pods and does.
		return
	}
	switch {
	case deploymentutil.DeploymentComplete(d, computed):
		done := deploymentutil.NewCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue,
			deploymentutil.ReasonNewReplicaSetAvailable, subject+" has successfully progressed.", now)
		computed.Conditions = conditions.Deployment.Set(computed.Conditions, done)
	case deploymentutil.DeploymentProgressing(d, computed):
		moving := deploymentutil.NewCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue,
			deploymentutil.ReasonReplicaSetUpdated, subject+" is progressing.", now)
		if current != nil && current.Status == corev1.ConditionTrue {
			moving.LastTransitionTime = current.LastTransitionTime
		}
		// Progress restarts the deadline through lastUpdateTime even though the condition
		// may read the same as before, so it replaces the old one outright instead of going
		// through Set, which would keep an equal condition untouched.
		computed.Conditions = append(conditions.Deployment.Remove(computed.Conditions, appsv1.DeploymentProgressing), moving)
	case deploymentutil.DeploymentTimedOut(d, computed, now.Time):
		stuck := deploymentutil.NewCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse,
			deploymentutil.ReasonProgressDeadlineExceeded, subject+" has timed out progressing.", now)
		computed.Conditions = conditions.Deployment.Set(computed.Conditions, stuck)
	}
}

// rolloutSubject names what a Progressing message is about: the new ReplicaSet, or the
// Deployment while there is none.
func rolloutSubject(d *appsv1.Deployment, newRS *appsv1.ReplicaSet) string {
	if newRS != nil {
		return fmt.Sprintf("ReplicaSet %q", newRS.Name)
	}
	return fmt.Sprintf("Deployment %q", d.Name)
}

// mirroredReplicaFailure returns the ReplicaFailure condition the Deployment shows: the
// current ReplicaSet's if it has one, else the first found on an old one, else nil.
func mirroredReplicaFailure(revs revisionSet) *appsv1.DeploymentCondition {
	for _, rs := range append([]*appsv1.ReplicaSet{revs.current}, revs.old...) {
		if rs == nil {
			continue
		}
		if failure := conditions.ReplicaSet.Get(rs.Status.Conditions, appsv1.ReplicaSetReplicaFailure); failure != nil {
			mirrored := deploymentutil.ReplicaSetToDeploymentCondition(*failure)
			return &mirrored
		}
	}
	return nil
}

// timeToDeadline returns how long a rollout that shows no progress has left before it
// passes its deadline, and false when there is nothing to watch for: no deadline, no
// Progressing condition to measure from, a finished rollout or one already timed out.
func timeToDeadline(d *appsv1.Deployment, computed *appsv1.DeploymentStatus, now time.Time) (time.Duration, bool) {
	if !deploymentutil.HasProgressDeadline(d) {
		return 0, false
	}
	current := conditions.Deployment.Get(d.Status.Conditions, appsv1.DeploymentProgressing)
	if current == nil || current.Reason == deploymentutil.ReasonProgressDeadlineExceeded || deploymentutil.DeploymentComplete(d, computed) {
		return 0, false
	}
	deadline := current.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second)
	return deadline.Sub(now), true
}

// scheduleDeadlineCheck brings a stalled rollout back when its deadline passes (kubernetes
// issue #34458); otherwise the timeout would only be noticed at the next unrelated event or
// resync.
func (c *Controller) scheduleDeadlineCheck(ctx context.Context, d *appsv1.Deployment, computed appsv1.DeploymentStatus) {
	left, watch := timeToDeadline(d, &computed, c.clock.Now())
	if !watch {
		return
	}
	key, err := queue.KeyFor(d)
	if err != nil {
		return
	}
	logger := klog.FromContext(ctx)
	if left < time.Second {
		// Due now. Through the rate limiter, so that a deadline that keeps coming up due
		// (a skewed clock) backs off instead of spinning a worker.
		logger.V(4).Info("Progress deadline is due; checking the rollout again")
		c.queue.AddRateLimited(key)
		return
	}
	// The extra second makes sure a check that fires a little early finds the deadline
	// passed.
	logger.V(4).Info("Rollout shows no progress; checking again at its deadline", "in", left+time.Second)
	c.queue.AddAfter(key, left+time.Second)
}

// recordPauseOrResume records a pause or a resume that the Progressing condition does not
// show yet. Both are recorded as Unknown, so that the deadline clock starts afresh at the
// resume (kubernetes issue #36427).
func (c *Controller) recordPauseOrResume(ctx context.Context, d *appsv1.Deployment) error {
	if !deploymentutil.HasProgressDeadline(d) {
		return nil
	}
	reason, msg := pauseTransition(d.Spec.Paused, conditions.Deployment.Get(d.Status.Conditions, appsv1.DeploymentProgressing))
	if reason == "" {
		return nil
	}
	c.setProgressing(d, corev1.ConditionUnknown, reason, msg)
	return c.updateStatus(ctx, d)
}

// pauseTransition returns the Progressing reason and message of a pause or resume that
// current (the Progressing condition, may be nil) does not record yet, or empty strings. A
// rollout that has timed out keeps saying so.
func pauseTransition(paused bool, current *appsv1.DeploymentCondition) (reason, message string) {
	if current != nil && current.Reason == deploymentutil.ReasonProgressDeadlineExceeded {
		return "", ""
	}
	recordedPaused := current != nil && current.Reason == deploymentutil.ReasonDeploymentPaused
	switch {
	case paused && !recordedPaused:
		return deploymentutil.ReasonDeploymentPaused, "Deployment is paused"
	case !paused && recordedPaused:
		return deploymentutil.ReasonDeploymentResumed, "Deployment is resumed"
	}
	return "", ""
}

// updateStatus writes d's status and replaces d with the server's answer, so that a later
// write in the same sync carries the current resourceVersion instead of conflicting.
func (c *Controller) updateStatus(ctx context.Context, d *appsv1.Deployment) error {
	written, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("updating status of Deployment %s: %w", klog.KObj(d), err)
	}
	*d = *written
	return nil
}

// countTerminating reports whether status.terminatingReplicas is maintained.
func (c *Controller) countTerminating() bool {
	return c.gates.Enabled(features.DeploymentReplicaSetTerminatingReplicas)
}

// now is the time stamped on conditions.
func (c *Controller) now() metav1.Time {
	return metav1.NewTime(c.clock.Now())
}
