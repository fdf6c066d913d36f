package podutil

import (
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodDeletionCostAnnotation lets users steer which pods of a ReplicaSet go first on
// scale-down: lower cost first.
const PodDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// RankedPods sorts active pods so that the pods that should be deleted first on
// scale-down come first. Rank[i] is the caller's rank of Pods[i] (the number of related
// active pods on the same node); higher ranks go first.
//
// Less applies these rules in order; the first that tells two pods apart decides:
//  1. unscheduled before scheduled;
//  2. phase Pending < Unknown < Running (any other phase ranks like Pending);
//  3. not ready before ready;
//  4. lower pod-deletion-cost first (unless IgnoreDeletionCost);
//  5. higher Rank first;
//  6. both ready: the one ready more recently first;
//  7. more container restarts first (regular containers, then restartable init containers);
//  8. the newer one first.
//
// Rules 6 and 8 compare times on a log2 scale relative to Now and break ties inside a
// bucket by UID, so that scale-down spreads over pods of similar age instead of always
// hitting the very newest; the resulting order is best-effort and deterministic, not a
// strict age order (kubernetes issues #126138, #111443).
type RankedPods struct {
	Pods []*corev1.Pod
	Rank []int
	// Now is the reference for the log2 time buckets; with a zero Now times compare plainly.
	Now metav1.Time
	// IgnoreDeletionCost skips rule 4; set it when feature gate PodDeletionCost is off.
	// The gate defaults to on, so the zero value honours the annotation.
	IgnoreDeletionCost bool
}

// Len implements sort.Interface.
func (s RankedPods) Len() int { return len(s.Pods) }

// Swap implements sort.Interface; it keeps Rank aligned with Pods.
func (s RankedPods) Swap(i, j int) {
	s.Pods[i], s.Pods[j] = s.Pods[j], s.Pods[i]
	s.Rank[i], s.Rank[j] = s.Rank[j], s.Rank[i]
}

// phaseOrder ranks phases for rule 2; phases not listed rank as 0, like Pending.
var phaseOrder = map[corev1.PodPhase]int{
	corev1.PodPending: 0,
	corev1.PodUnknown: 1,
	corev1.PodRunning: 2,
}

// Less reports whether Pods[i] should be deleted before Pods[j].
func (s RankedPods) Less(i, j int) bool {
	pi, pj := s.Pods[i], s.Pods[j]

	// 1. Unscheduled before scheduled.
	if (pi.Spec.NodeName == "") != (pj.Spec.NodeName == "") {
		return pi.Spec.NodeName == ""
	}
	// 2. Earlier phase first.
	if oi, oj := phaseOrder[pi.Status.Phase], phaseOrder[pj.Status.Phase]; oi != oj {
		return oi < oj
	}
	// 3. Not ready before ready.
	readyI, readyJ := IsPodReady(pi), IsPodReady(pj)
	if readyI != readyJ {
		return !readyI
	}
	// 4. Lower deletion cost first.
	if !s.IgnoreDeletionCost {
		if ci, cj := DeletionCost(pi), DeletionCost(pj); ci != cj {
			return ci < cj
		}
	}
	// 5. Higher rank (more co-located related pods) first.
	if s.Rank[i] != s.Rank[j] {
		return s.Rank[i] > s.Rank[j]
	}
	// 6. Both ready: more recently ready first.
	if readyI && readyJ {
		ti, tj := readyCondition(pi).LastTransitionTime, readyCondition(pj).LastTransitionTime
		if !ti.Equal(&tj) {
			return s.newerFirst(ti, tj, pi, pj)
		}
	}
	// 7. More restarts first.
	regI, sideI := maxRestarts(pi)
	regJ, sideJ := maxRestarts(pj)
	if regI != regJ {
		return regI > regJ
	}
	if sideI != sideJ {
		return sideI > sideJ
	}
	// 8. Newer first.
	if !pi.CreationTimestamp.Equal(&pj.CreationTimestamp) {
		return s.newerFirst(pi.CreationTimestamp, pj.CreationTimestamp, pi, pj)
	}
	// 9. Full tie.
	return false
}

// newerFirst reports whether ti (of pod pi) ranks as newer than tj (of pj) for rules 6 and
// 8. The times are known to differ.
func (s RankedPods) newerFirst(ti, tj metav1.Time, pi, pj *corev1.Pod) bool {
	if s.Now.IsZero() || ti.IsZero() || tj.IsZero() {
		// Plain comparison; a zero time counts as the newest.
		if ti.IsZero() || tj.IsZero() {
			return ti.IsZero()
		}
		return ti.After(tj.Time)
	}
	bi, bj := logBucket(s.Now, ti), logBucket(s.Now, tj)
	if bi == bj {
		return pi.UID < pj.UID
	}
	return bi < bj
}

// logBucket returns floor(log2(now - t in nanoseconds)), or -1 when t is not before now.
func logBucket(now, t metav1.Time) int64 {
	d := now.Sub(t.Time)
	if d <= 0 {
		return -1
	}
	return int64(math.Log2(float64(d)))
}

// maxRestarts returns the highest restart count among regular containers and among
// restartable init (sidecar) containers.
func maxRestarts(pod *corev1.Pod) (regular, sidecar int32) {
	for _, c := range pod.Status.ContainerStatuses {
		regular = max(regular, c.RestartCount)
	}
	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
		}
	}
	for _, c := range pod.Status.InitContainerStatuses {
		if sidecars[c.Name] {
			sidecar = max(sidecar, c.RestartCount)
		}
	}
	return regular, sidecar
}

// DeletionCost returns the pod's PodDeletionCostAnnotation as an int32. Values that are
// not a plain decimal int32 count as 0: empty, "+"-prefixed, with a leading zero (other
// than "0" itself), non-numeric or out of range. Like upstream, only the first character
// is checked for the leading-zero rule, so "-07" parses as -7.
func DeletionCost(pod *corev1.Pod) int32 {
	value, ok := pod.Annotations[PodDeletionCostAnnotation]
	if !ok || !validFirstDigit(value) {
		return 0
	}
	cost, err := strconv.ParseInt(value, 10, 32)
	if err != nil {
		return 0
	}
	return int32(cost)
}

func validFirstDigit(s string) bool {
	switch {
	case s == "":
		return false
	case s[0] == '-':
		return true
	case s[0] == '0':
		return s == "0"
	default:
		return s[0] >= '1' && s[0] <= '9'
	}
}
