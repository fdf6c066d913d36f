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

// syncReplicaSet brings the ReplicaSet named by key towards its desired state: it claims
// pods, creates or deletes pods when the previous sync's writes have all been observed,
// and writes status. It is never called concurrently for the same key.
func (c *Controller) syncReplicaSet(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx)
	startTime := c.clock.Now()
	defer func() {
		logger.V(4).Info("Finished syncing", "kind", controllerKind.Kind, "key", key, "duration", c.clock.Since(startTime))
	}()

	namespace, name, err := queue.SplitKey(key)
	if err != nil {
		return err
	}
	// Acting on a cache older than our own writes would undo them (create extra pods,
	// write an older status); wait until the informers have caught up.
	if err := c.writes.ensureObserved(key); err != nil {
		return err
	}
	rs, err := c.rsLister.ReplicaSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("ReplicaSet has been deleted", "replicaSet", klog.KRef(namespace, name))
		c.expectations.Delete(ctx, key)
		c.writes.forget(key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting ReplicaSet %s from the cache: %w", key, err)
	}

	// Read expectations before listing pods: a pod observed between the list and this
	// check would otherwise be counted neither in the list nor as outstanding, and be
	// created a second time.
	needsManage := c.expectations.Satisfied(ctx, key)

	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		// Retrying cannot fix a selector; the next update of the ReplicaSet will enqueue it.
		logger.Error(err, "Invalid selector; not syncing", "replicaSet", klog.KObj(rs))
		return nil
	}

	candidates, err := podutil.PodsForOwner(c.podIndexer, rs, controllerKind.Kind, true)
	if err != nil {
		return err
	}
	claimed, err := c.claimPods(ctx, rs, selector, podutil.FilterActive(candidates))
	if err != nil {
		return err
	}
	var terminating []*corev1.Pod
	if c.gates.Enabled(features.DeploymentReplicaSetTerminatingReplicas) {
		// Terminating pods are only counted, never adopted.
		terminating = podutil.FilterClaimed(rs, selector, filterTerminating(candidates))
	}

	var manageErr error
	if needsManage && rs.DeletionTimestamp == nil {
		manageErr = c.manageReplicas(ctx, claimed, rs)
	}

	now := c.clock.Now()
	rs = rs.DeepCopy()
	newStatus := calculateStatus(rs, claimed, terminating, manageErr, now, c.gates.Enabled(features.DeploymentReplicaSetTerminatingReplicas))
	updatedRS, err := c.writeStatus(ctx, rs, newStatus)
	if err != nil {
		// The next sync recomputes everything, including manageErr's condition.
		return err
	}
	if manageErr != nil {
		return manageErr
	}

	// Availability changes with time only; no event will announce it. Check again when
	// the next ready pod should have become available.
	minReady := updatedRS.Spec.MinReadySeconds
	if minReady > 0 && updatedRS.Status.ReadyReplicas != updatedRS.Status.AvailableReplicas {
		delay := time.Duration(minReady) * time.Second
		if next := podutil.NextAvailabilityCheck(claimed, minReady, now, c.clock); next != nil {
			delay = *next
		}
		c.queue.AddAfter(key, delay)
	}
	return nil
}

// claimPods adopts the matching orphans among pods and releases owned pods that no longer
// match, returning the pods rs owns afterwards.
func (c *Controller) claimPods(ctx context.Context, rs *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	// Adopting from a ReplicaSet the cache still shows but the API server is deleting would
	// hand its pods to the garbage collector; the live recheck rules that out. A new
	// manager per sync, because it remembers the recheck's result.
	canAdopt := refmanager.RecheckDeletionTimestamp(rs, controllerKind.Kind, refmanager.LiveReplicaSet(c.client, rs))
	manager := refmanager.New(rs, controllerKind, selector, canAdopt, refmanager.PodControlPatcher(c.podControl))
	claimed, err := manager.ClaimPods(ctx, pods)
	if err != nil {
		return nil, fmt.Errorf("claiming pods for ReplicaSet %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	return claimed, nil
}

// manageReplicas creates or deletes at most burstReplicas pods to move len(claimed)
// towards spec.replicas, setting expectations before any write.
func (c *Controller) manageReplicas(ctx context.Context, claimed []*corev1.Pod, rs *appsv1.ReplicaSet) error {
	logger := klog.FromContext(ctx)
	desired := int(ptr.Deref(rs.Spec.Replicas, 1))
	diff := len(claimed) - desired
	key, err := queue.KeyFor(rs)
	if err != nil {
		return err
	}

	switch {
	case diff < 0:
		n := min(-diff, c.burstReplicas)
		// Before any request: the informer may deliver a created pod before Create returns.
		c.expectations.ExpectCreations(ctx, key, n)
		logger.V(2).Info("Too few replicas", "replicaSet", klog.KObj(rs), "need", desired, "creating", n)

		controllerRef := metav1.NewControllerRef(rs, controllerKind)
		// Slow start: a create that is bound to fail (quota, admission) fails once or a
		// few times rather than n times.
		successes, err := slowstart.Batch(n, slowstart.SlowStartInitialBatchSize, func() error {
			err := c.podControl.CreatePods(ctx, rs.Namespace, &rs.Spec.Template, rs, controllerRef)
			if err != nil && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				// The namespace is going away with everything in it; retrying would only
				// produce a storm of failing creates.
				return nil
			}
			return err
		})
		// No informer event will ever come for pods that were not created.
		if skipped := n - successes; skipped > 0 {
			logger.V(2).Info("Slow-start failure. Skipping creation of pods, decrementing expectations",
				"podsSkipped", skipped, "kind", controllerKind.Kind, "replicaSet", klog.KObj(rs))
			for range skipped {
				c.expectations.CreationObserved(ctx, key)
			}
		}
		return err

	case diff > 0:
		n := min(diff, c.burstReplicas)
		logger.V(2).Info("Too many replicas", "replicaSet", klog.KObj(rs), "need", desired, "deleting", n)

		var related []*corev1.Pod
		if n < len(claimed) {
			// Only ranking needs the sibling ReplicaSets' pods; when every claimed pod goes,
			// listing them (a selector scan of the namespace per sibling) is wasted.
			var err error
			if related, err = c.relatedPods(rs); err != nil {
				// Ranking without siblings is still a valid choice; do not block scale-down.
				logger.Error(err, "Listing pods of related ReplicaSets failed; ranking without them", "replicaSet", klog.KObj(rs))
			}
		}
		victims := c.podsToDelete(claimed, related, n)

		// Expect the exact pods, so that the graceful-delete update and the final delete
		// event of one pod count once.
		c.expectations.ExpectDeletions(ctx, key, podKeys(victims))
		return c.deletePods(ctx, rs, key, victims)
	}
	return nil
}

// deletePods deletes victims in parallel and returns one of the errors other than
// NotFound. Deletes are not slow-started: unlike creates they rarely fail for
// reasons that would repeat.
func (c *Controller) deletePods(ctx context.Context, rs *appsv1.ReplicaSet, key string, victims []*corev1.Pod) error {
	errs := make(chan error, len(victims))
	var wg sync.WaitGroup
	for _, pod := range victims {
		wg.Go(func() {
			err := c.podControl.DeletePod(ctx, rs.Namespace, pod.Name, rs)
			if err == nil {
				return
			}
			// This delete produces no event to wait for.
			podKey := queue.PodKey(pod)
			klog.FromContext(ctx).V(2).Info("Failed to delete pod, decremented expectations",
				"pod", podKey, "kind", controllerKind.Kind, "replicaSet", klog.KObj(rs))
			c.expectations.DeletionObserved(ctx, key, podKey)
			if !apierrors.IsNotFound(err) {
				errs <- err
			}
		})
	}
	wg.Wait()

	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
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
