package deploymentutil

import (
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bosun-dev/bosun/pkg/controller/conditions"
)

// CalculateStatus computes d's status from its ReplicaSets (allRSs, new included; newRS may
// be nil). Counts are sums over the ReplicaSets; terminatingReplicas is reported only when
// countTerminating (the DeploymentReplicaSetTerminatingReplicas feature gate) is on. The
// Available condition is set from MaxUnavailable; every other condition and the collision
// count are carried over from d unchanged, for the caller to adjust. d is not modified.
func CalculateStatus(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, countTerminating bool, now metav1.Time) appsv1.DeploymentStatus {
	available := AvailableReplicaCount(allRSs)
	status := appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation,
		Replicas:           ActualReplicaCount(allRSs),
		UpdatedReplicas:    ActualReplicaCount([]*appsv1.ReplicaSet{newRS}),
		ReadyReplicas:      ReadyReplicaCount(allRSs),
		AvailableReplicas:  available,
		// More available than wanted happens while scaling down; that is not negative
		// unavailability.
		UnavailableReplicas: max(ReplicaCount(allRSs)-available, 0),
		CollisionCount:      copyInt32(d.Status.CollisionCount),
	}
	if countTerminating {
		status.TerminatingReplicas = terminatingReplicaCount(allRSs)
	}
	if len(d.Status.Conditions) > 0 {
		// A copy: the caller's Deployment may be shared with the informer's cache.
		status.Conditions = append([]appsv1.DeploymentCondition(nil), d.Status.Conditions...)
	}
	availableCond := NewCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse,
		ReasonMinimumReplicasUnavailable, MessageMinimumReplicasUnavailable, now)
	if available >= MinAvailable(d) {
		availableCond = NewCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue,
			ReasonMinimumReplicasAvailable, MessageMinimumReplicasAvailable, now)
	}
	status.Conditions = conditions.Deployment.Set(status.Conditions, availableCond)
	return status
}

func copyInt32(p *int32) *int32 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// HasProgressDeadline reports whether d has a progress deadline; MaxInt32 means none.
func HasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

// HasRevisionHistoryLimit reports whether d limits its old ReplicaSets; MaxInt32 means
// keep all.
func HasRevisionHistoryLimit(d *appsv1.Deployment) bool {
	return d.Spec.RevisionHistoryLimit != nil && *d.Spec.RevisionHistoryLimit != math.MaxInt32
}

// DeploymentComplete reports whether newStatus describes a finished rollout of d's current
// generation: every wanted pod exists, runs the current template and is available, and no
// other pod exists.
func DeploymentComplete(d *appsv1.Deployment, newStatus *appsv1.DeploymentStatus) bool {
	replicas := deploymentReplicas(d)
	return newStatus.UpdatedReplicas == replicas &&
		newStatus.Replicas == replicas &&
		newStatus.AvailableReplicas == replicas &&
		newStatus.ObservedGeneration >= d.Generation
}

// DeploymentProgressing reports whether newStatus shows progress compared with d's current
// status: more updated pods, fewer old pods, more ready or more available pods. Progress
// refreshes the Progressing condition and so pushes the deadline back.
func DeploymentProgressing(d *appsv1.Deployment, newStatus *appsv1.DeploymentStatus) bool {
	old := d.Status
	oldOldReplicas := old.Replicas - old.UpdatedReplicas
	newOldReplicas := newStatus.Replicas - newStatus.UpdatedReplicas
	return newStatus.UpdatedReplicas > old.UpdatedReplicas ||
		newOldReplicas < oldOldReplicas ||
		newStatus.ReadyReplicas > old.ReadyReplicas ||
		newStatus.AvailableReplicas > old.AvailableReplicas
}

// DeploymentTimedOut reports whether d's rollout, as described by newStatus, has exceeded
// its progress deadline at now. Without a deadline or a Progressing condition there is
// nothing to measure; a completed rollout (NewReplicaSetAvailable) never times out, and one
// already marked ProgressDeadlineExceeded stays timed out. Otherwise the deadline runs from
// the condition's lastUpdateTime, the last time progress was recorded.
func DeploymentTimedOut(d *appsv1.Deployment, newStatus *appsv1.DeploymentStatus, now time.Time) bool {
	if !HasProgressDeadline(d) {
		return false
	}
	c := conditions.Deployment.Get(newStatus.Conditions, appsv1.DeploymentProgressing)
	if c == nil {
		return false
	}
	switch c.Reason {
	case ReasonNewReplicaSetAvailable:
		return false
	case ReasonProgressDeadlineExceeded:
		return true
	}
	deadline := c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second)
	return deadline.Before(now)
}

// CleanupCandidates returns the old ReplicaSets that cleanup should delete to honour d's
// revisionHistoryLimit, in deletion order. Old ReplicaSets already being deleted are not
// counted; the rest are taken by revision, oldest first, and of the first len − limit only
// those that are fully scaled down and whose status is current are returned. The others are
// skipped rather than waited for: deleting a ReplicaSet that still has pods, or whose status
// is stale, could remove pods (kubernetes issues #40068, #41432, #81761).
func CleanupCandidates(d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	if !HasRevisionHistoryLimit(d) {
		return nil
	}
	var alive []*appsv1.ReplicaSet
	for _, rs := range oldRSs {
		if rs != nil && rs.DeletionTimestamp == nil {
			alive = append(alive, rs)
		}
	}
	excess := len(alive) - int(max(*d.Spec.RevisionHistoryLimit, 0))
	if excess <= 0 {
		return nil
	}
	SortByRevision(alive)
	var out []*appsv1.ReplicaSet
	for _, rs := range alive[:excess] {
		if rs.Spec.Replicas == nil || *rs.Spec.Replicas != 0 || rs.Status.Replicas != 0 ||
			rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		out = append(out, rs)
	}
	return out
}
