package clonesetutil

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

// labelledPods returns running, ready, identical pods named 0, 1, … with the given labels
// ("k=v,k2=v2"; "" for none).
func labelledPods(specs ...string) []*corev1.Pod {
	var pods []*corev1.Pod
	for i, spec := range specs {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i), Labels: map[string]string{}}}
		for _, pair := range strings.Split(spec, ",") {
			if k, v, ok := strings.Cut(pair, "="); ok {
				pod.Labels[k] = v
			}
		}
		pods = append(pods, pod)
	}
	return pods
}

func allIndexes(n int) []int {
	indexes := make([]int, n)
	for i := range indexes {
		indexes[i] = i
	}
	return indexes
}

// The expected orders are those OpenKruise v1.9.0's unit tests assert for its scatter
// sorter with the same pods (pkg/util/updatesort, TestScatterPodsByRule).
func TestScatter(t *testing.T) {
	const a = "labelA=AAA"
	strategy := appsv1beta1.UpdateScatterStrategy{{Key: "labelA", Value: "AAA"}}
	for _, tc := range []struct {
		name   string
		labels []string
		want   []int
	}{
		{"one pod", []string{a}, []int{0}},
		{"one each", []string{a, "b=b"}, []int{0, 1}},
		{"2 matching, 4 others", []string{"", "", "", "", a, a}, []int{4, 0, 1, 2, 3, 5}},
		{"3 matching, 3 others", []string{"", "", "", a, a, a}, []int{3, 0, 1, 4, 2, 5}},
		{"2 matching, 5 others", []string{"", "", "", a, "", "", a}, []int{3, 0, 1, 2, 4, 5, 6}},
		{"3 matching, 6 others", []string{"", "", "", "", "", "", a, a, a}, []int{6, 0, 1, 2, 7, 3, 4, 5, 8}},
		{"4 matching, 2 others", []string{"", "", a, a, a, a}, []int{2, 3, 0, 4, 1, 5}},
		{"7 matching, 2 others", []string{"", "", a, "", a, a, a, a, a}, []int{2, 4, 0, 5, 6, 1, 7, 3, 8}},
		{"5 matching, 4 others", []string{"", a, "", a, "", "", a, a, a}, []int{1, 0, 3, 2, 6, 4, 7, 5, 8}},
		{"another label alongside", []string{"", "", "", "", "ee=x", "a=x", "", a, a, a + ",labelB=BBB"}, []int{7, 0, 1, 2, 3, 8, 4, 5, 6, 9}},
	} {
		pods := labelledPods(tc.labels...)
		got := UpdateOrder(&appsv1beta1.RollingUpdateCloneSetStrategy{ScatterStrategy: strategy}, pods, allIndexes(len(pods)))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: order = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestScatterTermsMostMatchedFirst(t *testing.T) {
	pods := labelledPods("", "", "b=B", "b=BBB", "a=A", "a=A", "b=BBB", "b=BBB")
	terms := scatterTerms(appsv1beta1.UpdateScatterStrategy{{Key: "a", Value: "A"}, {Key: "b", Value: "BBB"}, {Key: "c", Value: "C"}}, pods, allIndexes(len(pods)))
	want := []appsv1beta1.UpdateScatterTerm{{Key: "b", Value: "BBB"}, {Key: "a", Value: "A"}}
	if !slices.Equal(terms, want) {
		t.Errorf("terms = %v, want %v (most matched first, unmatched terms dropped)", terms, want)
	}
}

func TestPriorityOrder(t *testing.T) {
	weight := &appsv1beta1.UpdatePriorityStrategy{WeightPriority: []appsv1beta1.UpdatePriorityWeightTerm{
		{Weight: 20, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"key1": "foo"}}},
		{Weight: 10, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"key2": "bar"}}},
		{Weight: 15, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"key3": "baz"}}},
	}}
	order := &appsv1beta1.UpdatePriorityStrategy{OrderPriority: []appsv1beta1.UpdatePriorityOrderTerm{{OrderedKey: "key1"}, {OrderedKey: "key2"}}}
	for _, tc := range []struct {
		name     string
		strategy *appsv1beta1.UpdatePriorityStrategy
		labels   []string
		want     []int
	}{
		// 0 → 0, key1 → 20, key2+key3 → 25, key2 → 10.
		{"weights add up", weight, []string{"", "key1=foo", "key2=bar,key3=baz", "key2=bar"}, []int{2, 1, 3, 0}},
		{"equal weights keep their order", weight, []string{"key2=bar", "x=y", "key2=bar"}, []int{0, 2, 1}},
		// level of key1 before key2; higher trailing number first; no key before any.
		{"ordered keys", order, []string{"key2=o-20", "key1=o-5", "key1=o-10", "", "key2=o-30"}, []int{3, 2, 1, 4, 0}},
		{"values without a trailing number rank 0", order, []string{"key1=x", "key1=v1", "key1=v-2"}, []int{2, 1, 0}},
	} {
		pods := labelledPods(tc.labels...)
		got := UpdateOrder(&appsv1beta1.RollingUpdateCloneSetStrategy{PriorityStrategy: tc.strategy}, pods, allIndexes(len(pods)))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: order = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestUpdateOrderActivityAndPreparingUpdate(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ready := func(pod *corev1.Pod, since time.Time) *corev1.Pod {
		pod.Spec.NodeName = "n"
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since)}}
		return pod
	}
	pods := labelledPods("", "", "", "", "")
	ready(pods[0], now.Add(-time.Hour))
	ready(pods[1], now.Add(-time.Minute))                                // ready more recently: before 0
	pods[2].Spec.NodeName, pods[2].Status.Phase = "n", corev1.PodRunning // not ready: before the ready ones
	// 3 is unscheduled: first of all.
	ready(pods[4], now.Add(-2*time.Hour)).Labels[appsv1beta1.LifecycleStateKey] = string(appsv1beta1.LifecycleStatePreparingUpdate)

	got := UpdateOrder(nil, pods, []int{0, 1, 2, 3, 4})
	if want := []int{4, 3, 2, 1, 0}; !slices.Equal(got, want) {
		t.Errorf("order = %v, want %v (PreparingUpdate, unscheduled, not ready, recently ready, long ready)", got, want)
	}
	if got := UpdateOrder(nil, pods, []int{0, 1}); !slices.Equal(got, []int{1, 0}) {
		t.Errorf("subset order = %v, want [1 0]", got)
	}
}
