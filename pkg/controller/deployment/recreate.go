package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/bosun-dev/bosun/pkg/controller/deployment/deploymentutil"
)

// rolloutRecreate advances a Recreate rollout (§7): scale every old ReplicaSet to zero, wait
// until none of their pods is left (terminating ones included), and only then create and
// scale up the new ReplicaSet, so that old and new pods never run at the same time.
func (c *Controller) rolloutRecreate(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, podMap map[types.UID][]*corev1.Pod) error {
	// Do not create the new ReplicaSet yet: the old pods have to go first.
	newRS, oldRSs, err := c.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	allRSs := withNew(oldRSs, newRS)

	scaledDown, err := c.scaleToZero(ctx, deploymentutil.FilterActive(oldRSs), d)
	if err != nil {
		return err
	}
	if scaledDown {
		return c.syncRolloutStatus(ctx, allRSs, newRS, d)
	}

	if oldPodsRunning(newRS, oldRSs, podMap) {
		// The pod deletion handler wakes us once the last old pod is gone.
		return c.syncRolloutStatus(ctx, allRSs, newRS, d)
	}

	if newRS == nil {
		if newRS, err = c.createNewReplicaSet(ctx, d, oldRSs); err != nil {
			return err
		}
		allRSs = withNew(oldRSs, newRS)
	}

	if _, err := c.scaleReplicaSet(ctx, newRS, *d.Spec.Replicas, false, d); err != nil {
		return err
	}

	if deploymentutil.DeploymentComplete(d, &d.Status) {
		if err := c.cleanupDeployment(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, allRSs, newRS, d)
}

// oldPodsRunning reports whether any pod of the old ReplicaSets may still run: their status
// still counts replicas, or a pod not belonging to the new ReplicaSet has not finished.
// Terminating pods count, as their containers may still be running; so do pods in the
// deprecated Unknown phase, which may be running on an unreachable node.
func oldPodsRunning(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, podMap map[types.UID][]*corev1.Pod) bool {
	if deploymentutil.ActualReplicaCount(oldRSs) > 0 {
		return true
	}
	for rsUID, pods := range podMap {
		if newRS != nil && newRS.UID == rsUID {
			continue
		}
		for _, pod := range pods {
			if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
				return true
			}
		}
	}
	return false
}
