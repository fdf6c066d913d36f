package podunavailablebudget

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

var maxUnavailableOne = withMaxUnavailable(intstr.FromInt32(1))

// With one disruption allowed, deleting pod A is allowed and recorded; deleting pod B while
// A is still terminating is denied with 403 and a Warning event on B.
func TestDeleteBudget(t *testing.T) {
	e := setup(t)
	cm := e.startManager(t, managerOptions(""))
	node := e.createNode(t, "node", nil)
	f := e.newFixture(t, fixtureSpec{name: "web", pods: 3, budget: []budgetOption{maxUnavailableOne}, pod: onNode(node),
		want: counts{total: 3, desired: 2, current: 3, allowed: 1}})
	rec := e.recordBudget(t, "web")
	a, b := f.pods[0], f.pods[1]

	framework.MustSucceed(t, "deleting pod "+a, e.deletePod(a))
	v := rec.waitFor(t, e.Ctx, 0, "pod "+a+" in disruptedPods", disrupted(a))
	if v.budget.Status.UnavailableAllowed != 0 {
		t.Errorf("the version recording %s allows %d more, want 0: %s", a, v.budget.Status.UnavailableAllowed, describeBudget(v.budget))
	}
	if pod := e.Pods().Get(t, a); pod.DeletionTimestamp == nil {
		t.Fatalf("pod %s is not terminating after its deletion", a)
	}

	expectBudgetDenial(t, "deleting pod "+b+" while "+a+" terminates", e.deletePod(b))
	if pod := e.Pods().Get(t, b); pod.DeletionTimestamp != nil {
		t.Errorf("pod %s is terminating although its deletion was denied", b)
	}
	e.waitForEvent(t, "Pod", b, corev1.EventTypeWarning, eventPubPreventDeletion)
	if _, ok := rec.first(disrupted(b)); ok {
		t.Errorf("the denied pod %s was recorded:\n%s", b, rec.describe())
	}

	// OpenKruise's denial counter, by the pod's workload and the requesting user.
	metrics, err := cm.Metrics(e.CP.Config().BearerToken)
	if err != nil {
		t.Fatal(err)
	}
	series := fmt.Sprintf(`pod_unavailable_budget{kind_namespace_name="ReplicaSet_%s_web",username="%s"}`, e.Namespace, framework.AdminUser)
	if value, ok := framework.MetricValue(metrics, series); !ok || value != "1" {
		t.Errorf("%s is %q (present %v), want 1", series, value, ok)
	}
}

// Evictions spend the same budget, and a denied eviction is answered 403 — not 429 as a
// PodDisruptionBudget's — as OpenKruise answers.
func TestEviction(t *testing.T) {
	e := setup(t)
	e.startManager(t, managerOptions(""))
	node := e.createNode(t, "node", nil)
	f := e.newFixture(t, fixtureSpec{name: "web", pods: 3, budget: []budgetOption{maxUnavailableOne}, pod: onNode(node),
		want: counts{total: 3, desired: 2, current: 3, allowed: 1}})
	rec := e.recordBudget(t, "web")
	a, b := f.pods[0], f.pods[1]

	framework.MustSucceed(t, "evicting pod "+a, e.evictPod(a, false))
	rec.waitFor(t, e.Ctx, 0, "pod "+a+" in disruptedPods", disrupted(a))
	if pod := e.Pods().Get(t, a); pod.DeletionTimestamp == nil {
		t.Fatalf("pod %s is not terminating after its eviction", a)
	}

	expectBudgetDenial(t, "evicting pod "+b+" while "+a+" terminates", e.evictPod(b, false))
	if pod := e.Pods().Get(t, b); pod.DeletionTimestamp != nil {
		t.Errorf("pod %s is terminating although its eviction was denied", b)
	}
	e.waitForEvent(t, "Pod", b, corev1.EventTypeWarning, eventPubPreventDeletion)
}

// A dry-run delete or eviction is answered as the real one would be, but spends nothing.
func TestDryRun(t *testing.T) {
	e := setup(t)
	e.startManager(t, managerOptions(""))
	f := e.newFixture(t, fixtureSpec{name: "web", pods: 3, budget: []budgetOption{maxUnavailableOne},
		want: counts{total: 3, desired: 2, current: 3, allowed: 1}})
	before := e.budgets().Get(t, "web")
	rec := e.recordBudget(t, "web")
	a := f.pods[0]

	dryRun := metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
	framework.MustSucceed(t, "dry-run delete of "+a, e.Client.CoreV1().Pods(e.Namespace).Delete(e.Ctx, a, dryRun))
	framework.MustSucceed(t, "dry-run eviction of "+a, e.evictPod(a, true))
	framework.MustSucceed(t, "a second dry-run delete of "+a, e.Client.CoreV1().Pods(e.Namespace).Delete(e.Ctx, a, dryRun))

	// The webhook writes the budget before it answers, so any write would be visible now.
	after := e.budgets().Get(t, "web")
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("the budget was written by dry-run requests:\nbefore %s\nafter  %s", describeBudget(before), describeBudget(after))
	}
	if pod := e.Pods().Get(t, a); pod.DeletionTimestamp != nil {
		t.Fatalf("pod %s is terminating after dry-run requests", a)
	}

	// The budget is intact: the real delete is allowed.
	framework.MustSucceed(t, "deleting pod "+a, e.deletePod(a))
	rec.waitFor(t, e.Ctx, 0, "pod "+a+" in disruptedPods", disrupted(a))
}

// With no disruption allowed, deleting a pod that is not Ready is allowed: it is unavailable
// already, and is not charged.
func TestNotReadyPodsBypass(t *testing.T) {
	e := setup(t)
	e.startManager(t, managerOptions(""))
	f := e.newFixture(t, fixtureSpec{name: "web", pods: 3, budget: []budgetOption{maxUnavailableOne},
		want: counts{total: 3, desired: 2, current: 3, allowed: 1}})
	notReady := f.pods[2]
	e.SetPodRunning(t, notReady, false, time.Time{})
	e.waitForSettled(t, "web", counts{total: 3, desired: 2, current: 2, allowed: 0})
	rec := e.recordBudget(t, "web")

	expectBudgetDenial(t, "deleting Ready pod "+f.pods[0], e.deletePod(f.pods[0]))
	framework.MustSucceed(t, "deleting NotReady pod "+notReady, e.deletePod(notReady))
	if _, ok := rec.first(disrupted(notReady)); ok {
		t.Errorf("the NotReady pod %s was charged:\n%s", notReady, rec.describe())
	}
}

// A Ready pod carrying an unavailable-pod.kruise.io/ label counts as unavailable: it is not
// in currentAvailable, and deleting it is allowed.
func TestUnavailableLabel(t *testing.T) {
	e := setup(t)
	e.startManager(t, managerOptions(""))
	f := e.newFixture(t, fixtureSpec{name: "web", pods: 3, budget: []budgetOption{maxUnavailableOne},
		pod: func(i int, pod *corev1.Pod) {
			if i == 2 {
				pod.Labels[unavailableLabelPrefix+"drain"] = "true"
			}
		},
		want: counts{total: 3, desired: 2, current: 2, allowed: 0}})
	labelled := f.pods[2]
	if pod := e.Pods().Get(t, labelled); !isReady(pod) {
		t.Fatalf("pod %s is not Ready", labelled)
	}

	expectBudgetDenial(t, "deleting unlabelled pod "+f.pods[0], e.deletePod(f.pods[0]))
	framework.MustSucceed(t, "deleting pod "+labelled+" labelled unavailable", e.deletePod(labelled))
}

// With no disruption allowed, a pod annotated pub.kruise.io/no-protect: "true" may still be
// deleted; its siblings may not.
func TestNoProtect(t *testing.T) {
	e := setup(t)
	e.startManager(t, managerOptions(""))
	f := e.newFixture(t, fixtureSpec{name: "web", pods: 3, budget: []budgetOption{withMaxUnavailable(intstr.FromInt32(0))},
		pod: func(i int, pod *corev1.Pod) {
			if i == 2 {
				pod.Annotations = map[string]string{noProtectAnnotation: "true"}
			}
		},
		want: counts{total: 3, desired: 3, current: 3, allowed: 0}})

	expectBudgetDenial(t, "deleting pod "+f.pods[0], e.deletePod(f.pods[0]))
	framework.MustSucceed(t, "deleting pod "+f.pods[2]+" annotated no-protect", e.deletePod(f.pods[2]))
}

// A budget protecting only EVICT lets plain deletes through and denies evictions.
func TestOperationFilter(t *testing.T) {
	e := setup(t)
	e.startManager(t, managerOptions(""))
	f := e.newFixture(t, fixtureSpec{name: "web", pods: 3,
		budget: []budgetOption{withMaxUnavailable(intstr.FromInt32(0)), withAnnotation(protectOperationsKey, "EVICT")},
		want:   counts{total: 3, desired: 3, current: 3, allowed: 0}})

	framework.MustSucceed(t, "deleting pod "+f.pods[0]+" under an EVICT-only budget", e.deletePod(f.pods[0]))
	expectBudgetDenial(t, "evicting pod "+f.pods[1]+" under an EVICT-only budget", e.evictPod(f.pods[1], false))
}

// When the budget was charged for a pod that then was not deleted — here a
// PodDisruptionBudget refuses the eviction after the budget's webhook admitted it — the
// record expires about 20 s after it was made, a Warning NotDeleted is recorded on the pod,
// and the budget is given back.
func TestDisruptionExpiry(t *testing.T) {
	e := setup(t)
	e.startManager(t, managerOptions(""))
	f := e.newFixture(t, fixtureSpec{name: "web", pods: 3, budget: []budgetOption{maxUnavailableOne},
		pod: func(i int, pod *corev1.Pod) {
			if i == 0 {
				pod.Labels["guard"] = "pdb"
			}
		},
		want: counts{total: 3, desired: 2, current: 3, allowed: 1}})
	a := f.pods[0]
	// No disruption controller runs, so the PodDisruptionBudget is never processed and the
	// API server refuses every eviction it covers with 429 — after admission.
	_, err := e.Client.PolicyV1().PodDisruptionBudgets(e.Namespace).Create(e.Ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guard"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"guard": "pdb"}},
			MaxUnavailable: ptr.To(intstr.FromInt32(0)),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the PodDisruptionBudget: %v", err)
	}
	rec := e.recordBudget(t, "web")

	err = e.evictPod(a, false)
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("evicting pod %s covered by a PodDisruptionBudget: %v, want the budget's 429", a, err)
	}
	charged := rec.waitFor(t, e.Ctx, 0, "pod "+a+" in disruptedPods", disrupted(a))
	if got := charged.budget.Status.UnavailableAllowed; got != 0 {
		t.Errorf("the version recording %s allows %d more, want 0", a, got)
	}
	recordedAt := charged.budget.Status.DisruptedPods[a].Time

	// Asked again while recorded, the budget lets the eviction through to the
	// PodDisruptionBudget without charging for the pod a second time.
	err = e.evictPod(a, false)
	if !apierrors.IsTooManyRequests(err) {
		t.Errorf("evicting pod %s again while it is recorded: %v, want the PodDisruptionBudget's 429", a, err)
	}
	if b := e.budgets().Get(t, "web"); b.Status.UnavailableAllowed < 0 || !b.Status.DisruptedPods[a].Time.Equal(recordedAt) {
		t.Errorf("the second eviction of %s changed its record: %s", a, describeBudget(b))
	}

	index := slices.IndexFunc(rec.all(), func(v budgetVersion) bool { return v.budget.ResourceVersion == charged.budget.ResourceVersion })
	expired := rec.waitFor(t, e.Ctx, index, "the record of "+a+" to expire", not(disrupted(a)))
	if earliest := recordedAt.Add(deletionTimeout - clockSlack); expired.seen.Before(earliest) {
		t.Errorf("the record of %s made at %s was dropped at %s, before it expired", a,
			recordedAt.Format(time.RFC3339Nano), expired.seen.Format(time.RFC3339Nano))
	}
	if pod := e.Pods().Get(t, a); pod.DeletionTimestamp != nil || !isReady(pod) {
		t.Fatalf("pod %s is not the Ready pod it was", a)
	}
	e.waitForEvent(t, "Pod", a, corev1.EventTypeWarning, eventNotDeleted)
	e.waitForSettled(t, "web", counts{total: 3, desired: 2, current: 3, allowed: 1})
}

// A pod tagged with a budget that no longer exists may be deleted.
func TestPubDeletedMidRequest(t *testing.T) {
	e := setup(t)
	e.startManager(t, managerOptions(""))
	f := e.newFixture(t, fixtureSpec{name: "web", pods: 3, budget: []budgetOption{withMaxUnavailable(intstr.FromInt32(0))},
		want: counts{total: 3, desired: 3, current: 3, allowed: 0}})
	a := f.pods[0]
	expectBudgetDenial(t, "deleting pod "+a+" while its budget exists", e.deletePod(a))

	if err := e.Bosun.PolicyV1alpha1().PodUnavailableBudgets(e.Namespace).Delete(e.Ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the budget: %v", err)
	}
	if pod := e.Pods().Get(t, a); !taggedWith(pod, "web") {
		t.Fatalf("pod %s lost its related-pub annotations: %v", a, pod.Annotations)
	}
	// The webhook learns of the deletion through an informer: denials until then are
	// expected, anything else is not.
	var last error
	err := framework.WaitFor(e.Ctx, waitTimeout, "the deletion of pod "+a+" to be allowed", func(context.Context) (bool, error) {
		last = e.deletePod(a)
		if last == nil {
			return true, nil
		}
		if framework.StatusCode(last) == http.StatusForbidden {
			return false, nil
		}
		return false, last
	})
	if err != nil {
		t.Fatalf("%v (last answer: %v)", err, last)
	}
}

// Ten parallel deletes of distinct Ready pods with two disruptions allowed: exactly two
// are allowed, the rest denied, and the budget records exactly the allowed pods.
func TestConcurrency(t *testing.T) {
	e := setup(t)
	e.startManager(t, managerOptions(""))
	f := e.newFixture(t, fixtureSpec{name: "web", pods: 12, budget: []budgetOption{withMaxUnavailable(intstr.FromInt32(2))},
		want: counts{total: 12, desired: 10, current: 12, allowed: 2}})
	rec := e.recordBudget(t, "web")

	targets := f.pods[:10]
	results := make([]error, len(targets))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, name := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i] = e.deletePod(name)
		}()
	}
	close(start)
	wg.Wait()

	admitted := sets.New[string]()
	for i, err := range results {
		switch {
		case err == nil:
			admitted.Insert(targets[i])
		case framework.StatusCode(err) == http.StatusForbidden:
		default:
			t.Errorf("deleting pod %s: %v, want it allowed or denied with 403", targets[i], err)
		}
	}
	if admitted.Len() != 2 {
		t.Errorf("%d deletes were allowed (%v), want exactly 2", admitted.Len(), sets.List(admitted))
	}
	for i, err := range results {
		if err != nil && framework.StatusCode(err) == http.StatusForbidden {
			expectBudgetDenial(t, "deleting pod "+targets[i], err)
		}
	}

	// Every admitted pod was recorded (before it was deleted: the webhook writes first), and
	// no other pod ever was.
	e.waitForSettled(t, "web", counts{total: 12, desired: 10, current: 10, allowed: 0})
	recorded := sets.New[string]()
	for _, v := range rec.all() {
		recorded.Insert(slices.Collect(maps.Keys(v.budget.Status.DisruptedPods))...)
		if n := len(v.budget.Status.DisruptedPods); n > 2 {
			t.Errorf("a version records %d disrupted pods, more than the 2 allowed: %s", n, describeBudget(v.budget))
		}
		if v.budget.Status.UnavailableAllowed < 0 {
			t.Errorf("a version allows a negative number of disruptions: %s", describeBudget(v.budget))
		}
	}
	if !recorded.Equal(admitted) {
		t.Errorf("disruptedPods recorded %v, want exactly the admitted pods %v\n%s", sets.List(recorded), sets.List(admitted), rec.describe())
	}
	remaining := e.WaitForPods(t, "the denied pods to remain", func([]corev1.Pod) bool { return true })
	for _, name := range targets {
		present := slices.ContainsFunc(remaining, func(p corev1.Pod) bool { return p.Name == name })
		if present == admitted.Has(name) {
			t.Errorf("pod %s: present %v, admitted %v", name, present, admitted.Has(name))
		}
	}
}
