package cloneset

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	policylisters "github.com/bosun-dev/client-go/listers/policy/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/budget"
	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/budget/budgettest"
	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/pubutil"
	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
	"github.com/bosun-dev/bosun/pkg/features"
	podwebhook "github.com/bosun-dev/bosun/pkg/webhook/pod"
)

// budgetCase is a rollout of two ready pods with maxUnavailable 2 (so the CloneSet alone
// would update both at once), under a PodUnavailableBudget "pub" that allows
// allowed more pods to become unavailable. The budget is judged by the pod webhook's own
// decision, over a budget server that checks resource versions.
type budgetCase struct {
	r      *rollout
	server *budgettest.Server
	events *record.FakeRecorder
	f      *fixture
}

func newBudgetCase(t *testing.T, gateOn bool, allowed int32, policy appsv1beta1.CloneSetPodUpdateStrategyType,
	mutatePods func(pods []*corev1.Pod)) *budgetCase {
	t.Helper()
	r := newRollout(t, 2, func(cs *appsv1beta1.CloneSet) {
		cs.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = policy
		cs.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	})
	for _, pod := range r.pods {
		for k, v := range pubutil.RelatedBudgetAnnotations("pub") {
			pod.Annotations[k] = v
		}
	}
	if mutatePods != nil {
		mutatePods(r.pods)
	}
	pub := &policyv1beta1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "pub", UID: "uid-pub"},
		Spec: policyv1beta1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cs"}},
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		},
		Status: policyv1beta1.PodUnavailableBudgetStatus{
			TotalReplicas: 2, DesiredAvailable: 1, CurrentAvailable: 1 + allowed, UnavailableAllowed: allowed,
		},
	}
	server := budgettest.NewServer(pub)
	budgets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := budgets.Add(server.Budget(testNamespace, "pub")); err != nil {
		t.Fatal(err)
	}
	events := record.NewFakeRecorder(100)
	check := podwebhook.NewInProcess(podwebhook.Dependencies{
		Budgets:  policylisters.NewPodUnavailableBudgetLister(budgets),
		Client:   server,
		Cache:    budget.NewCache(),
		Recorder: events,
		Clock:    clocktesting.NewFakePassiveClock(t0),
	})
	f := newFixture(t, fixtureOption{
		gates: map[featuregate.Feature]bool{features.PodUnavailableBudgetUpdateGate: gateOn},
		opts:  []options.Option{WithPodUnavailableBudget(check)},
	}, r.objects()...)
	return &budgetCase{r: r, server: server, events: events, f: f}
}

// updatedInPlace returns the names of the pods updated in place, sorted.
func (f *fixture) updatedInPlace() []string {
	var names []string
	for _, a := range f.actions("update", "pods") {
		names = append(names, a.(clienttesting.UpdateAction).GetObject().(*corev1.Pod).Name)
	}
	slices.Sort(names)
	return names
}

// drain returns the events recorded so far.
func drain(recorder *record.FakeRecorder) []string {
	var events []string
	for {
		select {
		case e := <-recorder.Events:
			events = append(events, e)
		default:
			return events
		}
	}
}

func TestBudgetAdmitsOnePodUpdateAndRefusesTheNext(t *testing.T) {
	c := newBudgetCase(t, true, 1, appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType, nil)
	c.f.sync(c.r.cs)

	// The two pods tie in the update order, so either may go first; only one may go.
	updated := c.f.updatedInPlace()
	if len(updated) != 1 {
		t.Fatalf("updated %v in place, want one pod: the budget allows one", updated)
	}
	first, second := updated[0], c.r.pods[0].Name
	if second == first {
		second = c.r.pods[1].Name
	}
	if patches := c.f.podPatches()[second]; len(patches) != 0 {
		t.Errorf("wrote pod %s, which the budget refused: %v", second, patches)
	}
	pub := c.server.Budget(testNamespace, "pub")
	if _, ok := pub.Status.UnavailablePods[first]; !ok || pub.Status.UnavailableAllowed != 0 || len(pub.Status.DisruptedPods) != 0 {
		t.Errorf("budget status = %+v, want %s in unavailablePods and nothing allowed", pub.Status, first)
	}
	if got := pub.Status.UnavailablePods[first]; !got.Time.Equal(t0) {
		t.Errorf("unavailablePods[%s] = %v, want the clock's %v", first, got, t0)
	}
	if delayed := c.f.queue.Delayed(); !slices.Contains(delayed, queuetest.Delayed{Key: key(c.r.cs), Delay: time.Second}) {
		t.Errorf("queued %v, want the CloneSet again after 1s", delayed)
	}
	events := drain(c.events)
	if len(events) != 1 || !strings.HasPrefix(events[0], "Warning "+podwebhook.EventPubPreventPodDeletion+" ") ||
		!strings.Contains(events[0], "pub unavailable allowed is negative") {
		t.Errorf("budget events = %q, want one PubPreventPodDeletion for the refused pod", events)
	}
	status := c.f.lastStatus()
	if status == nil || len(status.Conditions) != 0 {
		t.Errorf("status = %+v, want no FailedUpdate: a refusal is a wait, not a failure", status)
	}
}

func TestBudgetRefusalStopsTheRound(t *testing.T) {
	c := newBudgetCase(t, true, 0, appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType, nil)
	c.f.sync(c.r.cs)
	if updated := c.f.updatedInPlace(); len(updated) != 0 {
		t.Errorf("updated %v in place, want none: the budget allows nothing", updated)
	}
	if len(c.f.podStatusUpdates()) != 0 || len(c.f.podPatches()) != 0 {
		t.Errorf("wrote pods the budget refused: status %v, patches %v", c.f.podStatusUpdates(), c.f.podPatches())
	}
	if writes, _, _ := c.server.Counts(); writes != 0 {
		t.Errorf("%d budget status writes, want none", writes)
	}
	// The first refusal ends the step: the second pod is not asked about.
	if events := drain(c.events); len(events) != 1 {
		t.Errorf("budget events = %q, want one refusal", events)
	}
	if delayed := c.f.queue.Delayed(); !slices.Contains(delayed, queuetest.Delayed{Key: key(c.r.cs), Delay: time.Second}) {
		t.Errorf("queued %v, want the CloneSet again after 1s", delayed)
	}
}

func TestBudgetRefusalStopsRecreatesToo(t *testing.T) {
	// The budget is asked before a pod is labelled for recreation too: the deletion that
	// follows is then already paid for.
	c := newBudgetCase(t, true, 1, appsv1beta1.RecreateCloneSetPodUpdateStrategyType, nil)
	c.f.sync(c.r.cs)
	// The two pods tie in the update order, so either may go first; only one may go.
	recreated := c.f.recreated()
	if len(recreated) != 1 {
		t.Fatalf("labelled %v for recreation, want one pod: the budget allows one", recreated)
	}
	pub := c.server.Budget(testNamespace, "pub")
	if _, ok := pub.Status.UnavailablePods[recreated[0]]; !ok || len(pub.Status.UnavailablePods) != 1 {
		t.Errorf("unavailablePods = %v, want %s alone", pub.Status.UnavailablePods, recreated[0])
	}
}

func TestUnavailablePodCostsNoBudget(t *testing.T) {
	c := newBudgetCase(t, true, 0, appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType, func(pods []*corev1.Pod) { notReady(pods[0]) })
	c.f.sync(c.r.cs)
	// The not-ready pod goes first and costs nothing; the ready one is refused.
	if updated := c.f.updatedInPlace(); !slices.Equal(updated, []string{c.r.pods[0].Name}) {
		t.Errorf("updated %v in place, want only the unready pod %s", updated, c.r.pods[0].Name)
	}
	if writes, _, _ := c.server.Counts(); writes != 0 {
		t.Errorf("%d budget status writes, want none: an unavailable pod costs nothing", writes)
	}
	pub := c.server.Budget(testNamespace, "pub")
	if len(pub.Status.UnavailablePods) != 0 {
		t.Errorf("unavailablePods = %v, want none", pub.Status.UnavailablePods)
	}
}

func TestBudgetNotAskedWithoutGate(t *testing.T) {
	c := newBudgetCase(t, false, 0, appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType, nil)
	c.f.sync(c.r.cs)
	if updated := c.f.updatedInPlace(); len(updated) != 2 {
		t.Errorf("updated %v in place, want both pods: without PodUnavailableBudgetUpdateGate no budget is asked", updated)
	}
	if events := drain(c.events); len(events) != 0 {
		t.Errorf("budget events %q without the gate", events)
	}
}

// failingCheck cannot decide.
type failingCheck struct{ calls int }

func (c *failingCheck) Admit(context.Context, *corev1.Pod, policyv1beta1.PubOperation, string) (bool, string, error) {
	c.calls++
	return false, "", errors.New("budget cache unreadable")
}

func TestBudgetCheckErrorFailsTheUpdate(t *testing.T) {
	r := newRollout(t, 2, inPlace)
	check := &failingCheck{}
	f := newFixture(t, fixtureOption{
		gates: map[featuregate.Feature]bool{features.PodUnavailableBudgetUpdateGate: true},
		opts:  []options.Option{WithPodUnavailableBudget(check)},
	}, r.objects()...)
	err := f.c.syncCloneSet(f.ctx, key(r.cs))
	if err == nil || !strings.Contains(err.Error(), "budget cache unreadable") {
		t.Errorf("sync error = %v, want the check's error", err)
	}
	if check.calls != 1 || len(f.updatedInPlace()) != 0 {
		t.Errorf("%d checks, updated %v; want one check and no update", check.calls, f.updatedInPlace())
	}
	status := f.lastStatus()
	if status == nil || len(status.Conditions) != 1 || status.Conditions[0].Type != appsv1beta1.CloneSetConditionFailedUpdate {
		t.Errorf("status = %+v, want a FailedUpdate condition", status)
	}
}
