package podunavailablebudget

import (
	"fmt"
	"maps"
	"testing"
	"time"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// betaBudgets are the namespace's PodUnavailableBudgets read and written in v1beta1.
func (e *testEnv) betaBudgets() *framework.Objects[*policyv1beta1.PodUnavailableBudget] {
	return framework.NewObjects(e.Env, "PodUnavailableBudget", e.Namespace, e.Bosun.PolicyV1beta1().PodUnavailableBudgets(e.Namespace))
}

// readyPods creates n Running, Ready pods <name>-0, <name>-1, ... labelled app=<name>,
// controlled by owner when it is not nil, with extra labels on the pods extraLabels names
// by index, and returns their names. Unbound, each goes at once when deleted.
func (e *testEnv) readyPods(t *testing.T, name string, n int, owner *appsv1.ReplicaSet, extraLabels map[int]map[string]string) []string {
	t.Helper()
	var names []string
	for i := range n {
		pod := newPod(fmt.Sprintf("%s-%d", name, i), map[string]string{"app": name}, owner)
		maps.Copy(pod.Labels, extraLabels[i])
		e.Pods().Create(t, pod)
		e.SetPodRunning(t, pod.Name, true, time.Time{})
		names = append(names, pod.Name)
	}
	return names
}

// New in v1beta1: the pods a budget's spec.ignoredPodSelector matches may be evicted or
// deleted while the budget has nothing left, and cost it nothing; the others stay
// protected. Like pods annotated pub.kruise.io/no-protect they still count as available.
func TestIgnoredPodSelector(t *testing.T) {
	e := setup(t)
	e.startManager(t, managerOptions(""))

	owner := e.ReplicaSets().Create(t, newReplicaSet("web", 3, map[string]string{"app": "web"}))
	pods := e.readyPods(t, "web", 3, owner, map[int]map[string]string{2: {"force-deletable": "true"}})
	kept, protected, ignored := pods[0], pods[1], pods[2]
	e.betaBudgets().Create(t, &policyv1beta1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1beta1.PodUnavailableBudgetSpec{
			Selector:           &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			MaxUnavailable:     ptr.To(intstr.FromInt32(0)),
			IgnoredPodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"force-deletable": "true"}},
		},
	})
	e.waitForTagged(t, "web", pods...)
	e.waitForSettled(t, "web", counts{total: 3, desired: 3, current: 3, allowed: 0})
	rec := e.recordBudget(t, "web")

	expectBudgetDenial(t, "evicting pod "+kept+", which the budget does not ignore", e.evictPod(kept, false))
	framework.MustSucceed(t, "evicting pod "+ignored+", which the budget ignores, with no disruption allowed", e.evictPod(ignored, false))
	e.waitForSettled(t, "web", counts{total: 3, desired: 3, current: 2, allowed: 0})
	if v, ok := rec.first(disrupted(ignored)); ok {
		t.Errorf("the ignored pod %s was charged to the budget: %s", ignored, describeBudget(v.budget))
	}
	expectBudgetDenial(t, "deleting pod "+protected+", which the budget does not ignore", e.deletePod(protected))
	if pod := e.Pods().Get(t, kept); pod.DeletionTimestamp != nil {
		t.Errorf("pod %s is terminating although its eviction was denied", kept)
	}
}

// A budget written in v1alpha1 with only OpenKruise's annotations behaves as it always did:
// pub.kruise.io/protect-total-replicas: "3" gives pods without an owner an expected count
// (without it, nothing would be protected), and kruise.io/pub-protect-operations: "EVICT"
// protects evictions and lets deletes through. A v1beta1 budget that carries the same
// annotations without the fields, as OpenKruise's conversion, which copies nothing, leaves
// one, behaves alike.
func TestV1alpha1Annotations(t *testing.T) {
	e := setup(t)
	e.startManager(t, managerOptions(""))

	annotations := map[string]string{protectOperationsKey: "EVICT", protectTotalReplicasKey: "3"}
	for _, tc := range []struct {
		name, budget string
		create       func(t *testing.T, name string)
	}{
		{"v1alpha1", "alpha", func(t *testing.T, name string) {
			e.budgets().Create(t, newBudget(name, withSelector(map[string]string{"app": name}), maxUnavailableOne,
				withAnnotation(protectOperationsKey, annotations[protectOperationsKey]),
				withAnnotation(protectTotalReplicasKey, annotations[protectTotalReplicasKey])))
		}},
		{"v1beta1 carrying only the annotations", "beta", func(t *testing.T, name string) {
			created := e.betaBudgets().Create(t, &policyv1beta1.PodUnavailableBudget{
				ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: maps.Clone(annotations)},
				Spec: policyv1beta1.PodUnavailableBudgetSpec{
					Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
					MaxUnavailable: ptr.To(intstr.FromInt32(1)),
				},
			})
			if len(created.Spec.ProtectOperations) != 0 || created.Spec.ProtectTotalReplicas != nil || !maps.Equal(created.Annotations, annotations) {
				t.Fatalf("stored budget has protectOperations %v, protectTotalReplicas %v, annotations %v; want only the annotations",
					created.Spec.ProtectOperations, created.Spec.ProtectTotalReplicas, created.Annotations)
			}
		}},
	} {
		name := tc.budget
		t.Run(tc.name, func(t *testing.T) {
			pods := e.readyPods(t, name, 3, nil, nil)
			tc.create(t, name)
			e.waitForTagged(t, name, pods...)
			e.waitForSettled(t, name, counts{total: 3, desired: 2, current: 3, allowed: 1})

			framework.MustSucceed(t, "evicting pod "+pods[0]+" with one disruption allowed", e.evictPod(pods[0], false))
			e.waitForSettled(t, name, counts{total: 3, desired: 2, current: 2, allowed: 0})
			expectBudgetDenial(t, "evicting pod "+pods[1]+" with no disruption allowed", e.evictPod(pods[1], false))
			framework.MustSucceed(t, "deleting pod "+pods[1]+" under an EVICT-only budget", e.deletePod(pods[1]))
			e.waitForSettled(t, name, counts{total: 3, desired: 2, current: 1, allowed: 0})
		})
	}
}
