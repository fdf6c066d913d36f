package pubutil

import (
	"fmt"
	"strings"
	"time"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/bosun-dev/bosun/pkg/controller/imageref"
	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/podutil"
)

const (
	// DeletionTimeout is how long a pod stays in status.disruptedPods after its deletion or
	// eviction was admitted: long enough for the informer to see it gone, short enough that
	// a delete refused later in the chain (another webhook, a finalizer-less failure) gives
	// the budget back soon.
	DeletionTimeout = 20 * time.Second
	// UpdatedDelayCheckTime is how long a pod stays in status.unavailablePods after its
	// update was admitted: the time the kubelet needs to restart its containers and report
	// them not ready.
	UpdatedDelayCheckTime = 10 * time.Second
	// MaxRecordedPods bounds disruptedPods plus unavailablePods, so the status stays far
	// below the object size limit whatever the request rate.
	MaxRecordedPods = 2000

	// RetryDeniedEvictionsAnnotation set to "true" on a budget makes evictions it denies
	// answer 429 TooManyRequests instead of 403, so that eviction clients such as
	// kubectl drain retry rather than give up.
	RetryDeniedEvictionsAnnotation = "pub.bosun.dev/retry-denied-evictions"
	// ProtectNotReadyAnnotation set to "true" on a budget stops unavailable pods from
	// bypassing it: disrupting such a pod is allowed only while the budget is met (and then
	// costs nothing), so a mass outage cannot be turned into a mass eviction.
	ProtectNotReadyAnnotation = "pub.bosun.dev/protect-not-ready"
)

// RelatedBudget returns the name of the budget a pod is tagged with, "" when untagged. The
// newer annotation wins over the older one when both are present and differ.
func RelatedBudget(pod *corev1.Pod) string {
	if name := pod.Annotations[policyv1beta1.PodRelatedPubAnnotationNew]; name != "" {
		return name
	}
	return pod.Annotations[policyv1beta1.PodRelatedPubAnnotation]
}

// RelatedBudgetAnnotations returns the annotations that tag a pod with a budget: both
// spellings, because older OpenKruise reads only the first one.
func RelatedBudgetAnnotations(pubName string) map[string]string {
	return map[string]string{
		policyv1beta1.PodRelatedPubAnnotation:    pubName,
		policyv1beta1.PodRelatedPubAnnotationNew: pubName,
	}
}

// NoProtect reports whether a pod opted out of every budget check.
func NoProtect(pod *corev1.Pod) bool {
	return pod.Annotations[policyv1beta1.PodPubNoProtectionAnnotation] == "true"
}

// IsActive reports whether a pod still counts towards a budget: not finished and not being
// deleted.
func IsActive(pod *corev1.Pod) bool {
	return podutil.IsPodActive(pod)
}

// HasUnavailableLabel reports whether a pod carries a label with the unavailable-pod prefix,
// which makes it count as unavailable even when Ready.
func HasUnavailableLabel(pod *corev1.Pod) bool {
	for key := range pod.Labels {
		if strings.HasPrefix(key, policyv1beta1.PubUnavailablePodLabelPrefix) {
			return true
		}
	}
	return false
}

// IsStateConsistent reports whether the containers a pod runs are the ones its spec asks
// for, so that a Ready pod in the middle of an in-place change is not counted as available.
//
// A container whose image is pinned by digest must report an image ID with that digest. When
// every image is pinned, that is the whole check; otherwise an in-place update recorded on
// the pod must also have completed. (OpenKruise also waits for SidecarSet-injected sidecars
// to be updated; bosun has no SidecarSet, so there is nothing to check for them.)
func IsStateConsistent(pod *corev1.Pod) bool {
	imageIDs := make(map[string]string, len(pod.Status.ContainerStatuses))
	for _, status := range pod.Status.ContainerStatuses {
		imageIDs[status.Name] = status.ImageID
	}
	allDigests := true
	for _, container := range pod.Spec.Containers {
		_, _, digest := imageref.Split(container.Image)
		if digest == "" {
			allDigests = false
			continue
		}
		imageID, reported := imageIDs[container.Name]
		if !reported || !strings.HasSuffix(imageID, digest) {
			return false
		}
	}
	if allDigests {
		return true
	}
	return inPlaceUpdateCompleted(pod)
}

// inPlaceUpdateCompleted reports whether the in-place update recorded on the pod, if any,
// has taken effect: each container it replaced runs a new image ID (or, should the new image
// resolve to the same ID, reports the image its spec asks for) and no grace period is
// pending. An annotation that cannot be read counts as not completed: better to hold the
// budget than to spend it on a pod whose state is unknown.
func inPlaceUpdateCompleted(pod *corev1.Pod) bool {
	state, err := kruisepod.ReadInPlaceUpdateState(pod)
	if err != nil {
		return false
	}
	if state == nil {
		return true
	}
	return kruisepod.InPlaceUpdateCompleted(pod, state)
}

// IsAvailable reports whether a pod counts as available for a budget: running, Ready, not
// being deleted, not labelled unavailable, and state-consistent.
func IsAvailable(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning &&
		pod.DeletionTimestamp == nil &&
		podutil.IsPodReady(pod) &&
		!HasUnavailableLabel(pod) &&
		IsStateConsistent(pod)
}

// DesiredAvailable returns how many of expected pods a budget keeps available:
// expected − maxUnavailable (floored at 0), or minAvailable; percentages are of expected,
// rounded up.
func DesiredAvailable(spec policyv1beta1.PodUnavailableBudgetSpec, expected int32) (int32, error) {
	switch {
	case spec.MaxUnavailable != nil:
		maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, fmt.Errorf("scaling maxUnavailable %s to %d pods: %w", spec.MaxUnavailable.String(), expected, err)
		}
		return max(expected-int32(maxUnavailable), 0), nil
	case spec.MinAvailable != nil:
		minAvailable, err := intstr.GetScaledValueFromIntOrPercent(spec.MinAvailable, int(expected), true)
		if err != nil {
			return 0, fmt.Errorf("scaling minAvailable %s to %d pods: %w", spec.MinAvailable.String(), expected, err)
		}
		return int32(minAvailable), nil
	}
	return 0, fmt.Errorf("neither maxUnavailable nor minAvailable is set")
}

// BoolAnnotation reports whether a budget's annotation key is exactly "true".
func BoolAnnotation(pub *policyv1beta1.PodUnavailableBudget, key string) bool {
	return pub.Annotations[key] == "true"
}
