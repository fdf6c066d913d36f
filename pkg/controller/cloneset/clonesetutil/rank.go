package clonesetutil

import (
	"math"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
)

// DeletionOrder sorts pods so that those a CloneSet's scale-down removes first come first.
// The first rule that tells two pods apart decides:
//  1. unscheduled before scheduled;
//  2. phase Pending < Unknown < Running (other phases rank like Pending);
//  3. not available (Available) before available;
//  4. not ready before ready;
//  5. lower controller.kubernetes.io/pod-deletion-cost first;
//  6. higher Rank first;
//  7. both ready: the one ready more recently first (a zero time counts as the newest);
//  8. more container restarts first;
//  9. newer first (a zero time counts as the newest).
//
// Unlike the ReplicaSet's order, times compare plainly, not in log2 buckets: this is
// OpenKruise's order, which users of CloneSets rely on.
type DeletionOrder struct {
	Pods []*corev1.Pod
	// Rank returns a pod's rank (see SameNodeRanks, SpreadRanks); nil ranks every pod 0.
	Rank func(*corev1.Pod) float64
	// Available says whether a pod is available; nil skips rule 3.
	Available func(*corev1.Pod) bool
}

func (s DeletionOrder) Len() int      { return len(s.Pods) }
func (s DeletionOrder) Swap(i, j int) { s.Pods[i], s.Pods[j] = s.Pods[j], s.Pods[i] }

// deletionPhaseOrder ranks phases for rule 2; unlisted phases rank 0, like Pending.
var deletionPhaseOrder = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

// Less reports whether Pods[i] goes before Pods[j].
func (s DeletionOrder) Less(i, j int) bool {
	pi, pj := s.Pods[i], s.Pods[j]
	if (pi.Spec.NodeName == "") != (pj.Spec.NodeName == "") {
		return pi.Spec.NodeName == ""
	}
	if oi, oj := deletionPhaseOrder[pi.Status.Phase], deletionPhaseOrder[pj.Status.Phase]; oi != oj {
		return oi < oj
	}
	if s.Available != nil {
		if ai, aj := s.Available(pi), s.Available(pj); ai != aj {
			return !ai
		}
	}
	readyI, readyJ := podutil.IsPodReady(pi), podutil.IsPodReady(pj)
	if readyI != readyJ {
		return !readyI
	}
	if ci, cj := podutil.DeletionCost(pi), podutil.DeletionCost(pj); ci != cj {
		return ci < cj
	}
	if s.Rank != nil {
		if ri, rj := s.Rank(pi), s.Rank(pj); ri != rj {
			return ri > rj
		}
	}
	if readyI && readyJ {
		if ti, tj := readySince(pi), readySince(pj); !ti.Equal(tj) {
			return newerOrZero(ti, tj)
		}
	}
	if ri, rj := maxRestarts(pi), maxRestarts(pj); ri != rj {
		return ri > rj
	}
	if ti, tj := pi.CreationTimestamp.Time, pj.CreationTimestamp.Time; !ti.Equal(tj) {
		return newerOrZero(ti, tj)
	}
	return false
}

// SameNodeRanks ranks pods that share a node with others of pods: on a node with k > 1 of
// them, the one scale-down would remove last ranks 0 and the others k-1, …, 1 in
// DeletionOrder (without ranks or availability). A pod alone on its node, or unscheduled,
// ranks 0. Removing high ranks first spreads what stays across nodes.
func SameNodeRanks(pods []*corev1.Pod) map[types.UID]float64 {
	ranks := map[types.UID]float64{}
	byNode := map[string][]*corev1.Pod{}
	for _, pod := range pods {
		if pod.Spec.NodeName != "" {
			byNode[pod.Spec.NodeName] = append(byNode[pod.Spec.NodeName], pod)
		}
	}
	for _, onNode := range byNode {
		if len(onNode) <= 1 {
			continue
		}
		sorted := slices.Clone(onNode)
		sort.Sort(DeletionOrder{Pods: sorted})
		// The last one, the best, keeps rank 0.
		for i, pod := range sorted[:len(sorted)-1] {
			ranks[pod.UID] = float64(len(sorted) - 1 - i)
		}
	}
	return ranks
}

// SpreadRanks ranks pods by the topology spread constraints of their template, given by
// their topology keys: for each key, the pods are grouped by the value the key has on their
// node (nodeLabels; nodes it does not know, or without the key, group nothing), each group
// is sorted in DeletionOrder (ranked by SameNodeRanks, except for the hostname key), and the
// pod at position i of a group of n gets (n - i) × ln(groups + 2) added. Pods in large groups
// thus rank high and go first, evening out the topology.
func SpreadRanks(pods []*corev1.Pod, topologyKeys []string, nodeLabels func(node string) (map[string]string, bool)) map[types.UID]float64 {
	ranks := map[types.UID]float64{}
	var nodes []string
	labelsOf := map[string]map[string]string{}
	podsOn := map[string][]*corev1.Pod{}
	for _, pod := range pods {
		node := pod.Spec.NodeName
		if node == "" {
			continue
		}
		if _, seen := labelsOf[node]; !seen {
			labels, ok := nodeLabels(node)
			if !ok {
				continue
			}
			labelsOf[node] = labels
			nodes = append(nodes, node)
		}
		podsOn[node] = append(podsOn[node], pod)
	}
	sameNode := SameNodeRanks(pods)
	for _, key := range topologyKeys {
		groups := map[string][]*corev1.Pod{}
		for _, node := range nodes {
			value, ok := labelsOf[node][key]
			if !ok {
				continue
			}
			groups[value] = append(groups[value], podsOn[node]...)
		}
		var rank func(*corev1.Pod) float64
		if key != corev1.LabelHostname {
			rank = func(p *corev1.Pod) float64 { return sameNode[p.UID] }
		}
		weight := math.Log(float64(len(groups) + 2))
		for _, group := range groups {
			sorted := slices.Clone(group)
			sort.Sort(DeletionOrder{Pods: sorted, Rank: rank})
			for i, pod := range sorted {
				ranks[pod.UID] += float64(len(sorted)-i) * weight
			}
		}
	}
	return ranks
}

// readySince returns the time pod's Ready condition turned True; zero when it is not.
func readySince(pod *corev1.Pod) time.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// newerOrZero reports whether a is newer than b, a zero time counting as the newest.
func newerOrZero(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero()
	}
	return a.After(b)
}

// maxRestarts returns the highest restart count of pod's regular containers.
func maxRestarts(pod *corev1.Pod) int32 {
	var highest int32
	for _, status := range pod.Status.ContainerStatuses {
		highest = max(highest, status.RestartCount)
	}
	return highest
}
