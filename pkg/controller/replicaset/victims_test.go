package replicaset

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/pkg/features"
)

func names(pods []*corev1.Pod) []string {
	var n []string
	for _, p := range pods {
		n = append(n, p.Name)
	}
	return n
}

func TestRelatedPods(t *testing.T) {
	owner := types.UID("deployment-uid")
	a := ownedBy(newRS("a", 1), "Deployment", "d", owner)
	b := ownedBy(newRS("b", 1), "Deployment", "d", owner)
	// c selects the same pods as a: they must be returned once.
	c := ownedBy(newRS("c", 1), "Deployment", "d", owner)
	c.Spec.Selector.MatchLabels = map[string]string{"app": "a"}
	invalid := ownedBy(newRS("invalid", 1), "Deployment", "d", owner)
	invalid.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Bogus"}}}
	other := ownedBy(newRS("other", 1), "Deployment", "e", "other-uid")
	orphanRS := newRS("orphan-rs", 1)

	pods := []*corev1.Pod{
		newPod("a0", a), deleting(newPod("a1", a)),
		withPhase(newPod("b0", b), corev1.PodFailed),
		newPod("other0", other),
	}
	f := newFixture(t, fixtureOption{}, []*appsv1.ReplicaSet{a, b, c, invalid, other, orphanRS}, pods)

	tests := []struct {
		rs   *appsv1.ReplicaSet
		want []string
	}{
		{rs: a, want: []string{"a0", "a1", "b0"}},
		{rs: other, want: []string{"other0"}},
		{rs: orphanRS, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.rs.Name, func(t *testing.T) {
			related, err := f.c.relatedPods(tc.rs)
			if err != nil {
				t.Fatal(err)
			}
			got := names(related)
			slices.Sort(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("related pods (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodsToDelete(t *testing.T) {
	rs := newRS("a", 1)
	scheduled := func(name, node string, cost string) *corev1.Pod {
		p := ready(onNode(newPod(name, rs), node), t0.Add(-time.Hour))
		if cost != "" {
			p.Annotations = map[string]string{podutil.PodDeletionCostAnnotation: cost}
		}
		return p
	}
	tests := []struct {
		name    string
		gates   map[featuregate.Feature]bool
		claimed []*corev1.Pod
		related []*corev1.Pod
		n       int
		want    []string
	}{
		{
			name:    "all pods: returned as they are",
			claimed: []*corev1.Pod{scheduled("x", "n1", ""), newPod("y", rs)},
			n:       2,
			want:    []string{"x", "y"},
		},
		{
			name: "crowded node first",
			claimed: []*corev1.Pod{
				scheduled("lonely", "n1", ""), scheduled("crowded", "n2", ""),
			},
			related: []*corev1.Pod{
				scheduled("lonely", "n1", ""), scheduled("crowded", "n2", ""),
				scheduled("s1", "n2", ""), scheduled("s2", "n2", ""),
				// Inactive related pods do not crowd a node.
				deleting(scheduled("s3", "n1", "")), deleting(scheduled("s4", "n1", "")),
				deleting(scheduled("s5", "n1", "")),
			},
			n:    1,
			want: []string{"crowded"},
		},
		{
			name:    "unscheduled before crowded",
			claimed: []*corev1.Pod{scheduled("crowded", "n2", ""), newPod("unscheduled", rs)},
			related: []*corev1.Pod{scheduled("s1", "n2", ""), scheduled("s2", "n2", "")},
			n:       1,
			want:    []string{"unscheduled"},
		},
		{
			name:    "deletion cost outranks node crowding",
			claimed: []*corev1.Pod{scheduled("crowded", "n2", "100"), scheduled("cheap", "n1", "1")},
			related: []*corev1.Pod{scheduled("s1", "n2", ""), scheduled("s2", "n2", "")},
			n:       1,
			want:    []string{"cheap"},
		},
		{
			name:    "deletion cost ignored with the gate off",
			gates:   map[featuregate.Feature]bool{features.PodDeletionCost: false},
			claimed: []*corev1.Pod{scheduled("crowded", "n2", "100"), scheduled("cheap", "n1", "1")},
			related: []*corev1.Pod{scheduled("s1", "n2", ""), scheduled("s2", "n2", "")},
			n:       1,
			want:    []string{"crowded"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fixtureOption{gates: tc.gates}, []*appsv1.ReplicaSet{rs}, nil)
			claimed := slices.Clone(tc.claimed)
			got := f.c.podsToDelete(claimed, tc.related, tc.n)
			if diff := cmp.Diff(tc.want, names(got)); diff != "" {
				t.Errorf("victims (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(names(tc.claimed), names(claimed)); diff != "" {
				t.Errorf("podsToDelete reordered the caller's slice (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeletionAgeRatioMetric(t *testing.T) {
	registerMetrics()
	rs := newRS("a", 1)
	created := func(p *corev1.Pod, age time.Duration) *corev1.Pod {
		p.CreationTimestamp = metav1.NewTime(t0.Add(-age))
		return p
	}
	tests := []struct {
		name      string
		sorted    []*corev1.Pod
		n         int
		wantCount uint64
		wantSum   float64
	}{
		{
			name: "ready victims against the youngest ready pod, integer division",
			sorted: []*corev1.Pod{
				created(ready(newPod("old", rs), t0), 10*time.Second),     // 10000/3000 = 3
				created(ready(newPod("older", rs), t0), 7*time.Second),    // 7000/3000 = 2
				created(newPod("unready-victim", rs), 50*time.Second),     // skipped
				created(ready(newPod("youngest", rs), t0), 3*time.Second), // not a victim
				created(newPod("unready-young", rs), time.Second),         // not ready: not the reference
			},
			n:         3,
			wantCount: 2,
			wantSum:   5,
		},
		{
			name:   "youngest ready pod created now: skipped",
			sorted: []*corev1.Pod{created(ready(newPod("old", rs), t0), time.Minute), created(ready(newPod("new", rs), t0), 0)},
			n:      1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			countBefore, sumBefore := histogramState(t)
			observeDeletionAgeRatio(tc.sorted, tc.n, t0)
			countAfter, sumAfter := histogramState(t)
			count, sum := countAfter-countBefore, sumAfter-sumBefore
			if count != tc.wantCount || sum != tc.wantSum {
				t.Errorf("observations %d with sum %v, want %d with sum %v", count, sum, tc.wantCount, tc.wantSum)
			}
		})
	}
}

func histogramState(t *testing.T) (uint64, float64) {
	t.Helper()
	vec, err := testutil.GetHistogramVecFromGatherer(legacyregistry.DefaultGatherer, "replicaset_controller_sorting_deletion_age_ratio", nil)
	if err != nil {
		// Nothing observed yet: the family is not exported.
		return 0, 0
	}
	return vec.GetAggregatedSampleCount(), vec.GetAggregatedSampleSum()
}
