package deployment

import (
	"context"
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/deployment/deploymentutil"
	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/controller/refmanager"
)

// Event reasons and messages that are not conditions. Users and tools match on them.
const (
	eventScalingReplicaSet = "ScalingReplicaSet"
	eventSelectingAll      = "SelectingAll"

	selectingAllMessage = "This deployment is selecting all pods. A non-empty selector is required."
)

// step is the one kind of work a sync does for a Deployment.
type step string

const (
	// stepStatusOnly: the Deployment is being deleted; only its status is refreshed.
	stepStatusOnly step = "status-only"
	// stepResize: paused, or spec.replicas changed; the existing ReplicaSets are resized
	// and no new one is created.
	stepResize step = "resize"
	// stepRollback: the legacy rollback annotation asks for an earlier template.
	stepRollback step = "rollback"
	// stepRollout: the strategy moves the rollout on.
	stepRollout step = "rollout"
)

// chooseStep picks the work for d, in a fixed precedence: deletion, then pause, then a
// pending rollback, then a change of spec.replicas, then the rollout itself. A paused
// Deployment is only resized, so a rollback requested while paused waits for resume.
func chooseStep(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) step {
	switch {
	case d.DeletionTimestamp != nil:
		return stepStatusOnly
	case d.Spec.Paused:
		return stepResize
	case rollbackTo(d) != nil:
		return stepRollback
	case isScalingEvent(d, rsList):
		return stepResize
	default:
		return stepRollout
	}
}

// syncDeployment moves the Deployment named by key one step towards its desired state.
// Each step either finishes or writes something and returns; the watch event of that write
// brings the Deployment back for the next step.
func (c *Controller) syncDeployment(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx).WithValues("deployment", key)
	ctx = klog.NewContext(ctx, logger)
	began := c.clock.Now()
	defer func() { logger.V(4).Info("Deployment sync done", "took", c.clock.Since(began)) }()

	namespace, name, err := queue.SplitKey(key)
	if err != nil {
		return err
	}
	cached, err := c.deployments.Deployments(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		// Its ReplicaSets are the garbage collector's now.
		logger.V(2).Info("Deployment is gone; nothing to do")
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Deployment %s from the cache: %w", key, err)
	}
	// Every step edits d and writes it back; the cached object must stay untouched.
	d := cached.DeepCopy()

	if reflect.DeepEqual(d.Spec.Selector, &metav1.LabelSelector{}) {
		c.refuseSelectAll(ctx, d)
		return nil
	}
	rsList, err := c.claimReplicaSets(ctx, d)
	if err != nil {
		return err
	}

	next := chooseStep(d, rsList)
	logger.V(4).Info("Deployment sync step", "step", next)
	if next != stepStatusOnly {
		// Pausing and resuming are recorded before any step, so that the progress deadline
		// restarts from the resume.
		if err := c.recordPauseOrResume(ctx, d); err != nil {
			return err
		}
	}
	switch next {
	case stepStatusOnly:
		return c.refreshStatus(ctx, d, rsList)
	case stepResize:
		return c.resize(ctx, d, rsList)
	case stepRollback:
		return c.rollback(ctx, d, rsList)
	}
	switch d.Spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		return c.stepRecreate(ctx, d, rsList)
	case appsv1.RollingUpdateDeploymentStrategyType:
		return c.stepRollingUpdate(ctx, d, rsList)
	}
	return fmt.Errorf("deployment %s has unknown strategy type %q", key, d.Spec.Strategy.Type)
}

// refuseSelectAll warns about a Deployment whose empty selector would select every pod of
// its namespace, and acts on nothing else. It still records the generation as observed,
// so that `kubectl rollout status` stops waiting and the event explains why.
func (c *Controller) refuseSelectAll(ctx context.Context, d *appsv1.Deployment) {
	c.recorder.Event(d, corev1.EventTypeWarning, eventSelectingAll, selectingAllMessage)
	if d.Status.ObservedGeneration >= d.Generation {
		return
	}
	d.Status.ObservedGeneration = d.Generation
	if err := c.updateStatus(ctx, d); err != nil {
		// The event already tells the user; the next change or resync tries again.
		klog.FromContext(ctx).V(2).Info("Recording the observed generation of a select-all Deployment failed", "err", err)
	}
}

// claimReplicaSets adopts the matching orphan ReplicaSets of d's namespace, releases owned
// ones that no longer match, and returns the ones d owns afterwards.
func (c *Controller) claimReplicaSets(ctx context.Context, d *appsv1.Deployment) ([]*appsv1.ReplicaSet, error) {
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("parsing the selector of Deployment %s: %w", klog.KObj(d), err)
	}
	candidates, err := c.replicaSets.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing ReplicaSets in namespace %s: %w", d.Namespace, err)
	}
	// The cache may not show yet that d is being deleted; a live read makes sure such a
	// Deployment adopts nothing the garbage collector would then have to chase.
	canAdopt := refmanager.RecheckDeletionTimestamp(d, controllerKind.Kind, refmanager.LiveDeployment(c.client, d))
	claimer := refmanager.New(d, controllerKind, selector, canAdopt, refmanager.ReplicaSetPatcher(c.client))
	owned, err := refmanager.ClaimAll(ctx, claimer, candidates, nil)
	if err != nil {
		return nil, fmt.Errorf("claiming ReplicaSets for Deployment %s: %w", klog.KObj(d), err)
	}
	return owned, nil
}

// podsByReplicaSet returns the pods, in any phase, that each ReplicaSet of rsList controls,
// by ReplicaSet UID.
func (c *Controller) podsByReplicaSet(rsList []*appsv1.ReplicaSet) (map[types.UID][]*corev1.Pod, error) {
	pods := make(map[types.UID][]*corev1.Pod, len(rsList))
	for _, rs := range rsList {
		controlled, err := podutil.PodsForOwner(c.podIndexer, rs, "ReplicaSet", false)
		if err != nil {
			return nil, fmt.Errorf("listing pods of ReplicaSet %s: %w", klog.KObj(rs), err)
		}
		pods[rs.UID] = controlled
	}
	return pods, nil
}

// refreshStatus writes the status of a Deployment being deleted, creating and scaling
// nothing.
func (c *Controller) refreshStatus(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	revs, err := c.revisions(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	return c.writeStatus(ctx, d, revs)
}

// resize serves a paused Deployment and a change of spec.replicas: it sizes the existing
// ReplicaSets, never creates one, and writes status without judging progress.
func (c *Controller) resize(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	revs, err := c.revisions(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	if err := c.scaleReplicaSets(ctx, d, revs); err != nil {
		// The key is retried; status catches up then.
		return err
	}
	// A paused rollout never completes, so history would otherwise never be pruned. A
	// pending rollback may still need an old ReplicaSet, so it waits.
	if d.Spec.Paused && rollbackTo(d) == nil {
		if err := c.pruneHistory(ctx, d, revs.old); err != nil {
			return err
		}
	}
	return c.writeStatus(ctx, d, revs)
}

// isScalingEvent reports whether spec.replicas changed since the active ReplicaSets were
// last sized: each records in its desired-replicas annotation the value it was sized for.
func isScalingEvent(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) bool {
	for _, rs := range deploymentutil.FilterActive(rsList) {
		if sizedFor, ok := deploymentutil.DesiredReplicasFromAnnotation(rs); ok && sizedFor != *d.Spec.Replicas {
			return true
		}
	}
	return false
}
