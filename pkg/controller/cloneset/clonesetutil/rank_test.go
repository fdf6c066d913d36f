package clonesetutil

import (
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
)

var rankNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// rankPod is a running, scheduled, unready pod created an hour ago.
func rankPod(name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(rankNow.Add(-time.Hour))},
		Spec:       corev1.PodSpec{NodeName: "node"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, m := range mutate {
		m(pod)
	}
	return pod
}

func readyFor(d time.Duration) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(rankNow.Add(-d))}}
	}
}

func TestDeletionOrderRules(t *testing.T) {
	cost := func(v string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Annotations = map[string]string{podutil.PodDeletionCostAnnotation: v} }
	}
	for _, tc := range []struct {
		name          string
		first, second *corev1.Pod
		rank          map[types.UID]float64
		unavailable   string
	}{
		{"unscheduled first", rankPod("a", func(p *corev1.Pod) { p.Spec.NodeName = "" }), rankPod("b"), nil, ""},
		{"pending before running", rankPod("a", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }), rankPod("b"), nil, ""},
		{"unknown before running", rankPod("a", func(p *corev1.Pod) { p.Status.Phase = corev1.PodUnknown }), rankPod("b"), nil, ""},
		{"unavailable before available", rankPod("a", readyFor(time.Hour)), rankPod("b", readyFor(time.Hour)), nil, "a"},
		{"not ready before ready", rankPod("a"), rankPod("b", readyFor(time.Hour)), nil, ""},
		{"lower deletion cost first", rankPod("a", cost("-10")), rankPod("b"), nil, ""},
		{"invalid cost counts as 0", rankPod("a", cost("+5")), rankPod("b", cost("1")), nil, ""},
		{"higher rank first", rankPod("a"), rankPod("b"), map[types.UID]float64{"a": 1.5, "b": 1}, ""},
		{"more recently ready first", rankPod("a", readyFor(time.Minute)), rankPod("b", readyFor(time.Hour)), nil, ""},
		{"more restarts first", rankPod("a", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{RestartCount: 3}}
		}), rankPod("b"), nil, ""},
		{"newer first", rankPod("a", func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(rankNow) }), rankPod("b"), nil, ""},
		{"zero creation time counts as newest", rankPod("a", func(p *corev1.Pod) { p.CreationTimestamp = metav1.Time{} }), rankPod("b"), nil, ""},
	} {
		order := DeletionOrder{
			Pods:      []*corev1.Pod{tc.second, tc.first},
			Rank:      func(p *corev1.Pod) float64 { return tc.rank[p.UID] },
			Available: func(p *corev1.Pod) bool { return p.Name != tc.unavailable },
		}
		if !order.Less(1, 0) || order.Less(0, 1) {
			t.Errorf("%s: %s does not go before %s", tc.name, tc.first.Name, tc.second.Name)
		}
	}
}

func TestSameNodeRanks(t *testing.T) {
	onNode := func(node string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.NodeName = node } }
	pods := []*corev1.Pod{
		rankPod("a1", onNode("a"), readyFor(time.Hour)),
		rankPod("a2", onNode("a"), readyFor(time.Minute)),
		rankPod("a3", onNode("a")),
		rankPod("b1", onNode("b")),
		rankPod("u", onNode("")),
	}
	ranks := SameNodeRanks(pods)
	// On node a: a3 (not ready) goes first, then a2 (ready recently); a1 stays.
	want := map[types.UID]float64{"a3": 2, "a2": 1}
	if len(ranks) != len(want) || ranks["a3"] != 2 || ranks["a2"] != 1 {
		t.Errorf("ranks = %v, want %v", ranks, want)
	}
	sorted := append([]*corev1.Pod(nil), pods...)
	sort.Sort(DeletionOrder{Pods: sorted, Rank: func(p *corev1.Pod) float64 { return ranks[p.UID] }})
	if sorted[0].Name != "u" || sorted[1].Name != "a3" || sorted[2].Name != "b1" {
		t.Errorf("deletion order starts %s, %s, %s; want u, a3, b1", sorted[0].Name, sorted[1].Name, sorted[2].Name)
	}
}

func TestSpreadRanks(t *testing.T) {
	onNode := func(node string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.NodeName = node } }
	pods := []*corev1.Pod{
		rankPod("z1a", onNode("n1")), rankPod("z1b", onNode("n1")), rankPod("z1c", onNode("n2")),
		rankPod("z2a", onNode("n3")),
		rankPod("gone", onNode("n9")),
	}
	zones := map[string]string{"n1": "z1", "n2": "z1", "n3": "z2"}
	ranks := SpreadRanks(pods, []string{"zone"}, func(node string) (map[string]string, bool) {
		zone, ok := zones[node]
		return map[string]string{"zone": zone}, ok
	})
	// Two zones: weight ln(4). Zone z1 holds three pods, ranked 3, 2, 1 in deletion order
	// (the two on n1 first: they share a node); zone z2 one pod, ranked 1.
	if ranks["z2a"] >= ranks["z1a"] || ranks["z2a"] >= ranks["z1b"] {
		t.Errorf("the lone pod of zone z2 ranks %v, above the pods of crowded zone z1 (%v)", ranks["z2a"], ranks)
	}
	if ranks["z1c"] >= ranks["z1a"] && ranks["z1c"] >= ranks["z1b"] {
		t.Errorf("the pod alone on its node ranks highest in its zone: %v", ranks)
	}
	if _, ok := ranks["gone"]; ok {
		t.Errorf("a pod on an unknown node got a rank: %v", ranks)
	}
	const ln4 = 1.3862943611198906
	if got := ranks["z2a"]; got != ln4 {
		t.Errorf("rank of z2a = %v, want ln 4", got)
	}
	if sum := ranks["z1a"] + ranks["z1b"] + ranks["z1c"]; sum < 6*ln4-1e-9 || sum > 6*ln4+1e-9 {
		t.Errorf("ranks of zone z1 sum to %v, want 6 ln 4", sum)
	}
}
