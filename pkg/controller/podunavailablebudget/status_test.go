package podunavailablebudget

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
)

func TestCalculateStatus(t *testing.T) {
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }
	pods := podsOf("p", "web", 5, nil)
	notReady(pods[4])
	pub := selectorBudget("pub", "web", intstr.FromInt32(1))
	pub.Generation = 7
	pub.Status.DisruptedPods = map[string]metav1.Time{
		"p-0":  at(-20 * time.Second), // expires exactly now: dropped, not deleted
		"p-1":  at(-19 * time.Second), // one second left
		"p-3":  at(-time.Minute),      // long expired: dropped, not deleted
		"gone": at(0),                 // no longer covered: dropped silently
	}
	pub.Status.UnavailablePods = map[string]metav1.Time{
		"p-2":    at(-9 * time.Second), // one second left as well; the earlier expiry wins below
		"p-1":    at(-5 * time.Second), // recorded in both maps: counted once
		"p-4":    at(time.Hour),        // the webhook's clock is ahead: kept
		"absent": at(-time.Second),
	}
	got := calculateStatus(pub, coverage{pods: pods, expected: 5}, 3, t0)

	want := policyv1beta1.PodUnavailableBudgetStatus{
		ObservedGeneration: 7,
		DisruptedPods:      map[string]metav1.Time{"p-1": at(-19 * time.Second)},
		UnavailablePods:    map[string]metav1.Time{"p-2": at(-9 * time.Second), "p-1": at(-5 * time.Second), "p-4": at(time.Hour)},
		// p-0 and p-3 are available again; p-1, p-2 are recorded; p-4 is not ready.
		CurrentAvailable:   2,
		DesiredAvailable:   3,
		UnavailableAllowed: 0,
		TotalReplicas:      5,
	}
	if !statusEqual(got.status, want) {
		t.Errorf("status\n got %+v\nwant %+v", got.status, want)
	}
	var notDeleted []string
	for _, pod := range got.notDeleted {
		notDeleted = append(notDeleted, pod.Name)
	}
	if !slices.Equal(notDeleted, []string{"p-0", "p-3"}) {
		t.Errorf("not deleted %v, want [p-0 p-3]", notDeleted)
	}
	if want := t0.Add(time.Second); !got.nextExpiry.Equal(want) {
		t.Errorf("next expiry %v, want %v", got.nextExpiry, want)
	}
}

func TestCalculateStatusWithoutRecords(t *testing.T) {
	pods := podsOf("p", "web", 4, nil)
	got := calculateStatus(selectorBudget("pub", "web", intstr.FromInt32(1)), coverage{pods: pods, expected: 4}, 1, t0)
	if got.status.DisruptedPods != nil || got.status.UnavailablePods != nil {
		t.Errorf("empty maps should stay nil: %v %v", got.status.DisruptedPods, got.status.UnavailablePods)
	}
	if got.status.UnavailableAllowed != 3 || !got.nextExpiry.IsZero() || got.notDeleted != nil {
		t.Errorf("got %+v", got)
	}
}

func TestStatusEqual(t *testing.T) {
	base := policyv1beta1.PodUnavailableBudgetStatus{
		ObservedGeneration: 1, UnavailableAllowed: 1, CurrentAvailable: 4, DesiredAvailable: 3, TotalReplicas: 4,
		DisruptedPods: map[string]metav1.Time{"a": metav1.NewTime(t0)},
	}
	same := *base.DeepCopy()
	// The same instant read back in another location.
	same.DisruptedPods["a"] = metav1.NewTime(t0.In(time.FixedZone("x", 3600)))
	same.UnavailablePods = map[string]metav1.Time{}
	if !statusEqual(base, same) {
		t.Error("equal statuses (empty map vs nil, same instant) differ")
	}
	for name, change := range map[string]func(s *policyv1beta1.PodUnavailableBudgetStatus){
		"generation": func(s *policyv1beta1.PodUnavailableBudgetStatus) { s.ObservedGeneration = 2 },
		"allowed":    func(s *policyv1beta1.PodUnavailableBudgetStatus) { s.UnavailableAllowed = 0 },
		"current":    func(s *policyv1beta1.PodUnavailableBudgetStatus) { s.CurrentAvailable = 3 },
		"desired":    func(s *policyv1beta1.PodUnavailableBudgetStatus) { s.DesiredAvailable = 2 },
		"total":      func(s *policyv1beta1.PodUnavailableBudgetStatus) { s.TotalReplicas = 5 },
		"entry time": func(s *policyv1beta1.PodUnavailableBudgetStatus) {
			s.DisruptedPods["a"] = metav1.NewTime(t0.Add(time.Second))
		},
		"entry name": func(s *policyv1beta1.PodUnavailableBudgetStatus) {
			s.DisruptedPods = map[string]metav1.Time{"b": metav1.NewTime(t0)}
		},
		"unavailable pods": func(s *policyv1beta1.PodUnavailableBudgetStatus) {
			s.UnavailablePods = map[string]metav1.Time{"a": metav1.NewTime(t0)}
		},
	} {
		changed := *base.DeepCopy()
		change(&changed)
		if statusEqual(base, changed) {
			t.Errorf("%s: a changed status compares equal", name)
		}
	}
}

// TestCalculateStatusCountsStateInconsistentPodsUnavailable: a Ready pod whose container
// does not yet run the image digest its spec asks for is in the middle of an update.
func TestCalculateStatusCountsStateInconsistentPodsUnavailable(t *testing.T) {
	pods := podsOf("p", "web", 2, nil)
	pods[1].Spec.Containers[0].Image = "img@sha256:new"
	pods[1].Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", ImageID: "img@sha256:old"}}
	got := calculateStatus(selectorBudget("pub", "web", intstr.FromInt32(1)), coverage{pods: pods, expected: 2}, 1, t0)
	if got.status.CurrentAvailable != 1 {
		t.Errorf("current %d, want 1", got.status.CurrentAvailable)
	}
}
