package podutil

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

var now = metav1.NewTime(t0)

// basePod is a scheduled, running, ready pod created an hour ago, with no restarts.
func basePod(name string) *corev1.Pod {
	p := readyPod(name, t0.Add(-30*time.Minute))
	p.UID = types.UID("uid-" + name)
	p.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour))
	p.Spec.NodeName = "node"
	return p
}

func withCost(p *corev1.Pod, cost string) *corev1.Pod {
	p.Annotations = map[string]string{PodDeletionCostAnnotation: cost}
	return p
}

func TestRankedPodsRules(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	tests := []struct {
		name         string
		first, other *corev1.Pod // first must sort strictly before other
		rankFirst    int
		rankOther    int
		ignoreCost   bool
		zeroNow      bool
	}{
		{
			name: "1 unscheduled before scheduled",
			// Rule 1 outranks a higher deletion cost on the unscheduled pod.
			first: func() *corev1.Pod { p := withCost(basePod("z"), "100"); p.Spec.NodeName = ""; return p }(),
			other: basePod("a"),
		},
		{
			name:  "2 pending before running",
			first: func() *corev1.Pod { p := basePod("z"); p.Status.Phase = corev1.PodPending; return p }(),
			other: basePod("a"),
		},
		{
			name:  "2 unknown before running",
			first: func() *corev1.Pod { p := basePod("z"); p.Status.Phase = corev1.PodUnknown; return p }(),
			other: basePod("a"),
		},
		{
			name:  "2 other phases rank like pending, before unknown",
			first: func() *corev1.Pod { p := basePod("z"); p.Status.Phase = "Weird"; return p }(),
			other: func() *corev1.Pod { p := basePod("a"); p.Status.Phase = corev1.PodUnknown; return p }(),
		},
		{
			name:  "3 not ready before ready",
			first: func() *corev1.Pod { p := basePod("z"); p.Status.Conditions[1].Status = corev1.ConditionFalse; return p }(),
			other: withCost(basePod("a"), "-100"),
		},
		{
			name:      "4 lower deletion cost first, even against a higher rank",
			first:     withCost(basePod("z"), "-5"),
			other:     withCost(basePod("a"), "10"),
			rankOther: 3,
		},
		{
			name:  "4 cost '+5' counts as 0",
			first: withCost(basePod("z"), "+5"),
			other: withCost(basePod("a"), "1"),
		},
		{
			name:  "4 cost '007' counts as 0",
			first: withCost(basePod("z"), "007"),
			other: withCost(basePod("a"), "1"),
		},
		{
			name:      "5 higher rank first",
			first:     basePod("z"),
			other:     basePod("a"),
			rankFirst: 2,
			rankOther: 1,
		},
		{
			name:       "5 cost ignored when the gate is off, rank decides",
			first:      withCost(basePod("z"), "100"),
			other:      basePod("a"),
			rankFirst:  1,
			ignoreCost: true,
		},
		{
			name: "6 more recently ready first (different log buckets)",
			first: func() *corev1.Pod {
				p := basePod("z")
				p.Status.Conditions[1].LastTransitionTime = metav1.NewTime(t0.Add(-time.Minute))
				return p
			}(),
			other: basePod("a"),
		},
		{
			name: "6 same log bucket: ordered by UID",
			first: func() *corev1.Pod {
				p := basePod("a")
				// 30m ago vs 31m ago: both in bucket floor(log2(~1.8e12 ns)) = 40.
				p.Status.Conditions[1].LastTransitionTime = metav1.NewTime(t0.Add(-31 * time.Minute))
				return p
			}(),
			other: basePod("z"),
		},
		{
			name: "6 zero Now: plain comparison",
			first: func() *corev1.Pod {
				p := basePod("z")
				p.Status.Conditions[1].LastTransitionTime = metav1.NewTime(t0.Add(-29 * time.Minute))
				return p
			}(),
			other:   basePod("a"),
			zeroNow: true,
		},
		{
			name: "6 zero ready time counts as newest",
			first: func() *corev1.Pod {
				p := basePod("z")
				p.Status.Conditions[1].LastTransitionTime = metav1.Time{}
				return p
			}(),
			other: basePod("a"),
		},
		{
			name: "7 more regular restarts first",
			first: func() *corev1.Pod {
				p := basePod("z")
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: 1}, {Name: "d", RestartCount: 4}}
				return p
			}(),
			other: func() *corev1.Pod {
				p := basePod("a")
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: 3}}
				return p
			}(),
		},
		{
			name: "7 equal regular restarts: more sidecar restarts first, plain init containers ignored",
			first: func() *corev1.Pod {
				p := basePod("z")
				p.Spec.InitContainers = []corev1.Container{{Name: "side", RestartPolicy: &always}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "side", RestartCount: 2}}
				return p
			}(),
			other: func() *corev1.Pod {
				p := basePod("a")
				p.Spec.InitContainers = []corev1.Container{{Name: "init"}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", RestartCount: 9}}
				return p
			}(),
		},
		{
			name: "8 newer first",
			first: func() *corev1.Pod {
				p := basePod("z")
				p.CreationTimestamp = metav1.NewTime(t0.Add(-time.Minute))
				return p
			}(),
			other: basePod("a"),
		},
		{
			name: "8 same log bucket: ordered by UID",
			first: func() *corev1.Pod {
				p := basePod("a")
				p.CreationTimestamp = metav1.NewTime(t0.Add(-70 * time.Minute)) // older, same bucket as 60m
				return p
			}(),
			other: basePod("z"),
		},
		{
			name: "8 not-ready pods skip rule 6 and fall through to creation time",
			first: func() *corev1.Pod {
				p := basePod("z")
				p.Status.Conditions[1].Status = corev1.ConditionFalse
				p.CreationTimestamp = metav1.NewTime(t0.Add(-time.Minute))
				return p
			}(),
			other: func() *corev1.Pod {
				p := basePod("a")
				p.Status.Conditions[1].Status = corev1.ConditionFalse
				p.Status.Conditions[1].LastTransitionTime = metav1.NewTime(t0.Add(-time.Second))
				return p
			}(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := RankedPods{
				Pods:               []*corev1.Pod{tc.first, tc.other},
				Rank:               []int{tc.rankFirst, tc.rankOther},
				Now:                now,
				IgnoreDeletionCost: tc.ignoreCost,
			}
			if tc.zeroNow {
				s.Now = metav1.Time{}
			}
			if !s.Less(0, 1) {
				t.Errorf("%s should sort before %s", tc.first.Name, tc.other.Name)
			}
			if s.Less(1, 0) {
				t.Errorf("%s should not sort before %s", tc.other.Name, tc.first.Name)
			}
		})
	}
}

func TestRankedPodsFullTie(t *testing.T) {
	s := RankedPods{Pods: []*corev1.Pod{basePod("a"), basePod("a")}, Rank: []int{0, 0}, Now: now}
	if s.Less(0, 1) || s.Less(1, 0) {
		t.Error("identical pods must not be less than each other")
	}
}

func TestLogBucketsDifferFromPlainOrder(t *testing.T) {
	// Created 62m and 61m ago: the same log2 bucket, so the UID decides and the older "a"
	// goes before the newer "z"; a plain comparison would put "z" first.
	older, newer := basePod("a"), basePod("z")
	older.CreationTimestamp = metav1.NewTime(t0.Add(-62 * time.Minute))
	newer.CreationTimestamp = metav1.NewTime(t0.Add(-61 * time.Minute))
	s := RankedPods{Pods: []*corev1.Pod{older, newer}, Rank: []int{0, 0}, Now: now}
	if !s.Less(0, 1) {
		t.Error("with Now set, same-bucket pods order by UID")
	}
	s.Now = metav1.Time{}
	if !s.Less(1, 0) {
		t.Error("with zero Now, the newer pod goes first")
	}
}

func TestDeletionCost(t *testing.T) {
	tests := map[string]int32{
		"":            0,
		"0":           0,
		"1":           1,
		"-7":          -7,
		"+5":          0,
		"007":         0,
		"00":          0,
		"abc":         0,
		"1.5":         0,
		"2147483647":  2147483647,
		"2147483648":  0,
		"-2147483648": -2147483648,
		"-2147483649": 0,
		"-":           0,
		" 1":          0,
	}
	for value, want := range tests {
		if got := DeletionCost(withCost(basePod("p"), value)); got != want {
			t.Errorf("DeletionCost(%q) = %d, want %d", value, got, want)
		}
	}
	if got := DeletionCost(basePod("p")); got != 0 {
		t.Errorf("no annotation: %d", got)
	}
}

func TestSortKeepsRankAligned(t *testing.T) {
	pods := []*corev1.Pod{basePod("a"), basePod("b"), basePod("c")}
	ranks := []int{1, 3, 2}
	sort.Sort(RankedPods{Pods: pods, Rank: ranks, Now: now})
	if got := names(pods); !slices.Equal(got, []string{"b", "c", "a"}) {
		t.Errorf("order = %v, want [b c a]", got)
	}
	if !slices.Equal(ranks, []int{3, 2, 1}) {
		t.Errorf("ranks = %v, want [3 2 1]", ranks)
	}
}

func BenchmarkSortRankedPods5000(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	pods := make([]*corev1.Pod, 5000)
	ranks := make([]int, len(pods))
	for i := range pods {
		p := basePod(fmt.Sprintf("p-%05d", i))
		p.CreationTimestamp = metav1.NewTime(t0.Add(-time.Duration(r.IntN(1_000_000)) * time.Second))
		p.Status.Conditions[1].LastTransitionTime = metav1.NewTime(t0.Add(-time.Duration(r.IntN(500_000)) * time.Second))
		if r.IntN(4) == 0 {
			p.Annotations = map[string]string{PodDeletionCostAnnotation: fmt.Sprint(r.IntN(10))}
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: int32(r.IntN(3))}}
		p.Spec.InitContainers = []corev1.Container{{Name: "side", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}}
		pods[i], ranks[i] = p, r.IntN(5)
	}
	work := RankedPods{Pods: make([]*corev1.Pod, len(pods)), Rank: make([]int, len(ranks)), Now: now}
	for b.Loop() {
		copy(work.Pods, pods)
		copy(work.Rank, ranks)
		sort.Sort(work)
	}
}
