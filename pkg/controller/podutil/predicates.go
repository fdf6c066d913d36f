package podutil

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
)

// IsPodActive reports whether pod counts towards a controller's replicas: it has not
// finished (phase neither Succeeded nor Failed) and is not being deleted.
func IsPodActive(pod *corev1.Pod) bool {
	return !isFinished(pod) && pod.DeletionTimestamp == nil
}

// IsPodTerminating reports whether pod has not finished but is being deleted.
func IsPodTerminating(pod *corev1.Pod) bool {
	return !isFinished(pod) && pod.DeletionTimestamp != nil
}

func isFinished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// IsPodReady reports whether pod's Ready condition has status True.
func IsPodReady(pod *corev1.Pod) bool {
	c := readyCondition(pod)
	return c != nil && c.Status == corev1.ConditionTrue
}

// readyCondition returns pod's Ready condition, or nil.
func readyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// IsPodAvailable reports whether pod is ready and, when minReadySeconds > 0, has been
// ready for at least minReadySeconds at now (readiness since a zero time never counts).
func IsPodAvailable(pod *corev1.Pod, minReadySeconds int32, now metav1.Time) bool {
	if !IsPodReady(pod) {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	since := readyCondition(pod).LastTransitionTime
	if since.IsZero() {
		return false
	}
	return !since.Add(seconds(minReadySeconds)).After(now.Time)
}

func seconds(s int32) time.Duration {
	return time.Duration(s) * time.Second
}

// NextAvailabilityCheck returns how long to wait before the next of pods becomes
// available, so that a controller can requeue its owner instead of polling. It returns
// nil when minReadySeconds <= 0 or no ready pod is still waiting.
//
// The pod is chosen against evaluatedAt (the time the caller computed availability with),
// then its delay is recomputed against clk.Now() because the sync may have taken a while;
// if that delay is no longer positive the result is 0: check again immediately.
func NextAvailabilityCheck(pods []*corev1.Pod, minReadySeconds int32, evaluatedAt time.Time, clk clock.PassiveClock) *time.Duration {
	if minReadySeconds <= 0 {
		return nil
	}
	var (
		next     *corev1.Pod
		minDelay time.Duration
	)
	for _, pod := range pods {
		delay, ok := availableIn(pod, minReadySeconds, evaluatedAt)
		if ok && (next == nil || delay < minDelay) {
			next, minDelay = pod, delay
		}
	}
	if next == nil {
		return nil
	}
	delay, ok := availableIn(next, minReadySeconds, clk.Now())
	if !ok {
		delay = 0
	}
	return &delay
}

// availableIn returns the positive time from at until pod becomes available, and false
// when pod is not ready, has a zero Ready transition time, or is already available.
func availableIn(pod *corev1.Pod, minReadySeconds int32, at time.Time) (time.Duration, bool) {
	if !IsPodReady(pod) {
		return 0, false
	}
	since := readyCondition(pod).LastTransitionTime
	if since.IsZero() {
		return 0, false
	}
	delay := since.Add(seconds(minReadySeconds)).Sub(at)
	return delay, delay > 0
}

// FilterClaimed returns the pods whose controller reference points to owner's UID and
// whose labels match selector.
func FilterClaimed(owner metav1.Object, selector labels.Selector, pods []*corev1.Pod) []*corev1.Pod {
	var claimed []*corev1.Pod
	for _, pod := range pods {
		if metav1.IsControlledBy(pod, owner) && selector.Matches(labels.Set(pod.Labels)) {
			claimed = append(claimed, pod)
		}
	}
	return claimed
}

// FilterActive returns the pods for which IsPodActive holds.
func FilterActive(pods []*corev1.Pod) []*corev1.Pod {
	var active []*corev1.Pod
	for _, pod := range pods {
		if IsPodActive(pod) {
			active = append(active, pod)
		}
	}
	return active
}
