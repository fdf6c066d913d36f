package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/deployment/deploymentutil"
)

// rolloutRolling advances a RollingUpdate rollout by one step (§6.2): first scale the new
// ReplicaSet up as far as maxSurge allows, then the old ones down as far as maxUnavailable
// allows. Each step that scales something ends the pass; the ReplicaSet controller's status
// updates bring the Deployment back for the next step.
func (c *Controller) rolloutRolling(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	allRSs := withNew(oldRSs, newRS)

	scaledUp, err := c.reconcileNewReplicaSet(ctx, allRSs, newRS, d)
	if err != nil {
		return err
	}
	if scaledUp {
		return c.syncRolloutStatus(ctx, allRSs, newRS, d)
	}

	scaledDown, err := c.reconcileOldReplicaSets(ctx, allRSs, deploymentutil.FilterActive(oldRSs), newRS, d)
	if err != nil {
		return err
	}
	if scaledDown {
		return c.syncRolloutStatus(ctx, allRSs, newRS, d)
	}

	// Only a finished rollout may drop history: until then an old ReplicaSet may still be
	// needed to roll back to.
	if deploymentutil.DeploymentComplete(d, &d.Status) {
		if err := c.cleanupDeployment(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, allRSs, newRS, d)
}

// reconcileNewReplicaSet moves the new ReplicaSet towards spec.replicas: down at once when it
// is too big, up by as much as maxSurge leaves room for. It reports whether it scaled.
func (c *Controller) reconcileNewReplicaSet(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	replicas := *d.Spec.Replicas
	current := *newRS.Spec.Replicas
	if current == replicas {
		return false, nil
	}
	if current > replicas {
		return c.scaleReplicaSet(ctx, newRS, replicas, false, d)
	}
	target, err := deploymentutil.NewRSNewReplicas(d, allRSs, newRS)
	if err != nil {
		return false, err
	}
	return c.scaleReplicaSet(ctx, newRS, target, false, d)
}

// reconcileOldReplicaSets scales the active old ReplicaSets down as far as maxUnavailable
// allows, unhealthy replicas first (§6.2 step 3). It reports whether it scaled anything.
// Unlike upstream, which swallows these errors, it returns them so that the key is requeued.
func (c *Controller) reconcileOldReplicaSets(ctx context.Context, allRSs, activeOldRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	if deploymentutil.ReplicaCount(activeOldRSs) == 0 {
		// Nothing left to scale down.
		return false, nil
	}
	logger := klog.FromContext(ctx)
	scaled := false
	for _, target := range deploymentutil.PlanOldReplicaSetsScaleDown(d, allRSs, activeOldRSs, newRS) {
		logger.V(4).Info("Scaling down old replica set", "replicaSet", klog.KObj(target.RS), "from", *target.RS.Spec.Replicas, "to", target.Replicas)
		changed, err := c.scaleReplicaSet(ctx, target.RS, target.Replicas, false, d)
		if err != nil {
			return scaled, err
		}
		scaled = scaled || changed
	}
	return scaled, nil
}
