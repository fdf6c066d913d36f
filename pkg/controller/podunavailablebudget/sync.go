package podunavailablebudget

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/pubutil"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

// Event messages, OpenKruise's.
const (
	noPodsMessage          = "No matching pods found"
	calculateFailedMessage = "Failed to calculate the number of expected pods: %v"
	notDeletedMessage      = "Pod was expected by PUB %s/%s to be deleted but it wasn't"
)

// syncBudget brings the status of the budget named by key in line with its pods, tags the
// pods it covers, and schedules its next sync. It never runs concurrently for one key.
func (c *Controller) syncBudget(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx).WithValues("podUnavailableBudget", key)
	ctx = klog.NewContext(ctx, logger)
	began := c.clock.Now()
	defer func() { logger.V(4).Info("PodUnavailableBudget sync done", "took", c.clock.Since(began)) }()

	namespace, name, err := queue.SplitKey(key)
	if err != nil {
		return err
	}
	pub, err := c.budgets.PodUnavailableBudgets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("PodUnavailableBudget is gone; forgetting it")
		c.forget(key, namespace, name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading PodUnavailableBudget %s from the cache: %w", key, err)
	}
	if pub.DeletionTimestamp != nil {
		logger.V(4).Info("PodUnavailableBudget is being deleted; forgetting it")
		c.forget(key, namespace, name)
		return nil
	}

	override, err := totalReplicasOverride(pub)
	if err != nil {
		c.recorder.Eventf(eventObject(pub), corev1.EventTypeWarning, CalculateExpectedPodCountFailedReason, calculateFailedMessage, err)
		return fmt.Errorf("reading the expected pod count of PodUnavailableBudget %s: %w", key, err)
	}
	cov, err := c.resolveCoverage(ctx, pub, override)
	if err != nil {
		return fmt.Errorf("finding the pods of PodUnavailableBudget %s: %w", key, err)
	}
	logger.V(4).Info("Resolved the pods of the PodUnavailableBudget", "pods", len(cov.pods), "expected", cov.expected)

	var tagErr error
	if len(cov.pods) == 0 {
		c.reportNoPods(pub, key)
	} else {
		c.clearNoPods(key)
		tagErr = c.tagPods(ctx, pub, cov.pods)
	}

	desired, err := pubutil.DesiredAvailable(pub.Spec, cov.expected)
	if err != nil {
		c.recorder.Eventf(eventObject(pub), corev1.EventTypeWarning, CalculateExpectedPodCountFailedReason, calculateFailedMessage, err)
		return errors.Join(tagErr, fmt.Errorf("computing desiredAvailable of PodUnavailableBudget %s: %w", key, err))
	}

	result, err := c.writeStatus(ctx, pub, cov, desired)
	if apierrors.IsNotFound(err) {
		// Deleted, or re-created under the same name, since the informer saw it; the
		// deletion event queues the key again.
		logger.V(4).Info("PodUnavailableBudget disappeared while its status was written", "err", err)
		c.forget(key, namespace, name)
		return tagErr
	}
	if err != nil {
		return errors.Join(tagErr, fmt.Errorf("writing status of PodUnavailableBudget %s: %w", key, err))
	}
	for _, pod := range result.notDeleted {
		c.recorder.Eventf(pod, corev1.EventTypeWarning, NotDeletedReason, notDeletedMessage, pub.Namespace, pub.Name)
	}
	c.scheduleNextSync(ctx, key, result.nextExpiry)
	return tagErr
}

// forget drops what the controller and the shared cache remember of the budget with key.
func (c *Controller) forget(key, namespace, name string) {
	c.cache.Forget(namespace, name)
	c.clearNoPods(key)
}

// totalReplicasOverride returns the expected pod count pub sets (spec.protectTotalReplicas,
// or the pub.kruise.io/protect-total-replicas annotation of a budget written in v1alpha1),
// nil when it sets none.
func totalReplicasOverride(pub *policyv1beta1.PodUnavailableBudget) (*int32, error) {
	n, ok, err := pubutil.ProtectTotalReplicas(pub)
	if err != nil || !ok {
		return nil, err
	}
	return &n, nil
}

// scheduleNextSync queues key again when the earliest entry of its maps expires (the
// expiry changes the budget, and no event marks it) and after the resync period.
func (c *Controller) scheduleNextSync(ctx context.Context, key string, nextExpiry time.Time) {
	logger := klog.FromContext(ctx)
	if !nextExpiry.IsZero() {
		delay := max(nextExpiry.Sub(c.clock.Now()), 0)
		logger.V(4).Info("Syncing the PodUnavailableBudget again when its oldest record expires", "after", delay)
		c.queue.AddAfter(key, delay)
	}
	if c.resyncPeriod > 0 {
		// The delaying queue keeps the earliest time a key is due, so this never postpones
		// an expiry, and a budget synced often still resyncs within the period.
		c.queue.AddAfter(key, c.resyncPeriod)
	}
}

// reportNoPods records a NoPods event on pub unless one was recorded for this budget since
// it last covered pods: with a periodic resync, recording one per sync would flood the
// events of every budget whose workload is scaled to zero.
func (c *Controller) reportNoPods(pub *policyv1beta1.PodUnavailableBudget, key string) {
	c.noPodsMu.Lock()
	reported := c.noPods[key] == pub.UID
	c.noPods[key] = pub.UID
	c.noPodsMu.Unlock()
	if !reported {
		c.recorder.Event(eventObject(pub), corev1.EventTypeNormal, NoPodsReason, noPodsMessage)
	}
}

// clearNoPods forgets that a NoPods event was recorded for key.
func (c *Controller) clearNoPods(key string) {
	c.noPodsMu.Lock()
	defer c.noPodsMu.Unlock()
	delete(c.noPods, key)
}

// tagPods patches both related-pub annotations, naming pub, onto every pod that carries
// neither: pods created before the budget, or while the mutating webhook was skipped. The
// validating webhook protects only tagged pods. Pods tagged with another budget keep their
// tag. A pod deleted meanwhile is skipped; other failures are returned together after every
// pod was tried.
func (c *Controller) tagPods(ctx context.Context, pub *policyv1beta1.PodUnavailableBudget, pods []*corev1.Pod) error {
	var untagged []*corev1.Pod
	for _, pod := range pods {
		if pubutil.RelatedBudget(pod) == "" {
			untagged = append(untagged, pod)
		}
	}
	if len(untagged) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": pubutil.RelatedBudgetAnnotations(pub.Name)},
	})
	if err != nil {
		return fmt.Errorf("building the related-pub patch: %w", err)
	}
	logger := klog.FromContext(ctx)
	var errs []error
	tagged := 0
	for _, pod := range untagged {
		_, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		switch {
		case apierrors.IsNotFound(err):
			logger.V(4).Info("Pod to tag is gone", "pod", klog.KObj(pod))
		case err != nil:
			errs = append(errs, fmt.Errorf("tagging pod %s with its budget: %w", klog.KObj(pod), err))
		default:
			tagged++
		}
	}
	logger.V(2).Info("Tagged pods with their PodUnavailableBudget", "tagged", tagged, "failed", len(errs))
	return errors.Join(errs...)
}
