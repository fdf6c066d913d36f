package cloneset

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/cloneset/clonesetutil"
	"github.com/bosun-dev/bosun/pkg/controller/expectations"
	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/controller/refmanager"
	"github.com/bosun-dev/bosun/pkg/features"
)

// leakedExpectationsRecheck is how soon a CloneSet whose scale expectations outlived
// expectations.ExpectationsTimeout is looked at again after they were checked live.
const leakedExpectationsRecheck = 10 * time.Second

// unansweredRecheck is how soon a sync reads again the children whose creates got no answer
// when the API server did not answer that read either.
const unansweredRecheck = time.Second

// view is what one sync knows about a CloneSet.
type view struct {
	key string
	// cs is a copy of the cached CloneSet; currentSet and updateSet are copies of it with
	// the templates of the current and the update revision.
	cs, currentSet, updateSet *appsv1beta1.CloneSet
	// pods are the active pods the CloneSet controls and whose labels it selects.
	pods []*corev1.Pod
	// claims are the CloneSet's claims that are not being deleted (without claim reuse,
	// only those of active pods).
	claims []*corev1.PersistentVolumeClaim
	// revisions are the CloneSet's revisions as listed, oldest first; current and update
	// the current and update revision (which may be new, and then not among them).
	revisions       []*appsv1.ControllerRevision
	current, update *appsv1.ControllerRevision
	collisionCount  int32
	now             metav1.Time
}

// requeue collects the delays after which parts of a sync want the CloneSet looked at
// again; the shortest wins.
type requeue struct {
	delay time.Duration
	set   bool
}

func (r *requeue) after(d time.Duration) {
	if d <= 0 {
		return
	}
	if !r.set || d < r.delay {
		r.delay, r.set = d, true
	}
}

// syncCloneSet brings the CloneSet named by key one step closer to its replicas at its
// update revision, and writes its status. It never runs concurrently for one key.
func (c *Controller) syncCloneSet(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx).WithValues("cloneSet", key)
	ctx = klog.NewContext(ctx, logger)
	began := c.clock.Now()
	defer func() { logger.V(4).Info("CloneSet sync done", "took", c.clock.Since(began)) }()

	namespace, name, err := queue.SplitKey(key)
	if err != nil {
		return err
	}
	cached, err := c.cloneSets.CloneSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("CloneSet is gone; forgetting it")
		c.forget(key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading CloneSet %s from the cache: %w", key, err)
	}
	cs := cached.DeepCopy()
	selector, err := metav1.LabelSelectorAsSelector(cs.Spec.Selector)
	if err != nil {
		// A retry cannot mend a selector; the CloneSet's next update queues it again.
		logger.Error(err, "CloneSet has an invalid selector; leaving it alone")
		return nil
	}

	// Expectations are read before the pods are listed: a pod observed in between would
	// otherwise be neither in the list nor outstanding, and be created a second time.
	if met, wait := c.scaleExpectationsMet(ctx, key, cs); !met {
		c.queue.AddAfter(key, wait)
		return nil
	}

	// A pod this controller updated and the cache does not show so yet would be acted on
	// twice. Read before the pods are listed too: an update shown in between would meet
	// its expectation and leave the list with the copy from before it.
	if wait, pending := c.podUpdates.Pending(key); pending {
		logger.V(4).Info("Waiting for pod updates to show in the cache", "atMost", wait)
		c.queue.AddAfter(key, wait)
		return nil
	}

	v := &view{key: key, cs: cs, now: metav1.NewTime(c.clock.Now())}
	active, inactive, err := c.ownedPods(cs)
	if err != nil {
		return err
	}
	if v.claims, err = c.ownedClaims(cs); err != nil {
		return err
	}
	if !cs.Spec.ScaleStrategy.EnablePVCReuse {
		if v.claims, err = c.cleanupClaims(ctx, cs, active, inactive, v.claims); err != nil {
			return fmt.Errorf("cleaning up claims: %w", err)
		}
	}
	if v.pods, err = c.claimPods(ctx, cs, selector, active); err != nil {
		return err
	}
	if v.revisions, err = c.listRevisions(cs, selector); err != nil {
		return err
	}
	if err := c.activeRevisions(ctx, v); err != nil {
		return fmt.Errorf("finding the current and update revisions: %w", err)
	}
	// Before scaling, so that the jobs for a new revision exist before the first pod is
	// updated. Its failures do not hold the rollout back.
	var preDownloadErr error
	if err := c.preDownloadImages(ctx, v); err != nil {
		preDownloadErr = fmt.Errorf("pre-downloading images: %w", err)
	}

	status := appsv1beta1.CloneSetStatus{
		ObservedGeneration: cs.Generation,
		CurrentRevision:    v.current.Name,
		UpdateRevision:     v.update.Name,
		CollisionCount:     &v.collisionCount,
		LabelSelector:      selector.String(),
		Conditions:         cs.Status.Conditions,
	}
	var again requeue
	var syncErr error
	if cs.DeletionTimestamp == nil {
		syncErr = c.scaleAndUpdate(ctx, v, &status, &again)
	}
	written, err := c.updateStatus(ctx, v, status, &again)
	if err != nil {
		return errors.Join(syncErr, preDownloadErr, err)
	}
	if err := c.truncatePodsToDelete(ctx, written, v.pods); err != nil {
		logger.Error(err, "Removing names of pods that are gone from podsToDelete failed")
	}
	if err := c.truncateHistory(ctx, v); err != nil {
		logger.Error(err, "Deleting old revisions failed")
	}
	if syncErr == nil && cs.Spec.MinReadySeconds > 0 && written.Status.AvailableReplicas != written.Status.ReadyReplicas {
		again.after(time.Duration(cs.Spec.MinReadySeconds) * time.Second)
	}
	if again.set {
		logger.V(4).Info("Looking at the CloneSet again later", "after", again.delay)
		c.queue.AddAfter(key, again.delay)
	}
	if preDownloadErr != nil {
		return errors.Join(syncErr, preDownloadErr)
	}
	return syncErr
}

// scaleExpectationsMet reports whether every pod and claim earlier syncs created or
// deleted for key has shown in the cache, and otherwise when to look again. Expectations
// that outlive expectations.ExpectationsTimeout are read live: those the API server shows
// settled (a created object that is gone, a deleted one that is gone or going) are dropped
// (OpenKruise issue #1765: a pod created and deleted at once may never show, and would
// freeze its CloneSet for good), the rest wait on.
func (c *Controller) scaleExpectationsMet(ctx context.Context, key string, cs *appsv1beta1.CloneSet) (bool, time.Duration) {
	met, waited := c.scaleExpectations.Satisfied(key)
	if met {
		return true, 0
	}
	logger := klog.FromContext(ctx)
	if unanswered := c.scaleExpectations.PendingUnanswered(key); len(unanswered) > 0 {
		unread := c.checkUnansweredLive(ctx, key, cs.Namespace, unanswered)
		if met, waited = c.scaleExpectations.Satisfied(key); met {
			return true, 0
		}
		if unread > 0 {
			// The API server did not answer again; it is likely down.
			return false, unansweredRecheck
		}
	}
	if waited < expectations.ExpectationsTimeout {
		logger.V(4).Info("Waiting for created and deleted pods and claims to show in the cache", "pending", c.scaleExpectations.Pending(key))
		return false, expectations.ExpectationsTimeout - waited
	}
	scaleExpectationLeakage.WithLabelValues(cs.Namespace, cs.Name).Inc()
	for _, e := range c.scaleExpectations.Pending(key) {
		settled, err := c.settledLive(ctx, cs.Namespace, e)
		if err != nil {
			logger.Error(err, "Checking a long-pending expectation live failed", "expected", e)
			continue
		}
		if settled {
			logger.Info("Dropping an expectation the cache never met", "expected", e, "waited", waited)
			c.scaleExpectations.Observe(key, e.Action, e.Resource, e.Name)
		}
	}
	return false, leakedExpectationsRecheck
}

// checkUnansweredLive reads live the children of key whose creates got no answer: one that
// is not there, or already cached, was settled (its expectation is dropped); one that is
// there but not cached yet was carried out, and its expectation waits for the informer as
// any other. One the API server does not answer for stays unanswered, to be read again;
// it returns how many did.
func (c *Controller) checkUnansweredLive(ctx context.Context, key, namespace string, unanswered []expectations.Expected) (unread int) {
	logger := klog.FromContext(ctx)
	for _, e := range unanswered {
		settled, err := c.settledLive(ctx, namespace, e)
		switch {
		case err != nil:
			unread++
			logger.V(2).Info("Could not read live a child whose create got no answer", "expected", e, "err", err)
		case settled:
			logger.V(2).Info("A create that got no answer is settled", "expected", e)
			c.scaleExpectations.Observe(key, e.Action, e.Resource, e.Name)
		default:
			logger.V(2).Info("A create that got no answer was carried out; waiting for the cache to show it", "expected", e)
			c.scaleExpectations.Confirm(key, e)
		}
	}
	return unread
}

// settledLive reports whether the API server shows e's write settled: a deleted object
// gone or being deleted (or, when the delete never took, there to be deleted again), a
// created object gone. A created object that exists is waited for until the cache shows
// it: acting without it would create its pod a second time.
func (c *Controller) settledLive(ctx context.Context, namespace string, e expectations.Expected) (bool, error) {
	var (
		obj metav1.Object
		err error
	)
	switch e.Resource {
	case podsResource:
		obj, err = c.kubeClient.CoreV1().Pods(namespace).Get(ctx, e.Name, metav1.GetOptions{})
	case claimsResource:
		obj, err = c.kubeClient.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, e.Name, metav1.GetOptions{})
	default:
		return true, nil
	}
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if e.Action == expectations.Delete {
		return true, nil
	}
	// Shown by the cache after all: its add event was lost.
	indexer := c.podIndexer
	if e.Resource == claimsResource {
		indexer = c.claimIndexer
	}
	item, exists, err := indexer.GetByKey(queue.KeyForRef(namespace, e.Name))
	if err != nil || !exists {
		return false, nil
	}
	cachedObj, ok := item.(metav1.Object)
	return ok && cachedObj.GetUID() == obj.GetUID(), nil
}

// ownedPods returns the pods cs controls, active ones (neither finished nor being deleted)
// and the others.
func (c *Controller) ownedPods(cs *appsv1beta1.CloneSet) (active, inactive []*corev1.Pod, err error) {
	pods, err := podutil.PodsForOwner(c.podIndexer, cs, controllerKind.Kind, false)
	if err != nil {
		return nil, nil, fmt.Errorf("listing pods of CloneSet %s: %w", klog.KObj(cs), err)
	}
	for _, pod := range pods {
		if podutil.IsPodActive(pod) {
			active = append(active, pod)
		} else {
			inactive = append(inactive, pod)
		}
	}
	return active, inactive, nil
}

// ownedClaims returns the claims cs controls that are not being deleted.
func (c *Controller) ownedClaims(cs *appsv1beta1.CloneSet) ([]*corev1.PersistentVolumeClaim, error) {
	objs, err := c.claimIndexer.ByIndex(ClaimControllerIndex, string(cs.UID))
	if err != nil {
		return nil, fmt.Errorf("listing claims of CloneSet %s: %w", klog.KObj(cs), err)
	}
	var claims []*corev1.PersistentVolumeClaim
	for _, obj := range objs {
		if claim, ok := obj.(*corev1.PersistentVolumeClaim); ok && claim.Namespace == cs.Namespace && claim.DeletionTimestamp == nil {
			claims = append(claims, claim)
		}
	}
	return claims, nil
}

// claimPods releases the active pods cs controls whose labels its selector no longer
// matches, and returns the others. Orphans are never adopted: a CloneSet's pods and claims
// carry instance IDs a foreign pod lacks.
func (c *Controller) claimPods(ctx context.Context, cs *appsv1beta1.CloneSet, selector labels.Selector, active []*corev1.Pod) ([]*corev1.Pod, error) {
	patcher := &refmanager.StrategicMergePatcher{ObjectKind: "Pod", Send: func(ctx context.Context, namespace, name string, body []byte) error {
		_, err := c.kubeClient.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
		return err
	}}
	claimer := refmanager.New(cs, controllerKind, selector, nil, patcher)
	pods, err := claimer.ClaimPods(ctx, active)
	if err != nil {
		return nil, fmt.Errorf("claiming pods for CloneSet %s: %w", klog.KObj(cs), err)
	}
	return pods, nil
}

// scaleAndUpdate scales the CloneSet's pods and, when scaling wrote nothing, updates them,
// recording a failure of either in the FailedScale or FailedUpdate condition of status.
//
// The status is written before the update step too. That step's pod writes (a refresh
// write for every pod a node has just taken, the in-place updates) can take seconds at the
// client's rate limit, and the counts the status reports come from this sync's view of the
// pods, which those writes do not change: a CloneSet scaled to 1,000 says so once its pods
// exist, not once each has been refreshed. The status written after the step then differs
// only when the step set or cleared the FailedUpdate condition.
func (c *Controller) scaleAndUpdate(ctx context.Context, v *view, status *appsv1beta1.CloneSetStatus, again *requeue) error {
	var err error
	if v.currentSet, err = withRevisionTemplate(v.cs, v.current); err != nil {
		return err
	}
	if v.updateSet, err = withRevisionTemplate(v.cs, v.update); err != nil {
		return err
	}
	scaled, scaleErr := c.scale(ctx, v)
	status.Conditions = failureCondition(status.Conditions, appsv1beta1.CloneSetConditionFailedScale, scaleErr, v.now)
	if scaled {
		return scaleErr
	}
	written, err := c.updateStatus(ctx, v, *status, again)
	if err != nil {
		return errors.Join(scaleErr, err)
	}
	v.cs = written
	updateErr := c.rollingUpdate(ctx, v, again)
	status.Conditions = failureCondition(status.Conditions, appsv1beta1.CloneSetConditionFailedUpdate, updateErr, v.now)
	if scaleErr != nil {
		return scaleErr
	}
	return updateErr
}

// truncatePodsToDelete removes from spec.scaleStrategy.podsToDelete the names of pods that
// are gone, writing the spec when it changes. cs is the CloneSet as last written.
func (c *Controller) truncatePodsToDelete(ctx context.Context, cs *appsv1beta1.CloneSet, pods []*corev1.Pod) error {
	if len(cs.Spec.ScaleStrategy.PodsToDelete) == 0 {
		return nil
	}
	existing := sets.New[string]()
	for _, pod := range pods {
		existing.Insert(pod.Name)
	}
	var kept []string
	for _, name := range cs.Spec.ScaleStrategy.PodsToDelete {
		if existing.Has(name) {
			kept = append(kept, name)
		}
	}
	if len(kept) == len(cs.Spec.ScaleStrategy.PodsToDelete) {
		return nil
	}
	truncated := cs.DeepCopy()
	truncated.Spec.ScaleStrategy.PodsToDelete = kept
	klog.FromContext(ctx).V(2).Info("Removing pods that are gone from podsToDelete", "kept", kept)
	if _, err := c.bosunClient.AppsV1beta1().CloneSets(cs.Namespace).Update(ctx, truncated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating podsToDelete of CloneSet %s: %w", klog.KObj(cs), err)
	}
	return nil
}

// isUpdatedForScaling says whether pod counts as being at the update revision when the
// controller decides how many pods of each revision to create or delete: with gate
// PreparingUpdateAsUpdate a pod held in PreparingUpdate counts as updated.
func (c *Controller) isUpdatedForScaling(v *view) func(*corev1.Pod) bool {
	asUpdated := c.gates.Enabled(features.PreparingUpdateAsUpdate)
	return func(pod *corev1.Pod) bool {
		if asUpdated && clonesetutil.LifecycleState(pod) == appsv1beta1.LifecycleStatePreparingUpdate {
			return true
		}
		return clonesetutil.AtRevision(pod, v.update.Name)
	}
}

// diffs computes what the sync should do, counting pods as updated by isUpdated.
func (c *Controller) diffs(ctx context.Context, v *view, isUpdated func(*corev1.Pod) bool) clonesetutil.Diffs {
	cs := v.updateSet
	mayRollBack := c.gates.Enabled(features.CloneSetPartitionRollback) && v.update.Name != v.current.Name
	budget := clonesetutil.BudgetOf(cs, clonesetutil.ExcludePreparingDelete(cs, c.excludePreparingDelete), mayRollBack)
	classes := make([]clonesetutil.PodClass, len(v.pods))
	for i, pod := range v.pods {
		classes[i] = clonesetutil.PodClass{
			Updated:         isUpdated(pod),
			PreparingDelete: clonesetutil.LifecycleState(pod) == appsv1beta1.LifecycleStatePreparingDelete,
			Specified:       clonesetutil.IsSpecifiedDelete(cs, pod),
			Available:       c.available(v, pod),
		}
	}
	d := clonesetutil.CalculateDiffs(budget, classes)
	klog.FromContext(ctx).V(5).Info("CloneSet diffs", "budget", budget, "diffs", d)
	return d
}

// available reports whether pod counts as available to v's CloneSet.
func (c *Controller) available(v *view, pod *corev1.Pod) bool {
	return clonesetutil.IsAvailable(pod, v.cs.Spec.MinReadySeconds, v.now)
}

// withRevisionTemplate returns a copy of cs with the template revision records.
func withRevisionTemplate(cs *appsv1beta1.CloneSet, revision *appsv1.ControllerRevision) (*appsv1beta1.CloneSet, error) {
	template, err := kruisepod.TemplateFromRevisionData(revision.Data.Raw)
	if err != nil {
		return nil, fmt.Errorf("reading the template of ControllerRevision %s: %w", klog.KObj(revision), err)
	}
	restored := cs.DeepCopy()
	restored.Spec.Template = *template
	return restored, nil
}
