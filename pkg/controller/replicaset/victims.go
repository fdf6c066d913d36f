package replicaset

import (
	"fmt"
	"slices"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/pkg/features"
)

// relatedPods returns every pod, in any state, selected by rs or by a ReplicaSet with the
// same controller (the sibling ReplicaSets of one Deployment), de-duplicated by UID.
// A ReplicaSet without a controller has no related pods.
func (c *Controller) relatedPods(rs *appsv1.ReplicaSet) ([]*corev1.Pod, error) {
	ref := metav1.GetControllerOfNoCopy(rs)
	if ref == nil {
		return nil, nil
	}
	siblings, err := c.rsIndexer.ByIndex(ControllerUIDIndex, string(ref.UID))
	if err != nil {
		return nil, fmt.Errorf("listing ReplicaSets controlled by %s: %w", ref.UID, err)
	}
	seen := map[types.UID]bool{}
	var related []*corev1.Pod
	for _, obj := range siblings {
		sibling, ok := obj.(*appsv1.ReplicaSet)
		if !ok {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(sibling.Spec.Selector)
		if err != nil {
			// An invalid selector selects nothing.
			continue
		}
		pods, err := c.pods.Pods(sibling.Namespace).List(selector)
		if err != nil {
			return nil, fmt.Errorf("listing pods of ReplicaSet %s/%s: %w", sibling.Namespace, sibling.Name, err)
		}
		for _, pod := range pods {
			if !seen[pod.UID] {
				seen[pod.UID] = true
				related = append(related, pod)
			}
		}
	}
	return related, nil
}

// podsToDelete picks the n pods of claimed that scale-down removes first. Pods are ranked
// by how many active related pods share their node, so that during a rolling update the
// pods left over spread across nodes.
func (c *Controller) podsToDelete(claimed, related []*corev1.Pod, n int) []*corev1.Pod {
	if n >= len(claimed) {
		// Everything goes; no order needed.
		return claimed
	}
	ranked := rankByRelatedPodsOnNode(claimed, related, c.clock.Now())
	ranked.IgnoreDeletionCost = !c.gates.Enabled(features.PodDeletionCost)
	sort.Sort(ranked)
	observeDeletionAgeRatio(ranked.Pods, n, ranked.Now.Time)
	return ranked.Pods[:n]
}

// rankByRelatedPodsOnNode returns a copy of pods ranked by the number of active related
// pods on each pod's node (unscheduled pods share the empty node name).
func rankByRelatedPodsOnNode(pods, related []*corev1.Pod, now time.Time) podutil.RankedPods {
	podsOnNode := map[string]int{}
	for _, pod := range related {
		if podutil.IsPodActive(pod) {
			podsOnNode[pod.Spec.NodeName]++
		}
	}
	rank := make([]int, len(pods))
	for i, pod := range pods {
		rank[i] = podsOnNode[pod.Spec.NodeName]
	}
	return podutil.RankedPods{Pods: slices.Clone(pods), Rank: rank, Now: metav1.NewTime(now)}
}

// observeDeletionAgeRatio reports, for every ready pod among the first n of sorted, its
// age relative to the youngest ready pod. With logarithmic scale-down the ratio should
// stay below 2; larger values mean old pods were removed while young ones stayed.
func observeDeletionAgeRatio(sorted []*corev1.Pod, n int, now time.Time) {
	var youngest time.Time
	for _, pod := range sorted {
		if podutil.IsPodReady(pod) && pod.CreationTimestamp.After(youngest) {
			youngest = pod.CreationTimestamp.Time
		}
	}
	// Whole milliseconds with integer division, as upstream reports it.
	youngestAge := now.Sub(youngest).Milliseconds()
	if youngestAge == 0 {
		return
	}
	for _, pod := range sorted[:n] {
		if !podutil.IsPodReady(pod) {
			continue
		}
		age := now.Sub(pod.CreationTimestamp.Time).Milliseconds()
		sortingDeletionAgeRatio.Observe(float64(age / youngestAge))
	}
}
