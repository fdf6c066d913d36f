package deployment

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/deployment/deploymentutil"
)

// scaleReplicaSets sizes d's ReplicaSets after spec.replicas changed. When one ReplicaSet
// should take the whole change (see wholeChangeTarget), it does. A saturated current
// ReplicaSet means the rollout is done in all but name, so the old ones drain. Otherwise a
// rolling Deployment spreads the change over its active ReplicaSets in proportion to their
// sizes; a Recreate Deployment waits for its rollout, as old and new pods must never run
// together.
func (c *Controller) scaleReplicaSets(ctx context.Context, d *appsv1.Deployment, revs revisionSet) error {
	if target := wholeChangeTarget(revs); target != nil {
		_, err := c.resizeReplicaSet(ctx, d, target, *d.Spec.Replicas, false)
		return err
	}
	if revs.current != nil && deploymentutil.IsSaturated(d, revs.current) {
		_, err := c.scaleToZero(ctx, d, deploymentutil.FilterActive(revs.old))
		return err
	}
	if !deploymentutil.IsRollingUpdate(d) {
		return nil
	}
	for _, share := range deploymentutil.ProportionalScale(d, deploymentutil.FilterActive(revs.all())) {
		// Forced: every ReplicaSet records the new desired and max replicas even when its
		// own size stays, because later scaling events are measured against them.
		if _, err := c.resizeReplicaSet(ctx, d, share.RS, share.Replicas, true); err != nil {
			return err
		}
	}
	return nil
}

// wholeChangeTarget returns the ReplicaSet that takes a whole scaling event alone: the
// only active one; with none active, the current one or else the newest old one. With
// several active it returns nil: the change must be shared.
func wholeChangeTarget(revs revisionSet) *appsv1.ReplicaSet {
	active := deploymentutil.FilterActive(revs.all())
	if len(active) == 1 {
		return active[0]
	}
	if len(active) > 1 {
		return nil
	}
	if revs.current != nil {
		return revs.current
	}
	if len(revs.old) == 0 {
		return nil
	}
	newestFirst := append([]*appsv1.ReplicaSet(nil), revs.old...)
	deploymentutil.SortByCreation(newestFirst)
	return newestFirst[len(newestFirst)-1]
}

// resizeReplicaSet gives rs size replicas and refreshes its desired/max replica
// annotations. Unless force is set, a ReplicaSet already of that size is left alone; with
// force it is written only when its annotations are out of date. It reports whether the
// size changed.
func (c *Controller) resizeReplicaSet(ctx context.Context, d *appsv1.Deployment, rs *appsv1.ReplicaSet, size int32, force bool) (bool, error) {
	from := *rs.Spec.Replicas
	resized := from != size
	if !resized && !force {
		return false, nil
	}
	desired, ceiling := *d.Spec.Replicas, *d.Spec.Replicas+deploymentutil.MaxSurge(d)
	if !resized && !deploymentutil.ReplicasAnnotationsNeedUpdate(rs, desired, ceiling) {
		return false, nil
	}

	edited := rs.DeepCopy()
	*edited.Spec.Replicas = size
	deploymentutil.SetReplicasAnnotations(edited, desired, ceiling)
	// A full update, not a patch: a conflict means this sync worked from a stale view,
	// and the retry starts from a fresh one.
	written, err := c.client.AppsV1().ReplicaSets(edited.Namespace).Update(ctx, edited, metav1.UpdateOptions{})
	if err != nil {
		return false, fmt.Errorf("resizing ReplicaSet %s from %d to %d: %w", klog.KObj(rs), from, size, err)
	}
	if resized {
		direction := "up"
		if size < from {
			direction = "down"
		}
		c.recorder.Eventf(d, corev1.EventTypeNormal, eventScalingReplicaSet, "Scaled %s replica set %s from %d to %d", direction, written.Name, from, size)
	}
	return resized, nil
}

// scaleToZero resizes every ReplicaSet of rsList to zero and reports whether any changed.
func (c *Controller) scaleToZero(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	anyResized := false
	for _, rs := range rsList {
		resized, err := c.resizeReplicaSet(ctx, d, rs, 0, false)
		if err != nil {
			return anyResized, err
		}
		anyResized = anyResized || resized
	}
	return anyResized, nil
}

// pruneHistory deletes the old ReplicaSets beyond spec.revisionHistoryLimit that have fully
// drained. Old ReplicaSets that still have pods, or whose status lags their spec, are left
// for a later sync (kubernetes issues #40068, #41432, #81761).
func (c *Controller) pruneHistory(ctx context.Context, d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet) error {
	for _, rs := range deploymentutil.CleanupCandidates(d, oldRSs) {
		klog.FromContext(ctx).V(4).Info("Deleting ReplicaSet beyond the revision history limit", "replicaSet", klog.KObj(rs))
		err := c.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting old ReplicaSet %s: %w", klog.KObj(rs), err)
		}
	}
	return nil
}
