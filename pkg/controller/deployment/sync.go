package deployment

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/deployment/deploymentutil"
	"github.com/bosun-dev/bosun/pkg/controller/hash"
	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/controller/refmanager"
	"github.com/bosun-dev/bosun/pkg/features"
)

// Event reasons and messages that are not conditions (deployment.md §2).
const (
	eventScalingReplicaSet = "ScalingReplicaSet"
	eventSelectingAll      = "SelectingAll"

	selectingAllMessage = "This deployment is selecting all pods. A non-empty selector is required."
)

// syncDeployment brings one Deployment, named by its queue key, one step closer to its
// desired state. Every step either finishes the pass or writes something and returns; the
// write's watch event triggers the next pass.
func (c *Controller) syncDeployment(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx)
	namespace, name, err := queue.SplitKey(key)
	if err != nil {
		return err
	}
	start := c.clock.Now()
	logger.V(4).Info("Started syncing deployment", "deployment", klog.KRef(namespace, name))
	defer func() {
		logger.V(4).Info("Finished syncing deployment", "deployment", klog.KRef(namespace, name), "duration", c.clock.Since(start))
	}()

	cached, err := c.dLister.Deployments(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		logger.V(2).Info("Deployment has been deleted", "deployment", klog.KRef(namespace, name))
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting deployment %s from the cache: %w", key, err)
	}
	// Never mutate the cache: every step below edits d and writes it back.
	d := cached.DeepCopy()

	if reflect.DeepEqual(d.Spec.Selector, &metav1.LabelSelector{}) {
		c.recorder.Event(d, corev1.EventTypeWarning, eventSelectingAll, selectingAllMessage)
		if d.Status.ObservedGeneration < d.Generation {
			// Let `kubectl rollout status` see that the spec was read, even though it is
			// refused; the event explains why nothing else happens.
			d.Status.ObservedGeneration = d.Generation
			if _, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
				logger.V(2).Info("Couldn't record the observed generation of a select-all deployment", "deployment", klog.KObj(d), "err", err)
			}
		}
		return nil
	}

	rsList, err := c.getReplicaSetsForDeployment(ctx, d)
	if err != nil {
		return err
	}
	podMap, err := c.getPodMapForDeployment(rsList)
	if err != nil {
		return err
	}

	if d.DeletionTimestamp != nil {
		return c.syncStatusOnly(ctx, d, rsList)
	}
	if err := c.checkPausedConditions(ctx, d); err != nil {
		return err
	}
	if d.Spec.Paused {
		return c.sync(ctx, d, rsList)
	}
	if rollbackTo(d) != nil {
		return c.rollback(ctx, d, rsList)
	}
	if isScalingEvent(d, rsList) {
		return c.sync(ctx, d, rsList)
	}

	switch d.Spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		return c.rolloutRecreate(ctx, d, rsList, podMap)
	case appsv1.RollingUpdateDeploymentStrategyType:
		return c.rolloutRolling(ctx, d, rsList)
	}
	return fmt.Errorf("unexpected deployment strategy type: %s", d.Spec.Strategy.Type)
}

// getReplicaSetsForDeployment claims the ReplicaSets of d's namespace: it adopts matching
// orphans and releases owned ones that no longer match, and returns the ones d owns.
func (c *Controller) getReplicaSetsForDeployment(ctx context.Context, d *appsv1.Deployment) ([]*appsv1.ReplicaSet, error) {
	all, err := c.rsLister.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing replica sets of namespace %s: %w", d.Namespace, err)
	}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s has an invalid label selector: %w", klog.KObj(d), err)
	}
	// The live GET makes sure a Deployment being deleted (which the cache may not show yet)
	// adopts nothing that the garbage collector would then have to chase.
	canAdopt := refmanager.RecheckDeletionTimestamp(d, controllerKind.Kind, refmanager.LiveDeployment(c.client, d))
	manager := refmanager.New(d, controllerKind, selector, canAdopt, refmanager.ReplicaSetPatcher(c.client))
	owned, err := refmanager.ClaimAll(ctx, manager, all, nil)
	if err != nil {
		return nil, fmt.Errorf("claiming replica sets for deployment %s: %w", klog.KObj(d), err)
	}
	return owned, nil
}

// getPodMapForDeployment returns, per claimed ReplicaSet UID, the pods that RS controls, in
// any phase. Recreate needs it to wait until every old pod is gone.
func (c *Controller) getPodMapForDeployment(rsList []*appsv1.ReplicaSet) (map[types.UID][]*corev1.Pod, error) {
	podMap := make(map[types.UID][]*corev1.Pod, len(rsList))
	for _, rs := range rsList {
		pods, err := podutil.PodsForOwner(c.podIndexer, rs, "ReplicaSet", false)
		if err != nil {
			return nil, fmt.Errorf("listing pods of replica set %s: %w", klog.KObj(rs), err)
		}
		podMap[rs.UID] = pods
	}
	return podMap, nil
}

// syncStatusOnly refreshes the status of a Deployment being deleted without creating or
// scaling anything.
func (c *Controller) syncStatusOnly(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	return c.syncDeploymentStatus(ctx, withNew(oldRSs, newRS), newRS, d)
}

// sync handles a paused Deployment and a scaling event: it resizes the existing ReplicaSets,
// never creates one, and writes the status without judging progress.
func (c *Controller) sync(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	if err := c.scale(ctx, d, newRS, oldRSs); err != nil {
		// The Deployment is requeued; the status catches up on the next pass.
		return err
	}
	// A paused Deployment never completes, so cleanup would never run otherwise. A pending
	// rollback may still need an old ReplicaSet, so it waits.
	if d.Spec.Paused && rollbackTo(d) == nil {
		if err := c.cleanupDeployment(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return c.syncDeploymentStatus(ctx, withNew(oldRSs, newRS), newRS, d)
}

// isScalingEvent reports whether spec.replicas changed since the active ReplicaSets were last
// sized: their desired-replicas annotation records the value they were sized for.
func isScalingEvent(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) bool {
	for _, rs := range deploymentutil.FilterActive(rsList) {
		desired, ok := deploymentutil.DesiredReplicasFromAnnotation(rs)
		if ok && desired != *d.Spec.Replicas {
			return true
		}
	}
	return false
}

// getAllReplicaSetsAndSyncRevision splits rsList into the new ReplicaSet and the old ones,
// bringing the new one's annotations and revision (and the Deployment's revision) up to date.
// With createIfMissing the new ReplicaSet is created when none matches the template; without,
// newRS may be nil.
func (c *Controller) getAllReplicaSetsAndSyncRevision(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet,
	createIfMissing bool) (newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, err error) {
	existing := deploymentutil.FindNewReplicaSet(d, rsList)
	oldRSs = deploymentutil.FindOldReplicaSets(d, rsList, existing)
	switch {
	case existing != nil:
		newRS, err = c.syncExistingNewReplicaSet(ctx, d, existing, oldRSs)
	case createIfMissing:
		newRS, err = c.createNewReplicaSet(ctx, d, oldRSs)
	}
	if err != nil {
		return nil, nil, err
	}
	return newRS, oldRSs, nil
}

// newRevision is the revision the new ReplicaSet must carry: one above every old one.
func newRevision(oldRSs []*appsv1.ReplicaSet) string {
	return strconv.FormatInt(deploymentutil.MaxRevision(oldRSs)+1, 10)
}

// syncExistingNewReplicaSet brings an existing new ReplicaSet's annotations, revision and
// minReadySeconds up to date, and then the Deployment's revision annotation and
// Progressing condition. It returns the ReplicaSet to use for the rest of this pass.
func (c *Controller) syncExistingNewReplicaSet(ctx context.Context, d *appsv1.Deployment, existing *appsv1.ReplicaSet,
	oldRSs []*appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	rs := existing.DeepCopy()
	// Evaluate both: each may change the copy.
	annotationsChanged := deploymentutil.CopyDeploymentAnnotationsToReplicaSet(d, rs)
	revisionChanged := deploymentutil.SetNewReplicaSetRevision(rs, newRevision(oldRSs))
	if annotationsChanged || revisionChanged || rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
		rs.Spec.MinReadySeconds = d.Spec.MinReadySeconds
		updated, err := c.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
		if err != nil {
			return nil, fmt.Errorf("updating new replica set %s: %w", klog.KObj(rs), err)
		}
		// The Deployment's revision follows on the next pass, triggered by this update.
		return updated, nil
	}

	changed := deploymentutil.SetDeploymentRevision(d, rs.Annotations[deploymentutil.RevisionAnnotation])
	if deploymentutil.HasProgressDeadline(d) && deploymentutil.GetCondition(d.Status, appsv1.DeploymentProgressing) == nil {
		msg := fmt.Sprintf("Found new replica set %q", rs.Name)
		cond := deploymentutil.NewCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, deploymentutil.ReasonFoundNewReplicaSet, msg, c.now())
		deploymentutil.SetCondition(&d.Status, *cond)
		changed = true
	}
	if changed {
		// A status write carries the annotation without bumping metadata.generation; a normal
		// update would bump it and make `kubectl rollout status` wait for a generation that
		// nobody observes.
		if err := c.updateStatus(ctx, d); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// createNewReplicaSet creates the ReplicaSet for d's current template, named after the
// template hash. A name clash with a ReplicaSet of another template bumps
// status.collisionCount, so that the next attempt uses another hash.
func (c *Controller) createNewReplicaSet(ctx context.Context, d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	logger := klog.FromContext(ctx)
	revision := newRevision(oldRSs)
	rs, err := c.newReplicaSetObject(d, oldRSs, revision)
	if err != nil {
		return nil, err
	}
	replicas := *rs.Spec.Replicas

	created, err := c.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	alreadyExisted := false
	switch {
	case apierrors.IsAlreadyExists(err):
		// Usually our own earlier create that the cache has not shown us yet.
		created, err = c.claimExistingOrBumpCollisionCount(ctx, d, rs, err)
		if err != nil {
			return nil, err
		}
		alreadyExisted = true
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// Every create in the namespace fails now; there is nothing to report.
		return nil, fmt.Errorf("creating new replica set %s: %w", klog.KObj(rs), err)
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", rs.Name, err)
		if deploymentutil.HasProgressDeadline(d) {
			cond := deploymentutil.NewCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, deploymentutil.ReasonReplicaSetCreateError, msg, c.now())
			deploymentutil.SetCondition(&d.Status, *cond)
			// Best effort: the returned error already requeues, and reporting it matters more.
			if err := c.updateStatus(ctx, d); err != nil {
				logger.V(2).Info("Couldn't report the replica set create error", "deployment", klog.KObj(d), "err", err)
			}
		}
		c.recorder.Event(d, corev1.EventTypeWarning, deploymentutil.ReasonReplicaSetCreateError, msg)
		return nil, fmt.Errorf("creating new replica set %s: %w", klog.KObj(rs), err)
	}

	if !alreadyExisted && replicas > 0 {
		c.recorder.Eventf(d, corev1.EventTypeNormal, eventScalingReplicaSet, "Scaled up replica set %s from 0 to %d", created.Name, replicas)
	}
	changed := deploymentutil.SetDeploymentRevision(d, revision)
	if !alreadyExisted && deploymentutil.HasProgressDeadline(d) {
		msg := fmt.Sprintf("Created new replica set %q", created.Name)
		cond := deploymentutil.NewCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, deploymentutil.ReasonNewReplicaSetCreated, msg, c.now())
		deploymentutil.SetCondition(&d.Status, *cond)
		changed = true
	}
	if changed {
		if err := c.updateStatus(ctx, d); err != nil {
			return nil, err
		}
	}
	return created, nil
}

// newReplicaSetObject builds (without creating) the new ReplicaSet for d's template.
func (c *Controller) newReplicaSetObject(d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet, revision string) (*appsv1.ReplicaSet, error) {
	template := *d.Spec.Template.DeepCopy()
	templateHash := hash.ComputeHash(&template, d.Status.CollisionCount)
	// The hash label keeps the pods of different ReplicaSets of one Deployment apart, in
	// both the pods' labels and the ReplicaSet's selector.
	template.Labels = withLabel(template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, templateHash)
	selector := d.Spec.Selector.DeepCopy()
	selector.MatchLabels = withLabel(selector.MatchLabels, appsv1.DefaultDeploymentUniqueLabelKey, templateHash)

	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			// A deterministic name makes a repeated create fail instead of duplicating.
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
	// Size it as if it already existed with 0 replicas next to the old ones.
	replicas, err := deploymentutil.NewRSNewReplicas(d, withNew(oldRSs, rs), rs)
	if err != nil {
		return nil, fmt.Errorf("computing the size of the new replica set of deployment %s: %w", klog.KObj(d), err)
	}
	*rs.Spec.Replicas = replicas
	deploymentutil.CopyDeploymentAnnotationsToReplicaSet(d, rs)
	deploymentutil.SetNewReplicaSetRevision(rs, revision)
	deploymentutil.SetReplicasAnnotations(rs, *d.Spec.Replicas, *d.Spec.Replicas+deploymentutil.MaxSurge(d))
	return rs, nil
}

// claimExistingOrBumpCollisionCount handles a create that failed with AlreadyExists
// (createErr). If the ReplicaSet of that name is ours and has our template, it is the new
// ReplicaSet. Otherwise two templates hashed to the same name (kubernetes issues #29735,
// #43449): bump status.collisionCount and return createErr to retry with another hash.
func (c *Controller) claimExistingOrBumpCollisionCount(ctx context.Context, d *appsv1.Deployment, wanted *appsv1.ReplicaSet, createErr error) (*appsv1.ReplicaSet, error) {
	logger := klog.FromContext(ctx)
	existing, err := c.rsLister.ReplicaSets(wanted.Namespace).Get(wanted.Name)
	if err != nil {
		return nil, fmt.Errorf("getting existing replica set %s from the cache: %w", klog.KObj(wanted), err)
	}
	if metav1.IsControlledBy(existing, d) && deploymentutil.EqualIgnoreHash(&d.Spec.Template, &existing.Spec.Template) {
		return existing, nil
	}

	previous := int32(0)
	if d.Status.CollisionCount != nil {
		previous = *d.Status.CollisionCount
	}
	next := previous + 1
	d.Status.CollisionCount = &next
	if err := c.updateStatus(ctx, d); err != nil {
		logger.V(2).Info("Couldn't bump the collision count", "deployment", klog.KObj(d), "err", err)
	} else {
		logger.V(2).Info("Found a hash collision for deployment; bumped collisionCount to resolve it",
			"deployment", klog.KObj(d), "replicaSet", klog.KObj(existing), "oldCollisionCount", previous, "newCollisionCount", next)
	}
	return nil, fmt.Errorf("creating new replica set %s: %w", klog.KObj(wanted), createErr)
}

// scale resizes the ReplicaSets of a Deployment whose spec.replicas changed (§8.2): a single
// active ReplicaSet takes the whole change; a saturated new ReplicaSet drains the old ones;
// otherwise a rolling Deployment spreads the change proportionally.
func (c *Controller) scale(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) error {
	replicas := *d.Spec.Replicas
	if target := activeOrLatest(newRS, oldRSs); target != nil {
		_, err := c.scaleReplicaSet(ctx, target, replicas, false, d)
		return err
	}

	if newRS != nil && deploymentutil.IsSaturated(d, newRS) {
		_, err := c.scaleToZero(ctx, deploymentutil.FilterActive(oldRSs), d)
		return err
	}

	// Recreate scales only through its rollout: old and new pods must never run together.
	if !deploymentutil.IsRollingUpdate(d) {
		return nil
	}
	for _, target := range deploymentutil.ProportionalScale(d, deploymentutil.FilterActive(withNew(oldRSs, newRS))) {
		// Forced, so that every ReplicaSet records the new desired/max replicas even when
		// its own size stays the same; later scaling events compare against them.
		if _, err := c.scaleReplicaSet(ctx, target.RS, target.Replicas, true, d); err != nil {
			return err
		}
	}
	return nil
}

// activeOrLatest returns the one ReplicaSet that should take a whole scaling event: the only
// active one, or, when none is active, the new one or else the newest old one. It returns nil
// when several are active.
func activeOrLatest(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	active := deploymentutil.FilterActive(withNew(oldRSs, newRS))
	switch len(active) {
	case 0:
		if newRS != nil {
			return newRS
		}
		if len(oldRSs) == 0 {
			return nil
		}
		byAge := append([]*appsv1.ReplicaSet(nil), oldRSs...)
		deploymentutil.SortByCreation(byAge)
		return byAge[len(byAge)-1]
	case 1:
		return active[0]
	default:
		return nil
	}
}

// scaleReplicaSet sets rs to size replicas and refreshes its desired/max replica annotations.
// Unless force is set, an RS already at size is left alone. It reports whether the size
// changed.
func (c *Controller) scaleReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, size int32, force bool, d *appsv1.Deployment) (bool, error) {
	current := *rs.Spec.Replicas
	if !force && current == size {
		return false, nil
	}
	desired, maxReplicas := *d.Spec.Replicas, *d.Spec.Replicas+deploymentutil.MaxSurge(d)
	sizeChanged := current != size
	if !sizeChanged && !deploymentutil.ReplicasAnnotationsNeedUpdate(rs, desired, maxReplicas) {
		return false, nil
	}

	rsCopy := rs.DeepCopy()
	*rsCopy.Spec.Replicas = size
	deploymentutil.SetReplicasAnnotations(rsCopy, desired, maxReplicas)
	// A full update: a conflict means our view is stale, and the requeue fixes that.
	updated, err := c.client.AppsV1().ReplicaSets(rsCopy.Namespace).Update(ctx, rsCopy, metav1.UpdateOptions{})
	if err != nil {
		return false, fmt.Errorf("scaling replica set %s from %d to %d: %w", klog.KObj(rs), current, size, err)
	}
	if sizeChanged {
		direction := "up"
		if size < current {
			direction = "down"
		}
		c.recorder.Eventf(d, corev1.EventTypeNormal, eventScalingReplicaSet, "Scaled %s replica set %s from %d to %d", direction, updated.Name, current, size)
	}
	return sizeChanged, nil
}

// scaleToZero scales every ReplicaSet of rsList to zero and reports whether it scaled any.
func (c *Controller) scaleToZero(ctx context.Context, rsList []*appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	scaled := false
	for _, rs := range rsList {
		changed, err := c.scaleReplicaSet(ctx, rs, 0, false, d)
		if err != nil {
			return scaled, err
		}
		scaled = scaled || changed
	}
	return scaled, nil
}

// cleanupDeployment deletes the old ReplicaSets beyond spec.revisionHistoryLimit that are
// fully drained (§13). Old ReplicaSets that still have pods, or whose status lags behind their
// spec, are left for a later pass (kubernetes issues #40068, #41432, #81761).
func (c *Controller) cleanupDeployment(ctx context.Context, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment) error {
	if !deploymentutil.HasRevisionHistoryLimit(d) {
		return nil
	}
	logger := klog.FromContext(ctx)
	for _, rs := range deploymentutil.CleanupCandidates(d, oldRSs) {
		logger.V(4).Info("Deleting old replica set beyond the revision history limit", "replicaSet", klog.KObj(rs), "deployment", klog.KObj(d))
		err := c.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting old replica set %s: %w", klog.KObj(rs), err)
		}
	}
	return nil
}

// syncDeploymentStatus writes the status computed from the ReplicaSets (§10.1), leaving the
// Progressing condition as it is, when it differs from the current one.
func (c *Controller) syncDeploymentStatus(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	newStatus := deploymentutil.CalculateStatus(d, allRSs, newRS, c.countTerminating(), c.now())
	if reflect.DeepEqual(d.Status, newStatus) {
		return nil
	}
	d.Status = newStatus
	return c.updateStatus(ctx, d)
}

// updateStatus writes d's status and, on success, replaces d with the server's answer, so
// that a later write in the same pass carries the current resourceVersion instead of
// failing with a conflict.
func (c *Controller) updateStatus(ctx context.Context, d *appsv1.Deployment) error {
	updated, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("updating status of deployment %s: %w", klog.KObj(d), err)
	}
	*d = *updated
	return nil
}

// countTerminating reports whether status.terminatingReplicas is maintained.
func (c *Controller) countTerminating() bool {
	return c.gates.Enabled(features.DeploymentReplicaSetTerminatingReplicas)
}

// now is the time stamped on conditions.
func (c *Controller) now() metav1.Time {
	return metav1.NewTime(c.clock.Now())
}

// withNew returns oldRSs followed by newRS when there is one, in a fresh slice so that the
// caller's slice is never appended to in place.
func withNew(oldRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	all := make([]*appsv1.ReplicaSet, 0, len(oldRSs)+1)
	all = append(all, oldRSs...)
	if newRS != nil {
		all = append(all, newRS)
	}
	return all
}

// withLabel returns a copy of m with key set to value.
func withLabel(m map[string]string, key, value string) map[string]string {
	out := make(map[string]string, len(m)+1)
	maps.Copy(out, m)
	out[key] = value
	return out
}
