package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/deployment/deploymentutil"
)

// stepRollingUpdate moves a RollingUpdate rollout on by one step. The new ReplicaSet grows
// first, as far as maxSurge leaves room; only a sync that grows nothing shrinks the old
// ones, as far as maxUnavailable allows. A sync that resized anything stops there: the
// ReplicaSets' status updates bring the Deployment back for the next step. History is
// pruned only once the rollout has finished, as until then an old ReplicaSet may still be
// the one to roll back to.
func (c *Controller) stepRollingUpdate(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	revs, err := c.revisions(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	resized, err := c.growNewReplicaSet(ctx, d, revs)
	if err == nil && !resized {
		resized, err = c.shrinkOldReplicaSets(ctx, d, revs)
	}
	if err != nil {
		return err
	}
	if !resized && deploymentutil.DeploymentComplete(d, &d.Status) {
		if err := c.pruneHistory(ctx, d, revs.old); err != nil {
			return err
		}
	}
	return c.writeRolloutStatus(ctx, d, revs)
}

// growNewReplicaSet moves the new ReplicaSet towards spec.replicas: straight down when it
// is too big, up by as much as maxSurge leaves room for. It reports whether it resized.
func (c *Controller) growNewReplicaSet(ctx context.Context, d *appsv1.Deployment, revs revisionSet) (bool, error) {
	want, have := *d.Spec.Replicas, *revs.current.Spec.Replicas
	if have == want {
		return false, nil
	}
	if have < want {
		var err error
		if want, err = deploymentutil.NewRSNewReplicas(d, revs.all(), revs.current); err != nil {
			return false, err
		}
	}
	return c.resizeReplicaSet(ctx, d, revs.current, want, false)
}

// shrinkOldReplicaSets scales the active old ReplicaSets down as far as maxUnavailable
// allows, their unavailable pods first, and reports whether it resized any. Unlike
// upstream, which only logs them, it returns write errors, so that the key is retried.
func (c *Controller) shrinkOldReplicaSets(ctx context.Context, d *appsv1.Deployment, revs revisionSet) (bool, error) {
	active := deploymentutil.FilterActive(revs.old)
	if deploymentutil.ReplicaCount(active) == 0 {
		return false, nil
	}
	anyResized := false
	for _, target := range deploymentutil.PlanOldReplicaSetsScaleDown(d, revs.all(), active, revs.current) {
		klog.FromContext(ctx).V(4).Info("Shrinking old ReplicaSet", "replicaSet", klog.KObj(target.RS), "to", target.Replicas)
		resized, err := c.resizeReplicaSet(ctx, d, target.RS, target.Replicas, false)
		if err != nil {
			return anyResized, err
		}
		anyResized = anyResized || resized
	}
	return anyResized, nil
}
