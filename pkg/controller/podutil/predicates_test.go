package podutil

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func readyPod(name string, since time.Time) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since)},
			},
		},
	}
}

func TestStatePredicates(t *testing.T) {
	deleting := ptr.To(metav1.NewTime(t0))
	tests := []struct {
		name                    string
		phase                   corev1.PodPhase
		deletion                *metav1.Time
		wantActive, wantTermina bool
	}{
		{name: "running", phase: corev1.PodRunning, wantActive: true},
		{name: "pending", phase: corev1.PodPending, wantActive: true},
		{name: "unknown phase value", phase: "", wantActive: true},
		{name: "succeeded", phase: corev1.PodSucceeded},
		{name: "failed", phase: corev1.PodFailed},
		{name: "running, being deleted", phase: corev1.PodRunning, deletion: deleting, wantTermina: true},
		{name: "failed, being deleted", phase: corev1.PodFailed, deletion: deleting},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: tc.deletion}, Status: corev1.PodStatus{Phase: tc.phase}}
			if got := IsPodActive(pod); got != tc.wantActive {
				t.Errorf("IsPodActive = %v, want %v", got, tc.wantActive)
			}
			if got := IsPodTerminating(pod); got != tc.wantTermina {
				t.Errorf("IsPodTerminating = %v, want %v", got, tc.wantTermina)
			}
		})
	}
}

func TestIsPodReadyAndAvailable(t *testing.T) {
	notReady := readyPod("nr", t0)
	notReady.Status.Conditions[1].Status = corev1.ConditionFalse
	noCondition := &corev1.Pod{}
	zeroSince := readyPod("z", time.Time{})
	tests := []struct {
		name          string
		pod           *corev1.Pod
		minReady      int32
		now           time.Time
		wantReady     bool
		wantAvailable bool
	}{
		{name: "no conditions", pod: noCondition},
		{name: "ready false", pod: notReady},
		{name: "ready, minReady 0", pod: readyPod("a", t0), now: t0, wantReady: true, wantAvailable: true},
		{name: "ready 9s of 10", pod: readyPod("a", t0), minReady: 10, now: t0.Add(9 * time.Second), wantReady: true},
		{name: "ready exactly 10s of 10", pod: readyPod("a", t0), minReady: 10, now: t0.Add(10 * time.Second), wantReady: true, wantAvailable: true},
		{name: "zero transition time never available with minReady", pod: zeroSince, minReady: 1, now: t0, wantReady: true},
		{name: "zero transition time with minReady 0", pod: zeroSince, now: t0, wantReady: true, wantAvailable: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsPodReady(tc.pod); got != tc.wantReady {
				t.Errorf("IsPodReady = %v, want %v", got, tc.wantReady)
			}
			if got := IsPodAvailable(tc.pod, tc.minReady, metav1.NewTime(tc.now)); got != tc.wantAvailable {
				t.Errorf("IsPodAvailable = %v, want %v", got, tc.wantAvailable)
			}
		})
	}
}

func TestNextAvailabilityCheck(t *testing.T) {
	notReady := readyPod("nr", t0)
	notReady.Status.Conditions[1].Status = corev1.ConditionFalse
	pods := []*corev1.Pod{
		readyPod("available", t0.Add(-time.Hour)),
		readyPod("in30s", t0.Add(-30*time.Second)), // available at t0+30s with minReady 60
		readyPod("in50s", t0.Add(-10*time.Second)),
		readyPod("zero", time.Time{}),
		notReady,
	}
	tests := []struct {
		name     string
		pods     []*corev1.Pod
		minReady int32
		now      time.Time
		want     *time.Duration
	}{
		{name: "minReadySeconds 0", pods: pods, minReady: 0, now: t0},
		{name: "nothing pending", pods: pods[:1], minReady: 60, now: t0},
		{name: "only zero-time and unready pods", pods: pods[3:], minReady: 60, now: t0},
		{name: "smallest positive delay, recomputed against the clock", pods: pods, minReady: 60, now: t0.Add(5 * time.Second), want: ptr.To(25 * time.Second)},
		{name: "clock already past the check: check now", pods: pods, minReady: 60, now: t0.Add(40 * time.Second), want: ptr.To(time.Duration(0))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := NextAvailabilityCheck(tc.pods, tc.minReady, t0, clocktesting.NewFakePassiveClock(tc.now))
			switch {
			case got == nil && tc.want == nil:
			case got == nil || tc.want == nil || *got != *tc.want:
				t.Errorf("NextAvailabilityCheck = %v, want %v", fmtDur(got), fmtDur(tc.want))
			}
		})
	}
}

func fmtDur(d *time.Duration) string {
	if d == nil {
		return "nil"
	}
	return d.String()
}

func TestFilterClaimed(t *testing.T) {
	owner := &metav1.ObjectMeta{Name: "rs", UID: "owner"}
	ref := func(uid types.UID) []metav1.OwnerReference {
		return []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", UID: uid, Controller: ptr.To(true)}}
	}
	pod := func(name string, lbl string, refs []metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": lbl}, OwnerReferences: refs}}
	}
	nonController := []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", UID: "owner"}}
	pods := []*corev1.Pod{
		pod("mine", "web", ref("owner")),
		pod("mine-wrong-labels", "db", ref("owner")),
		pod("other-owner", "web", ref("other")),
		pod("orphan", "web", nil),
		pod("non-controller-ref", "web", nonController),
	}
	got := FilterClaimed(owner, labels.SelectorFromSet(labels.Set{"app": "web"}), pods)
	if len(got) != 1 || got[0].Name != "mine" {
		t.Errorf("FilterClaimed = %v, want [mine]", names(got))
	}
	if got := FilterActive([]*corev1.Pod{readyPod("a", t0), {Status: corev1.PodStatus{Phase: corev1.PodFailed}}}); len(got) != 1 || got[0].Name != "a" {
		t.Errorf("FilterActive = %v, want [a]", names(got))
	}
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}
