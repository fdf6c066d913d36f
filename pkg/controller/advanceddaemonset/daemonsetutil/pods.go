package daemonsetutil

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

// SortOldestFirst orders pods so that the one a node keeps comes first: bound pods before
// pending ones, then by creation time, then by name.
func SortOldestFirst(pods []*corev1.Pod) {
	slices.SortStableFunc(pods, func(a, b *corev1.Pod) int {
		if boundA, boundB := a.Spec.NodeName != "", b.Spec.NodeName != ""; boundA != boundB {
			if boundA {
				return -1
			}
			return 1
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			if a.CreationTimestamp.Before(&b.CreationTimestamp) {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

// IsUpdated reports whether pod runs the DaemonSet's current revision: it carries the
// current hash, or the DaemonSet's deprecated template generation (generation empty when
// the DaemonSet has none).
func IsUpdated(pod *corev1.Pod, hash, generation string) bool {
	if value, ok := pod.Labels[appsv1beta1.ControllerRevisionHashLabelKey]; ok && value == hash {
		return true
	}
	if generation == "" {
		return false
	}
	value, ok := pod.Labels[appsv1beta1.DaemonSetTemplateGenerationLabelKey]
	return ok && value == generation
}
