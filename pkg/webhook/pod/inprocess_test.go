package pod

import (
	"errors"
	"strings"
	"testing"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	policylisters "github.com/bosun-dev/client-go/listers/policy/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// inProcess is the decision the fixture's webhooks make, for a controller of the process.
func (f *fixture) inProcess() *InProcess {
	return &InProcess{h: f.handler}
}

func TestInProcessAdmitsThenTheWebhookDoesNotChargeAgain(t *testing.T) {
	a, b := readyPod("a"), readyPod("b")
	f := newFixture(t, fixtureOptions{gates: updateOn}, a, b, newBudget("pub", 1, 2, 3))
	check := f.inProcess()
	user := "cloneset-controller"

	admitted, reason, err := check.Admit(f.ctx, a, policyv1beta1.PubUpdateOperation, user)
	if err != nil || !admitted || reason != "" {
		t.Fatalf("Admit(a) = %t, %q, %v; want admitted", admitted, reason, err)
	}
	pub := f.budget("pub")
	if at, ok := pub.Status.UnavailablePods["a"]; !ok || !at.Time.Equal(now) || pub.Status.UnavailableAllowed != 0 || len(pub.Status.DisruptedPods) != 0 {
		t.Errorf("budget status %+v, want a in unavailablePods and nothing left", pub.Status)
	}
	// The controller's update itself then passes the webhook, without a second charge.
	updated := a.DeepCopy()
	updated.Spec.Containers[0].Image = "nginx:1.26"
	expectAllowed(t, f.validate(updateRequest(t, a, updated, user)))
	if writes, _, _ := f.server.Counts(); writes != 1 {
		t.Errorf("%d budget writes, want the one of the in-process check", writes)
	}

	before := denials(t, "ReplicaSet_ns_rs", user)
	admitted, reason, err = check.Admit(f.ctx, b, policyv1beta1.PubUpdateOperation, user)
	if err != nil || admitted || reason != noBudgetMessage("pub") {
		t.Errorf("Admit(b) = %t, %q, %v; want refused: %s", admitted, reason, err, noBudgetMessage("pub"))
	}
	if events := f.events(); len(events) != 1 || !strings.Contains(events[0], "Warning "+EventPubPreventPodDeletion+" ") || !strings.HasSuffix(events[0], "@ns/b") {
		t.Errorf("events = %q, want one PubPreventPodDeletion on b", events)
	}
	if got := denials(t, "ReplicaSet_ns_rs", user); got != before+1 {
		t.Errorf("pod_unavailable_budget{username=%q} = %v, want %v", user, got, before+1)
	}
}

func TestInProcessChargesNothingForUnavailablePods(t *testing.T) {
	inGrace := readyPod("grace", withAnnotation(appsv1beta1.InPlaceUpdateGraceKey, `{"revision":"r2"}`),
		withAnnotation(appsv1beta1.InPlaceUpdateStateKey, `{"revision":"r2","updateTimestamp":"2025-03-01T11:00:00Z"}`))
	pods := []*corev1.Pod{readyPod("unready", notReady), readyPod("drained", withLabel("unavailable-pod.kruise.io/drain", "true")), inGrace,
		readyPod("untagged", untagged)}
	f := newFixture(t, fixtureOptions{gates: updateOn}, pods[0], pods[1], pods[2], pods[3], newBudget("pub", 0, 2, 2))
	for _, pod := range pods {
		admitted, reason, err := f.inProcess().Admit(f.ctx, pod, policyv1beta1.PubUpdateOperation, "u")
		if err != nil || !admitted {
			t.Errorf("Admit(%s) = %t, %q, %v; want admitted at no cost", pod.Name, admitted, reason, err)
		}
	}
	if writes, _, _ := f.server.Counts(); writes != 0 {
		t.Errorf("%d budget writes, want none", writes)
	}
	if events := f.events(); len(events) != 0 {
		t.Errorf("events = %q, want none", events)
	}
}

// brokenBudgets is a budget lister that cannot read.
type brokenBudgets struct{}

func (brokenBudgets) List(labels.Selector) ([]*policyv1beta1.PodUnavailableBudget, error) {
	return nil, errors.New("cache broken")
}

func (brokenBudgets) PodUnavailableBudgets(string) policylisters.PodUnavailableBudgetNamespaceLister {
	return brokenBudgets{}
}

func (brokenBudgets) Get(string) (*policyv1beta1.PodUnavailableBudget, error) {
	return nil, errors.New("cache broken")
}

func TestInProcessReportsWhatItCannotDecide(t *testing.T) {
	check := NewInProcess(Dependencies{Budgets: brokenBudgets{}})
	f := newFixture(t, fixtureOptions{gates: updateOn})
	admitted, reason, err := check.Admit(f.ctx, readyPod("a"), policyv1beta1.PubUpdateOperation, "u")
	if err == nil || !strings.Contains(err.Error(), "cache broken") || admitted || reason != "" {
		t.Errorf("Admit = %t, %q, %v; want an error, neither admitted nor refused", admitted, reason, err)
	}
}
