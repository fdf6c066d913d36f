package podunavailablebudget

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/pubutil"
)

// computedStatus is the status one attempt computed, with what the sync does after writing
// it.
type computedStatus struct {
	status policyv1beta1.PodUnavailableBudgetStatus
	// notDeleted are the covered pods, sorted by name, whose disruption entry expired while
	// they are still there: their deletion was admitted but did not happen.
	notDeleted []*corev1.Pod
	// nextExpiry is when the earliest entry left in either map expires; zero when both
	// are empty.
	nextExpiry time.Time
}

// calculateStatus computes pub's status at now from the pods cov found and desired, the
// number of pods that must stay available. pub's disruption and update entries are kept
// only for covered pods whose entry has not expired; those pods do not count as available
// whatever their state, because the webhook has already spent the budget on them.
func calculateStatus(pub *policyv1beta1.PodUnavailableBudget, cov coverage, desired int32, now time.Time) computedStatus {
	covered := make(map[string]*corev1.Pod, len(cov.pods))
	for _, pod := range cov.pods {
		covered[pod.Name] = pod
	}
	var result computedStatus
	keep := func(entries map[string]metav1.Time, timeout time.Duration, expired func(pod *corev1.Pod)) map[string]metav1.Time {
		var kept map[string]metav1.Time
		for name, at := range entries {
			pod, ok := covered[name]
			if !ok {
				// Gone, terminating, or no longer covered: the pod is not counted anyway.
				continue
			}
			deadline := at.Add(timeout)
			if !now.Before(deadline) {
				if expired != nil {
					expired(pod)
				}
				continue
			}
			if kept == nil {
				kept = map[string]metav1.Time{}
			}
			kept[name] = at
			if result.nextExpiry.IsZero() || deadline.Before(result.nextExpiry) {
				result.nextExpiry = deadline
			}
		}
		return kept
	}
	disrupted := keep(pub.Status.DisruptedPods, pubutil.DeletionTimeout, func(pod *corev1.Pod) {
		result.notDeleted = append(result.notDeleted, pod)
	})
	unavailable := keep(pub.Status.UnavailablePods, pubutil.UpdatedDelayCheckTime, nil)
	slices.SortFunc(result.notDeleted, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })

	// Pods the budget exempts (pubutil.Exempt) count like the others: they are available
	// until they go, and their going costs nothing because the webhook records none of
	// their disruptions.
	var available int32
	for _, pod := range cov.pods {
		_, isDisrupted := disrupted[pod.Name]
		_, isUnavailable := unavailable[pod.Name]
		if !isDisrupted && !isUnavailable && pubutil.IsAvailable(pod) {
			available++
		}
	}
	result.status = policyv1beta1.PodUnavailableBudgetStatus{
		ObservedGeneration: pub.Generation,
		DisruptedPods:      disrupted,
		UnavailablePods:    unavailable,
		UnavailableAllowed: max(available-desired, 0),
		CurrentAvailable:   available,
		DesiredAvailable:   desired,
		TotalReplicas:      cov.expected,
	}
	return result
}

// statusEqual reports whether two statuses say the same; a nil map equals an empty one,
// and times are compared as instants.
func statusEqual(a, b policyv1beta1.PodUnavailableBudgetStatus) bool {
	return a.ObservedGeneration == b.ObservedGeneration &&
		a.UnavailableAllowed == b.UnavailableAllowed &&
		a.CurrentAvailable == b.CurrentAvailable &&
		a.DesiredAvailable == b.DesiredAvailable &&
		a.TotalReplicas == b.TotalReplicas &&
		entriesEqual(a.DisruptedPods, b.DisruptedPods) &&
		entriesEqual(a.UnavailablePods, b.UnavailablePods)
}

func entriesEqual(a, b map[string]metav1.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for name, at := range a {
		other, ok := b[name]
		if !ok || !at.Equal(&other) {
			return false
		}
	}
	return true
}

// writeStatus recomputes pub's status on the freshest copy of the budget (the webhook may
// have spent it since the informer saw it) and writes it when it changed, retrying on
// conflicts through the shared cache. It returns what the last attempt computed.
func (c *Controller) writeStatus(ctx context.Context, pub *policyv1beta1.PodUnavailableBudget, cov coverage, desired int32) (computedStatus, error) {
	logger := klog.FromContext(ctx)
	var result computedStatus
	_, err := c.cache.UpdateStatus(ctx, c.bosunClient, pub, func(fresh *policyv1beta1.PodUnavailableBudget) (bool, error) {
		result = calculateStatus(fresh, cov, desired, c.clock.Now())
		if statusEqual(fresh.Status, result.status) {
			return false, nil
		}
		logger.V(4).Info("Writing PodUnavailableBudget status", "from", statusSummary(fresh.Status), "to", statusSummary(result.status))
		fresh.Status = result.status
		return true, nil
	})
	if err != nil {
		return computedStatus{}, err
	}
	return result, nil
}

// statusSummary renders a status for the log.
func statusSummary(s policyv1beta1.PodUnavailableBudgetStatus) string {
	return fmt.Sprintf("total=%d desired=%d current=%d allowed=%d disrupted=%d unavailable=%d generation=%d",
		s.TotalReplicas, s.DesiredAvailable, s.CurrentAvailable, s.UnavailableAllowed,
		len(s.DisruptedPods), len(s.UnavailablePods), s.ObservedGeneration)
}
