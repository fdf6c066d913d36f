package deployment

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/deployment/deploymentutil"
)

// Rollback event reasons (deployment.md §2).
const (
	eventRollbackRevisionNotFound  = "DeploymentRollbackRevisionNotFound"
	eventRollbackTemplateUnchanged = "DeploymentRollbackTemplateUnchanged"
	eventRollbackDone              = "DeploymentRollback"
)

// rollbackTo returns the revision requested by the legacy rollback annotation, or nil when
// there is none or it is not an integer. apps/v1 clients cannot set it through the API any
// more (extensions/v1beta1 had a rollback subresource), but a Deployment carrying it is still
// honoured.
func rollbackTo(d *appsv1.Deployment) *int64 {
	value, ok := d.Annotations[deploymentutil.RollbackToAnnotation]
	if !ok {
		return nil
	}
	revision, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return nil
	}
	return &revision
}

// rollback performs the rollback the annotation asks for (§12): it copies the template of the
// ReplicaSet with the requested revision (0: the previous one) into the Deployment and
// removes the annotation. The next pass then finds that ReplicaSet as the new one and
// gives it the next revision.
func (c *Controller) rollback(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	logger := klog.FromContext(ctx)
	newRS, oldRSs, err := c.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	allRSs := withNew(oldRSs, newRS)

	revision := *rollbackTo(d)
	if revision == 0 {
		revision = deploymentutil.LastRevision(allRSs)
		if revision == 0 {
			c.recorder.Event(d, corev1.EventTypeWarning, eventRollbackRevisionNotFound, "Unable to find last revision.")
			return c.clearRollbackTo(ctx, d)
		}
	}

	for _, rs := range allRSs {
		v, err := deploymentutil.Revision(rs)
		if err != nil {
			logger.V(4).Info("Ignoring replica set with an unparsable revision", "replicaSet", klog.KObj(rs), "err", err)
			continue
		}
		if v != revision {
			continue
		}
		if deploymentutil.EqualIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
			c.recorder.Eventf(d, corev1.EventTypeWarning, eventRollbackTemplateUnchanged,
				"The rollback revision contains the same template as current deployment %q", d.Name)
			return c.clearRollbackTo(ctx, d)
		}
		logger.V(4).Info("Rolling back deployment", "deployment", klog.KObj(d), "replicaSet", klog.KObj(rs), "revision", revision)
		setTemplateFrom(d, rs)
		// The Deployment's annotations are copied onto its new ReplicaSet; take the old
		// ReplicaSet's back first, or the rolled-back ReplicaSet would be relabelled with the
		// annotations (change-cause in particular) of the revision being undone.
		deploymentutil.SetDeploymentAnnotationsTo(d, rs)
		if err := c.clearRollbackTo(ctx, d); err != nil {
			return err
		}
		c.recorder.Eventf(d, corev1.EventTypeNormal, eventRollbackDone, "Rolled back deployment %q to revision %d", d.Name, revision)
		return nil
	}

	c.recorder.Event(d, corev1.EventTypeWarning, eventRollbackRevisionNotFound, "Unable to find the revision to rollback to.")
	return c.clearRollbackTo(ctx, d)
}

// setTemplateFrom copies rs's pod template (metadata and spec) into d, without the
// pod-template-hash label the ReplicaSet added to it.
func setTemplateFrom(d *appsv1.Deployment, rs *appsv1.ReplicaSet) {
	template := rs.Spec.Template.DeepCopy()
	delete(template.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	d.Spec.Template.ObjectMeta = template.ObjectMeta
	d.Spec.Template.Spec = template.Spec
}

// clearRollbackTo removes the rollback annotation with a normal update, together with any
// template change made for the rollback.
func (c *Controller) clearRollbackTo(ctx context.Context, d *appsv1.Deployment) error {
	delete(d.Annotations, deploymentutil.RollbackToAnnotation)
	if _, err := c.client.AppsV1().Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating deployment %s after rollback: %w", klog.KObj(d), err)
	}
	return nil
}
