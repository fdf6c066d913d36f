package deployment

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/conditions"
	"github.com/bosun-dev/bosun/pkg/controller/deployment/deploymentutil"
	"github.com/bosun-dev/bosun/pkg/controller/hash"
)

// revisionSet is a Deployment's ReplicaSets split by template: current runs the
// Deployment's template (nil until it is created), old holds every other one.
type revisionSet struct {
	current *appsv1.ReplicaSet
	old     []*appsv1.ReplicaSet
}

// all returns the old ReplicaSets followed by the current one, in a new slice.
func (r revisionSet) all() []*appsv1.ReplicaSet {
	all := make([]*appsv1.ReplicaSet, 0, len(r.old)+1)
	all = append(all, r.old...)
	if r.current != nil {
		all = append(all, r.current)
	}
	return all
}

// nextRevision is the revision the current ReplicaSet must carry: one above every old one.
func (r revisionSet) nextRevision() string {
	return strconv.FormatInt(deploymentutil.MaxRevision(r.old)+1, 10)
}

// revisions splits d's ReplicaSets by template and brings the current one's annotations
// and revision, then d's revision annotation, up to date. With create, a missing current
// ReplicaSet is created; without, revs.current may be nil.
func (c *Controller) revisions(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, create bool) (revisionSet, error) {
	current := deploymentutil.FindNewReplicaSet(d, rsList)
	revs := revisionSet{old: deploymentutil.FindOldReplicaSets(rsList, current)}
	var err error
	switch {
	case current != nil:
		revs.current, err = c.refreshNewReplicaSet(ctx, d, current, revs.nextRevision())
	case create:
		revs.current, err = c.createNewReplicaSet(ctx, d, revs)
	}
	return revs, err
}

// refreshNewReplicaSet makes an existing current ReplicaSet carry d's annotations, the
// revision it is due and d's minReadySeconds. When it already does, d's own revision
// annotation and Progressing condition are brought up to date instead; when it did not,
// that waits for the next sync, which the ReplicaSet's update triggers. It returns the
// ReplicaSet to work with for the rest of the sync.
func (c *Controller) refreshNewReplicaSet(ctx context.Context, d *appsv1.Deployment, current *appsv1.ReplicaSet, revision string) (*appsv1.ReplicaSet, error) {
	rs := current.DeepCopy()
	annotated := deploymentutil.CopyDeploymentAnnotationsToReplicaSet(d, rs)
	revised := deploymentutil.SetNewReplicaSetRevision(rs, revision)
	if annotated || revised || rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
		rs.Spec.MinReadySeconds = d.Spec.MinReadySeconds
		written, err := c.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
		if err != nil {
			return nil, fmt.Errorf("updating annotations of new ReplicaSet %s: %w", klog.KObj(rs), err)
		}
		return written, nil
	}

	changed := deploymentutil.SetDeploymentRevision(d, rs.Annotations[deploymentutil.RevisionAnnotation])
	if deploymentutil.HasProgressDeadline(d) && conditions.Deployment.Get(d.Status.Conditions, appsv1.DeploymentProgressing) == nil {
		c.setProgressing(d, corev1.ConditionTrue, deploymentutil.ReasonFoundNewReplicaSet, fmt.Sprintf("Found new replica set %q", rs.Name))
		changed = true
	}
	if changed {
		// Through the status subresource: the annotation rides along without bumping
		// metadata.generation, which would make `kubectl rollout status` wait for a
		// generation nobody observes.
		if err := c.updateStatus(ctx, d); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// createNewReplicaSet creates the ReplicaSet for d's current template, named after the
// template's hash, sized as the strategy allows next to revs.old, and records its revision
// and the Progressing condition on d.
func (c *Controller) createNewReplicaSet(ctx context.Context, d *appsv1.Deployment, revs revisionSet) (*appsv1.ReplicaSet, error) {
	revision := revs.nextRevision()
	wanted, err := buildNewReplicaSet(d, revs.old, revision)
	if err != nil {
		return nil, err
	}

	created, err := c.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, wanted, metav1.CreateOptions{})
	fresh := err == nil
	switch {
	case apierrors.IsAlreadyExists(err):
		// Usually this controller's own earlier create, which the cache does not show yet.
		if created, err = c.resolveNameClash(ctx, d, wanted, err); err != nil {
			return nil, err
		}
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// Every create in the namespace fails now; nothing is worth reporting.
		return nil, fmt.Errorf("creating new ReplicaSet %s: %w", klog.KObj(wanted), err)
	case err != nil:
		c.reportCreateFailure(ctx, d, wanted, err)
		return nil, fmt.Errorf("creating new ReplicaSet %s: %w", klog.KObj(wanted), err)
	}

	if fresh && *wanted.Spec.Replicas > 0 {
		c.recorder.Eventf(d, corev1.EventTypeNormal, eventScalingReplicaSet, "Scaled up replica set %s from 0 to %d", created.Name, *wanted.Spec.Replicas)
	}
	changed := deploymentutil.SetDeploymentRevision(d, revision)
	if fresh && deploymentutil.HasProgressDeadline(d) {
		c.setProgressing(d, corev1.ConditionTrue, deploymentutil.ReasonNewReplicaSetCreated, fmt.Sprintf("Created new replica set %q", created.Name))
		changed = true
	}
	if changed {
		if err := c.updateStatus(ctx, d); err != nil {
			return nil, err
		}
	}
	return created, nil
}

// reportCreateFailure tells the user that the new ReplicaSet could not be created: in the
// Progressing condition (when d has a deadline) and in an event.
func (c *Controller) reportCreateFailure(ctx context.Context, d *appsv1.Deployment, wanted *appsv1.ReplicaSet, createErr error) {
	msg := fmt.Sprintf("Failed to create new replica set %q: %v", wanted.Name, createErr)
	if deploymentutil.HasProgressDeadline(d) {
		c.setProgressing(d, corev1.ConditionFalse, deploymentutil.ReasonReplicaSetCreateError, msg)
		// Best effort: the create error already retries the sync.
		if err := c.updateStatus(ctx, d); err != nil {
			klog.FromContext(ctx).V(2).Info("Reporting the failed ReplicaSet create in status failed", "err", err)
		}
	}
	c.recorder.Event(d, corev1.EventTypeWarning, deploymentutil.ReasonReplicaSetCreateError, msg)
}

// setProgressing records a Progressing condition stamped now on d's status.
func (c *Controller) setProgressing(d *appsv1.Deployment, status corev1.ConditionStatus, reason, msg string) {
	cond := deploymentutil.NewCondition(appsv1.DeploymentProgressing, status, reason, msg, c.now())
	d.Status.Conditions = conditions.Deployment.Set(d.Status.Conditions, cond)
}

// buildNewReplicaSet returns, without creating it, the ReplicaSet for d's template at
// revision, sized as if it already existed with 0 replicas next to oldRSs.
func buildNewReplicaSet(d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet, revision string) (*appsv1.ReplicaSet, error) {
	template := *d.Spec.Template.DeepCopy()
	templateHash := hash.ComputeHash(&template, d.Status.CollisionCount)
	// The hash label keeps the pods of one Deployment's ReplicaSets apart, in the pods'
	// labels and in each ReplicaSet's selector alike.
	template.Labels = withLabel(template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, templateHash)
	selector := d.Spec.Selector.DeepCopy()
	selector.MatchLabels = withLabel(selector.MatchLabels, appsv1.DefaultDeploymentUniqueLabelKey, templateHash)

	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			// A name derived from the template makes a repeated create fail rather than
			// duplicate the ReplicaSet.
			Name:            deploymentutil.ReplicaSetName(d.Name, templateHash),
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, controllerKind)},
			Labels:          maps.Clone(template.Labels),
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        new(int32),
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        selector,
			Template:        template,
		},
	}
	size, err := deploymentutil.NewRSNewReplicas(d, revisionSet{current: rs, old: oldRSs}.all(), rs)
	if err != nil {
		return nil, fmt.Errorf("sizing the new ReplicaSet of Deployment %s: %w", klog.KObj(d), err)
	}
	*rs.Spec.Replicas = size
	deploymentutil.CopyDeploymentAnnotationsToReplicaSet(d, rs)
	deploymentutil.SetNewReplicaSetRevision(rs, revision)
	deploymentutil.SetReplicasAnnotations(rs, *d.Spec.Replicas, *d.Spec.Replicas+deploymentutil.MaxSurge(d))
	return rs, nil
}

// resolveNameClash handles a create of wanted that failed with AlreadyExists (createErr).
// A ReplicaSet of that name that d controls and that runs d's template is the new
// ReplicaSet. Anything else is a hash collision (kubernetes issues #29735, #43449): d's
// status.collisionCount goes up by one, so that the retry, triggered by createErr, hashes
// to another name.
func (c *Controller) resolveNameClash(ctx context.Context, d *appsv1.Deployment, wanted *appsv1.ReplicaSet, createErr error) (*appsv1.ReplicaSet, error) {
	existing, err := c.replicaSets.ReplicaSets(wanted.Namespace).Get(wanted.Name)
	if err != nil {
		return nil, fmt.Errorf("reading ReplicaSet %s that blocks the create: %w", klog.KObj(wanted), err)
	}
	if metav1.IsControlledBy(existing, d) && deploymentutil.EqualIgnoreHash(&d.Spec.Template, &existing.Spec.Template) {
		return existing, nil
	}

	var collisions int32
	if d.Status.CollisionCount != nil {
		collisions = *d.Status.CollisionCount
	}
	collisions++
	d.Status.CollisionCount = &collisions
	logger := klog.FromContext(ctx)
	if err := c.updateStatus(ctx, d); err != nil {
		logger.V(2).Info("Recording a template hash collision failed", "err", err)
	} else {
		logger.V(2).Info("Template hash collides with another ReplicaSet; counted the collision so the next name differs",
			"replicaSet", klog.KObj(existing), "collisionCount", collisions)
	}
	return nil, fmt.Errorf("creating new ReplicaSet %s: %w", klog.KObj(wanted), createErr)
}

// withLabel returns a copy of m with key set to value.
func withLabel(m map[string]string, key, value string) map[string]string {
	out := make(map[string]string, len(m)+1)
	maps.Copy(out, m)
	out[key] = value
	return out
}
