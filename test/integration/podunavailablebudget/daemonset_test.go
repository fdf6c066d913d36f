package podunavailablebudget

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// advancedDaemonSetController is the --controllers name of bosun's Advanced DaemonSet
// controller, which makes real DaemonSet pods and writes status.desiredNumberScheduled.
const advancedDaemonSetController = "advanced-daemonset-controller"

// daemonSetManagerOptions runs the budget's controller and the Advanced DaemonSet
// controller, with their webhooks.
func daemonSetManagerOptions(featureGates string) framework.ControllerManagerOptions {
	opts := managerOptions(featureGates)
	opts.Controllers += "," + advancedDaemonSetController
	return opts
}

// Selector-mode pods of an Advanced DaemonSet have no replica count OpenKruise can read, so
// their budget protects nothing unless pub.kruise.io/protect-total-replicas gives one: with
// it set to 3 and maxUnavailable 1, desired is 2 and deletes are budgeted; without it
// desired is 0 and deletes pass.
func TestTotalReplicasOverride(t *testing.T) {
	e := setup(t)
	e.startManager(t, daemonSetManagerOptions(""))
	nodes := e.createNodes(t, 3)
	pods := e.runDaemonSet(t, "agent", nodes)

	e.budgets().Create(t, newBudget("agent", withSelector(map[string]string{"app": "agent"}), maxUnavailableOne,
		withAnnotation(protectTotalReplicasKey, "3")))
	e.waitForTagged(t, "agent", pods...)
	e.waitForSettled(t, "agent", counts{total: 3, desired: 2, current: 3, allowed: 1})

	framework.MustSucceed(t, "deleting daemon pod "+pods[0], e.deletePod(pods[0]))
	// The DaemonSet replaces it at once, but nothing marks the replacement Ready.
	expectBudgetDenial(t, "deleting daemon pod "+pods[1], e.deletePod(pods[1]))

	e.budgets().Update(t, "agent", func(b *pub) { delete(b.Annotations, protectTotalReplicasKey) })
	e.budgets().WaitFor(t, "agent", "desiredAvailable 0 without protect-total-replicas", func(b *pub) bool {
		return b.Status.DesiredAvailable == 0 && len(b.Status.DisruptedPods) == 0
	})
	framework.MustSucceed(t, "deleting daemon pod "+pods[1]+" without protect-total-replicas", e.deletePod(pods[1]))
}

// Beyond OpenKruise, with PodUnavailableBudgetDaemonSetReplicas on: an Advanced DaemonSet's
// pods are expected as many times as the DaemonSet has nodes to run on
// (status.desiredNumberScheduled), both for a selector budget and for a targetRef budget,
// without protect-total-replicas.
func TestDaemonSetReplicas(t *testing.T) {
	e := setup(t)
	e.startManager(t, daemonSetManagerOptions(daemonSetReplicasGate+"=true"))
	nodes := e.createNodes(t, 3)
	bySelector := e.runDaemonSet(t, "agent-a", nodes)
	byTarget := e.runDaemonSet(t, "agent-b", nodes)

	e.budgets().Create(t, newBudget("agent-a", withSelector(map[string]string{"app": "agent-a"}), maxUnavailableOne))
	e.budgets().Create(t, newBudget("agent-b", withTarget("apps.kruise.io/v1alpha1", "DaemonSet", "agent-b"), maxUnavailableOne))
	e.waitForTagged(t, "agent-a", bySelector...)
	e.waitForTagged(t, "agent-b", byTarget...)
	e.waitForSettled(t, "agent-a", counts{total: 3, desired: 2, current: 3, allowed: 1})
	e.waitForSettled(t, "agent-b", counts{total: 3, desired: 2, current: 3, allowed: 1})

	for _, pods := range [][]string{bySelector, byTarget} {
		framework.MustSucceed(t, "deleting daemon pod "+pods[0], e.deletePod(pods[0]))
		expectBudgetDenial(t, "deleting daemon pod "+pods[1], e.deletePod(pods[1]))
	}
}

// createNodes creates n Ready nodes for the test's DaemonSets and returns their names.
func (e *testEnv) createNodes(t *testing.T, n int) []string {
	t.Helper()
	var names []string
	for i := range n {
		names = append(names, e.createNode(t, fmt.Sprintf("node-%d", i), nil))
	}
	return names
}

// runDaemonSet creates an Advanced DaemonSet of pods labelled app=<name> on the test's
// nodes, waits until it runs one pod on each of nodes and has counted them in
// status.desiredNumberScheduled, marks those pods Running and Ready, and returns their
// names sorted. Pods it makes later are left not Ready.
func (e *testEnv) runDaemonSet(t *testing.T, name string, nodes []string) []string {
	t.Helper()
	labels := map[string]string{"app": name}
	ds := &appsv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(labels)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec: corev1.PodSpec{
					// Only the test's nodes: Nodes are cluster-wide.
					NodeSelector: map[string]string{framework.OwnerNamespaceLabel: e.Namespace},
					Containers:   []corev1.Container{{Name: "main", Image: image1}},
				},
			},
		},
	}
	created, err := e.Bosun.AppsV1alpha1().DaemonSets(e.Namespace).Create(e.Ctx, ds, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating DaemonSet %s: %v", name, err)
	}
	want := int32(len(nodes))
	err = framework.WaitFor(e.Ctx, waitTimeout, fmt.Sprintf("DaemonSet %s to schedule %d pods", name, want), func(ctx context.Context) (bool, error) {
		ds, err := e.Bosun.AppsV1alpha1().DaemonSets(e.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return ds.Status.DesiredNumberScheduled == want && ds.Status.CurrentNumberScheduled == want, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pods := e.WaitForPods(t, fmt.Sprintf("one pod of DaemonSet %s per node", name), func(pods []corev1.Pod) bool {
		return len(controlledPods(pods, created.UID)) == len(nodes)
	})
	names := controlledPods(pods, created.UID)
	for _, pod := range names {
		e.SetPodRunning(t, pod, true, time.Time{})
	}
	return names
}

// controlledPods returns the names of the active pods controlled by uid, sorted.
func controlledPods(pods []corev1.Pod, uid types.UID) []string {
	var names []string
	for _, pod := range pods {
		if ref := metav1.GetControllerOf(&pod); ref != nil && ref.UID == uid && pod.DeletionTimestamp == nil {
			names = append(names, pod.Name)
		}
	}
	slices.Sort(names)
	return names
}
