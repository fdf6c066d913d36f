package podunavailablebudget

import (
	"net/http"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// Beyond OpenKruise: a budget annotated pub.bosun.dev/retry-denied-evictions: "true"
// answers the evictions it denies with 429 TooManyRequests, which `kubectl drain` and other
// eviction clients retry, instead of 403, which they give up on. Deletes are still
// denied with 403, and "false" keeps OpenKruise's 403. Only "true" and "false" are valid.
func TestRetryDeniedEvictions(t *testing.T) {
	e := setup(t)
	e.startManager(t, managerOptions(""))

	_, err := e.Bosun.PolicyV1alpha1().PodUnavailableBudgets(e.Namespace).Create(e.Ctx, newBudget("invalid",
		withSelector(map[string]string{"app": "invalid"}), maxUnavailableOne, withAnnotation(retryDeniedEvictionsKey, "yes")), metav1.CreateOptions{})
	framework.ExpectRefused(t, "creating a budget with retry-denied-evictions: yes", err, http.StatusBadRequest, retryDeniedEvictionsKey)

	none := withMaxUnavailable(intstr.FromInt32(0))
	web := e.newFixture(t, fixtureSpec{name: "web", pods: 3, budget: []budgetOption{none, withAnnotation(retryDeniedEvictionsKey, "true")},
		want: counts{total: 3, desired: 3, current: 3, allowed: 0}})
	api := e.newFixture(t, fixtureSpec{name: "api", pods: 3, budget: []budgetOption{none, withAnnotation(retryDeniedEvictionsKey, "false")},
		want: counts{total: 3, desired: 3, current: 3, allowed: 0}})

	err = e.evictPod(web.pods[0], false)
	framework.ExpectRefused(t, "evicting pod "+web.pods[0]+" under a retry-denied-evictions budget", err, http.StatusTooManyRequests, budgetDeniedMessage)
	if !apierrors.IsTooManyRequests(err) || apierrors.ReasonForError(err) != metav1.StatusReasonTooManyRequests {
		t.Errorf("eviction answer %v: reason %q, want TooManyRequests", err, apierrors.ReasonForError(err))
	}
	expectBudgetDenial(t, "deleting pod "+web.pods[0]+" under a retry-denied-evictions budget", e.deletePod(web.pods[0]))
	if pod := e.Pods().Get(t, web.pods[0]); pod.DeletionTimestamp != nil {
		t.Errorf("pod %s is terminating although both requests were denied", web.pods[0])
	}

	expectBudgetDenial(t, "evicting pod "+api.pods[0]+" under a budget with retry-denied-evictions: false", e.evictPod(api.pods[0], false))
}

// Beyond OpenKruise: a budget annotated pub.bosun.dev/protect-not-ready: "true" no longer
// lets every NotReady pod go. While the budget is not met (fewer pods available than must
// stay), deleting or evicting a NotReady pod is denied as any other; once it is met, it is
// allowed and spends nothing.
func TestProtectNotReady(t *testing.T) {
	e := setup(t)
	e.startManager(t, managerOptions(""))

	_, err := e.Bosun.PolicyV1alpha1().PodUnavailableBudgets(e.Namespace).Create(e.Ctx, newBudget("invalid",
		withSelector(map[string]string{"app": "invalid"}), maxUnavailableOne, withAnnotation(protectNotReadyKey, "maybe")), metav1.CreateOptions{})
	framework.ExpectRefused(t, "creating a budget with protect-not-ready: maybe", err, http.StatusBadRequest, protectNotReadyKey)

	f := e.newFixture(t, fixtureSpec{name: "web", pods: 4, budget: []budgetOption{maxUnavailableOne, withAnnotation(protectNotReadyKey, "true")},
		want: counts{total: 4, desired: 3, current: 4, allowed: 1}})
	ready, recovering, notReady := f.pods[0], f.pods[2], f.pods[3]

	// Two pods go NotReady at once, as in a network partition: the budget is not met.
	e.SetPodRunning(t, recovering, false, time.Time{})
	e.SetPodRunning(t, notReady, false, time.Time{})
	e.waitForSettled(t, "web", counts{total: 4, desired: 3, current: 2, allowed: 0})
	expectBudgetDenial(t, "deleting NotReady pod "+notReady+" while the budget is not met", e.deletePod(notReady))
	expectBudgetDenial(t, "evicting NotReady pod "+notReady+" while the budget is not met", e.evictPod(notReady, false))

	// One comes back: 3 available, as many as must stay.
	e.SetPodRunning(t, recovering, true, time.Time{})
	e.waitForSettled(t, "web", counts{total: 4, desired: 3, current: 3, allowed: 0})
	rec := e.recordBudget(t, "web")
	framework.MustSucceed(t, "deleting NotReady pod "+notReady+" once the budget is met", e.deletePod(notReady))
	if _, ok := rec.first(disrupted(notReady)); ok {
		t.Errorf("the NotReady pod %s was charged:\n%s", notReady, rec.describe())
	}
	for _, v := range rec.all() {
		if v.budget.Status.UnavailableAllowed < 0 {
			t.Errorf("a version allows a negative number of disruptions: %s", describeBudget(v.budget))
		}
	}
	// Ready pods are protected as before.
	expectBudgetDenial(t, "deleting Ready pod "+ready, e.deletePod(ready))
	e.waitForSettled(t, "web", counts{total: 4, desired: 3, current: 3, allowed: 0})
}
