package podunavailablebudget

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// With UPDATE protection on and one disruption allowed, changing a tagged pod's image is
// allowed and recorded in unavailablePods; changing a second pod's image is denied; a
// label-only change always passes. The record is dropped about 10 s later.
func TestUpdateProtection(t *testing.T) {
	e := setup(t)
	e.startManager(t, managerOptions(updateGate+"=true"))
	f := e.newFixture(t, fixtureSpec{name: "web", pods: 3, budget: []budgetOption{maxUnavailableOne},
		want: counts{total: 3, desired: 2, current: 3, allowed: 1}})
	rec := e.recordBudget(t, "web")
	a, b, c := f.pods[0], f.pods[1], f.pods[2]
	setImage := func(pod *corev1.Pod) { pod.Spec.Containers[0].Image = image2 }

	framework.MustSucceed(t, "changing the image of pod "+a, e.updatePod(a, setImage))
	recorded := rec.waitFor(t, e.Ctx, 0, "pod "+a+" in unavailablePods", unavailable(a))
	if recorded.budget.Status.UnavailableAllowed != 0 {
		t.Errorf("the version recording %s allows %d more, want 0: %s", a, recorded.budget.Status.UnavailableAllowed, describeBudget(recorded.budget))
	}
	if _, ok := rec.first(disrupted(a)); ok {
		t.Errorf("an update was recorded in disruptedPods:\n%s", rec.describe())
	}

	expectBudgetDenial(t, "changing the image of pod "+b, e.updatePod(b, setImage))
	if pod := e.Pods().Get(t, b); pod.Spec.Containers[0].Image != image1 {
		t.Errorf("pod %s runs %s after its update was denied", b, pod.Spec.Containers[0].Image)
	}
	e.waitForEvent(t, "Pod", b, corev1.EventTypeWarning, eventPubPreventDeletion)

	addLabel := func(pod *corev1.Pod) { pod.Labels["touched"] = "true" }
	framework.MustSucceed(t, "adding a label to pod "+b, e.updatePod(b, addLabel))
	framework.MustSucceed(t, "adding a label to pod "+c, e.updatePod(c, addLabel))

	recordedAt := recorded.budget.Status.UnavailablePods[a].Time
	index := slices.IndexFunc(rec.all(), func(v budgetVersion) bool { return v.budget.ResourceVersion == recorded.budget.ResourceVersion })
	dropped := rec.waitFor(t, e.Ctx, index, "the record of "+a+" to expire", not(unavailable(a)))
	if earliest := recordedAt.Add(updatedDelay - clockSlack); dropped.seen.Before(earliest) {
		t.Errorf("the record of %s made at %s was dropped at %s, before it expired", a,
			recordedAt.Format(time.RFC3339Nano), dropped.seen.Format(time.RFC3339Nano))
	}
	// The pod is still Ready (no kubelet restarts it), so the budget is whole again.
	e.waitForSettled(t, "web", counts{total: 3, desired: 2, current: 3, allowed: 1})
	framework.MustSucceed(t, "changing the image of pod "+b+" once the budget is back", e.updatePod(b, setImage))
}
