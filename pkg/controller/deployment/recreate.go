package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/bosun-dev/bosun/pkg/controller/deployment/deploymentutil"
)

// stepRecreate moves a Recreate rollout on: every old ReplicaSet goes to zero, then, once
// none of their pods is left (terminating ones included), the new ReplicaSet is created
// and sized, so that old and new pods never run at the same time.
func (c *Controller) stepRecreate(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	// The new ReplicaSet must not exist before the old pods are gone.
	revs, err := c.revisions(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	resized, err := c.scaleToZero(ctx, d, deploymentutil.FilterActive(revs.old))
	if err != nil {
		return err
	}
	if resized {
		return c.writeRolloutStatus(ctx, d, revs)
	}
	left, err := c.oldPodsLeft(revs)
	if err != nil {
		return err
	}
	if left {
		// The pod delete handler brings the Deployment back after the last one.
		return c.writeRolloutStatus(ctx, d, revs)
	}

	if revs.current == nil {
		if revs.current, err = c.createNewReplicaSet(ctx, d, revs); err != nil {
			return err
		}
	}
	if _, err := c.resizeReplicaSet(ctx, d, revs.current, *d.Spec.Replicas, false); err != nil {
		return err
	}
	if deploymentutil.DeploymentComplete(d, &d.Status) {
		if err := c.pruneHistory(ctx, d, revs.old); err != nil {
			return err
		}
	}
	return c.writeRolloutStatus(ctx, d, revs)
}

// oldPodsLeft reports whether a pod of an old ReplicaSet may still be running: their
// status still counts replicas, or one of their pods has not finished. Terminating pods
// count, as their containers may still run, and so do pods in the deprecated Unknown
// phase, which may run on an unreachable node.
func (c *Controller) oldPodsLeft(revs revisionSet) (bool, error) {
	if deploymentutil.ActualReplicaCount(revs.old) > 0 {
		return true, nil
	}
	podsByRS, err := c.podsByReplicaSet(revs.old)
	if err != nil {
		return false, err
	}
	for _, pods := range podsByRS {
		for _, pod := range pods {
			if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
				return true, nil
			}
		}
	}
	return false, nil
}
