package replicaset

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/controller/refmanager"
	"github.com/bosun-dev/bosun/pkg/controller/slowstart"
	"github.com/bosun-dev/bosun/pkg/features"
)

// ownedPods are the pods of one ReplicaSet: active is what it counts against
// spec.replicas, terminating is only reported (and empty unless the
// DeploymentReplicaSetTerminatingReplicas gate is on).
type ownedPods struct {
	active      []*corev1.Pod
	terminating []*corev1.Pod
}

// syncReplicaSet moves the ReplicaSet named by key towards spec.replicas: it claims pods,
// creates or deletes pods once everything the previous sync wrote has been observed, and
// writes status. It never runs concurrently for one key.
func (c *Controller) syncReplicaSet(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx).WithValues("replicaSet", key)
	ctx = klog.NewContext(ctx, logger)
	began := c.clock.Now()
	defer func() { logger.V(4).Info("ReplicaSet sync done", "took", c.clock.Since(began)) }()

	namespace, name, err := queue.SplitKey(key)
	if err != nil {
		return err
	}
	// A cache older than this controller's own writes would make it undo them (create
	// pods twice, write an older status); wait until the informers have caught up.
	if err := c.writes.ensureObserved(key); err != nil {
		return err
	}
	rs, err := c.replicaSets.ReplicaSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("ReplicaSet is gone; forgetting it")
		c.forget(ctx, key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading ReplicaSet %s from the cache: %w", key, err)
	}

	// Expectations are read before the pods are listed: a pod observed in between would
	// otherwise be neither in the list nor outstanding, and be created a second time.
	mayManage := c.expectations.Satisfied(ctx, key)

	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		// A retry cannot mend a selector; the ReplicaSet's next update queues it again.
		logger.Error(err, "ReplicaSet has an invalid selector; leaving it alone")
		return nil
	}
	pods, err := c.ownedPods(ctx, rs, selector)
	if err != nil {
		return err
	}
	var manageErr error
	if mayManage && rs.DeletionTimestamp == nil {
		manageErr = c.manageReplicas(ctx, rs, pods.active)
	}

	now := c.clock.Now()
	status := calculateStatus(rs, pods.active, pods.terminating, manageErr, now, c.countTerminating())
	written, err := c.writeStatus(ctx, rs.DeepCopy(), status)
	if err != nil {
		// The next sync computes everything again, manageErr's condition included.
		return err
	}
	if manageErr != nil {
		return manageErr
	}
	c.requeueForAvailability(key, written, pods.active, now)
	return nil
}

// ownedPods claims rs's pods, adopting matching orphans and releasing owned pods that no
// longer match, and sorts what rs owns afterwards into active and terminating pods.
func (c *Controller) ownedPods(ctx context.Context, rs *appsv1.ReplicaSet, selector labels.Selector) (ownedPods, error) {
	candidates, err := podutil.PodsForOwner(c.podIndexer, rs, controllerKind.Kind, true)
	if err != nil {
		return ownedPods{}, err
	}
	// The cache may still show a ReplicaSet that the API server is deleting; adopting for
	// it would hand the pods to the garbage collector, so adoption first reads it live.
	// The claimer remembers that read, hence a new one per sync.
	canAdopt := refmanager.RecheckDeletionTimestamp(rs, controllerKind.Kind, refmanager.LiveReplicaSet(c.client, rs))
	claimer := refmanager.New(rs, controllerKind, selector, canAdopt, refmanager.PodControlPatcher(c.podControl))
	active, err := claimer.ClaimPods(ctx, podutil.FilterActive(candidates))
	if err != nil {
		return ownedPods{}, fmt.Errorf("claiming pods for ReplicaSet %s: %w", klog.KObj(rs), err)
	}
	owned := ownedPods{active: active}
	if c.countTerminating() {
		// Terminating pods are counted but never adopted.
		owned.terminating = podutil.FilterClaimed(rs, selector, filterTerminating(candidates))
	}
	return owned, nil
}

// manageReplicas creates or deletes up to burstReplicas pods to bring len(active) towards
// spec.replicas.
func (c *Controller) manageReplicas(ctx context.Context, rs *appsv1.ReplicaSet, active []*corev1.Pod) error {
	key, err := queue.KeyFor(rs)
	if err != nil {
		return err
	}
	want := int(ptr.Deref(rs.Spec.Replicas, 1))
	switch missing := want - len(active); {
	case missing > 0:
		return c.createPods(ctx, rs, key, want, min(missing, c.burstReplicas))
	case missing < 0:
		return c.deleteSurplus(ctx, rs, key, want, active, min(-missing, c.burstReplicas))
	}
	return nil
}

// createPods creates n pods for rs in slow-start batches, so that a create bound to fail
// (a quota, an admission webhook) fails a few times rather than n times.
func (c *Controller) createPods(ctx context.Context, rs *appsv1.ReplicaSet, key string, want, n int) error {
	logger := klog.FromContext(ctx)
	// Expected before the first request: the informer may show a new pod before its
	// Create call returns.
	c.expectations.ExpectCreations(ctx, key, n)
	logger.V(2).Info("ReplicaSet is short of pods; creating", "want", want, "creating", n)

	owner := metav1.NewControllerRef(rs, controllerKind)
	created, err := slowstart.Batch(n, slowstart.SlowStartInitialBatchSize, func() error {
		err := c.podControl.CreatePods(ctx, rs.Namespace, &rs.Spec.Template, rs, owner)
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			// The namespace is going away with everything in it; treating this as a
			// failure would only bring a storm of retries.
			return nil
		}
		return err
	})
	// No informer event will ever come for the pods that were not created.
	if notCreated := n - created; notCreated > 0 {
		logger.V(2).Info("Pod creation stopped at a failure; no longer expecting the rest", "notCreated", notCreated)
		for range notCreated {
			c.expectations.CreationObserved(ctx, key)
		}
	}
	return err
}

// deleteSurplus deletes the n of active that rank lowest: first the pods that share a node
// with many pods of sibling ReplicaSets (the same controller's), so that what stays spreads
// across nodes.
func (c *Controller) deleteSurplus(ctx context.Context, rs *appsv1.ReplicaSet, key string, want int, active []*corev1.Pod, n int) error {
	logger := klog.FromContext(ctx)
	logger.V(2).Info("ReplicaSet has surplus pods; deleting", "want", want, "deleting", n)
	var related []*corev1.Pod
	if n < len(active) {
		// Only ranking needs the siblings' pods; when every pod goes, listing them (a
		// selector scan of the namespace per sibling) would be wasted.
		var err error
		if related, err = c.relatedPods(rs); err != nil {
			// Ranking without the siblings is still a valid choice; scale-down goes on.
			logger.Error(err, "Listing the pods of sibling ReplicaSets failed; ranking without them")
		}
	}
	victims := c.podsToDelete(active, related, n)
	// Expecting the exact pods lets the graceful-delete update and the final delete event
	// of one pod count once.
	c.expectations.ExpectDeletions(ctx, key, podKeys(victims))
	return c.deletePods(ctx, rs, key, victims)
}

// deletePods deletes victims in parallel and returns one of the errors other than NotFound.
// Deletes are not slow-started: unlike creates, they rarely fail for a reason that repeats.
func (c *Controller) deletePods(ctx context.Context, rs *appsv1.ReplicaSet, key string, victims []*corev1.Pod) error {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for _, pod := range victims {
		wg.Go(func() {
			err := c.podControl.DeletePod(ctx, rs.Namespace, pod.Name, rs)
			if err == nil {
				return
			}
			// A failed delete produces no event to wait for.
			klog.FromContext(ctx).V(2).Info("Pod delete failed; no longer expecting its deletion", "pod", klog.KObj(pod), "err", err)
			c.expectations.DeletionObserved(ctx, key, queue.PodKey(pod))
			if apierrors.IsNotFound(err) {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if firstErr == nil {
				firstErr = err
			}
		})
	}
	wg.Wait()
	return firstErr
}

// requeueForAvailability queues key again for the moment the next ready pod of rs becomes
// available: time alone makes it so, and no event will announce it.
func (c *Controller) requeueForAvailability(key string, rs *appsv1.ReplicaSet, active []*corev1.Pod, now time.Time) {
	minReady := rs.Spec.MinReadySeconds
	if minReady <= 0 || rs.Status.ReadyReplicas == rs.Status.AvailableReplicas {
		return
	}
	delay := time.Duration(minReady) * time.Second
	if next := podutil.NextAvailabilityCheck(active, minReady, now, c.clock); next != nil {
		delay = *next
	}
	c.queue.AddAfter(key, delay)
}

// countTerminating reports whether status.terminatingReplicas is maintained.
func (c *Controller) countTerminating() bool {
	return c.gates.Enabled(features.DeploymentReplicaSetTerminatingReplicas)
}

// filterTerminating returns the pods that are being deleted but have not finished.
func filterTerminating(pods []*corev1.Pod) []*corev1.Pod {
	var terminating []*corev1.Pod
	for _, pod := range pods {
		if podutil.IsPodTerminating(pod) {
			terminating = append(terminating, pod)
		}
	}
	return terminating
}

// podKeys returns the "namespace/name" keys of pods.
func podKeys(pods []*corev1.Pod) []string {
	keys := make([]string, 0, len(pods))
	for _, pod := range pods {
		keys = append(keys, queue.PodKey(pod))
	}
	return keys
}
