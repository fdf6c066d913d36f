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

// Rollback event reasons. Users and tools match on them.
const (
	eventRollbackRevisionNotFound  = "DeploymentRollbackRevisionNotFound"
	eventRollbackTemplateUnchanged = "DeploymentRollbackTemplateUnchanged"
	eventRollbackDone              = "DeploymentRollback"
)

// rollbackTo returns the revision the legacy rollback annotation asks for, or nil when there
// is none or it is not an integer. apps/v1 has no way left to set it through the API (the
// rollback subresource went with extensions/v1beta1), but a Deployment carrying it is still
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

// rollback carries out the rollback the annotation asks for: d takes the pod template of
// the ReplicaSet at the requested revision (0: the one before the current) and loses the
// annotation, in one update. The next sync finds that ReplicaSet as the current one and
// gives it the next revision. A revision that cannot be found, or whose template is d's
// already, only costs the annotation and an event.
func (c *Controller) rollback(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	revs, err := c.revisions(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	target, revision, notFound := rollbackTarget(ctx, revs.all(), *rollbackTo(d))
	switch {
	case target == nil:
		c.recorder.Event(d, corev1.EventTypeWarning, eventRollbackRevisionNotFound, notFound)
	case deploymentutil.EqualIgnoreHash(&d.Spec.Template, &target.Spec.Template):
		c.recorder.Eventf(d, corev1.EventTypeWarning, eventRollbackTemplateUnchanged,
			"The rollback revision contains the same template as current deployment %q", d.Name)
	default:
		klog.FromContext(ctx).V(4).Info("Rolling Deployment back", "revision", revision, "replicaSet", klog.KObj(target))
		restoreTemplate(d, target)
		if err := c.clearRollbackTo(ctx, d); err != nil {
			return err
		}
		c.recorder.Eventf(d, corev1.EventTypeNormal, eventRollbackDone, "Rolled back deployment %q to revision %d", d.Name, revision)
		return nil
	}
	return c.clearRollbackTo(ctx, d)
}

// rollbackTarget finds the ReplicaSet at revision among rsList, 0 meaning the revision before
// the newest. When there is none it returns the message the event tells the user.
func rollbackTarget(ctx context.Context, rsList []*appsv1.ReplicaSet, revision int64) (*appsv1.ReplicaSet, int64, string) {
	if revision == 0 {
		if revision = deploymentutil.LastRevision(rsList); revision == 0 {
			return nil, 0, "Unable to find last revision."
		}
	}
	for _, rs := range rsList {
		v, err := deploymentutil.Revision(rs)
		if err != nil {
			klog.FromContext(ctx).V(4).Info("Skipping ReplicaSet with an unreadable revision", "replicaSet", klog.KObj(rs), "err", err)
			continue
		}
		if v == revision {
			return rs, revision, ""
		}
	}
	return nil, revision, "Unable to find the revision to rollback to."
}

// restoreTemplate gives d the pod template of rs (without the pod-template-hash label the
// ReplicaSet added) and rs's annotations. The annotations come back too because d's are
// copied onto its new ReplicaSet: without them the restored ReplicaSet would be relabelled
// with the annotations, change-cause in particular, of the revision being undone.
func restoreTemplate(d *appsv1.Deployment, rs *appsv1.ReplicaSet) {
	template := rs.Spec.Template.DeepCopy()
	delete(template.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	d.Spec.Template.ObjectMeta = template.ObjectMeta
	d.Spec.Template.Spec = template.Spec
	deploymentutil.SetDeploymentAnnotationsTo(d, rs)
}

// clearRollbackTo drops the rollback annotation with a normal update, which carries any
// template change made for the rollback too.
func (c *Controller) clearRollbackTo(ctx context.Context, d *appsv1.Deployment) error {
	delete(d.Annotations, deploymentutil.RollbackToAnnotation)
	if _, err := c.client.AppsV1().Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("removing the rollback annotation of Deployment %s: %w", klog.KObj(d), err)
	}
	return nil
}
