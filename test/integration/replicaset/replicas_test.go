package replicaset

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// Scenario 2: apps/v1 selectors are immutable, and a rejected change costs no pods.
func TestRSSelectorImmutability(t *testing.T) {
	e := setup(t)
	e.startController(t, "")
	rs := e.replicaSets().Create(t, newReplicaSet("rs", 2))
	before := e.waitForReplicas(t, rs.Name, 2)

	_, err := e.replicaSets().TryUpdate(rs.Name, func(rs *appsv1.ReplicaSet) {
		// The template follows, so that only the selector's immutability can be the reason.
		rs.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "changed"}}
		rs.Spec.Template.Labels = map[string]string{"app": "changed"}
	})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.selector") {
		t.Fatalf("changing spec.selector: got error %v, want Invalid naming spec.selector", err)
	}

	e.WaitForNoWrites(t, idlePeriod)
	after := e.waitForReplicas(t, rs.Name, 2)
	if !slices.Equal(podNames(before), podNames(after)) {
		t.Errorf("the ReplicaSet's pods changed from %v to %v after a rejected selector update", podNames(before), podNames(after))
	}
	if got := e.replicaSets().Get(t, rs.Name).Spec.Selector.MatchLabels["app"]; got != "rs" {
		t.Errorf("selector app=%s, want the original app=rs", got)
	}
}

// Scenario 3: pods and status follow spec.replicas, and status follows every generation.
func TestSpecReplicasChange(t *testing.T) {
	e := setup(t)
	e.startController(t, "")
	rs := e.replicaSets().Create(t, newReplicaSet("rs", 2))
	e.waitForReplicas(t, rs.Name, 2)

	for _, n := range []int32{3, 0, 2} {
		e.scaleRS(t, rs.Name, n)
		e.waitForReplicas(t, rs.Name, n)
	}

	before := e.replicaSets().Get(t, rs.Name)
	updated := e.replicaSets().Update(t, rs.Name, func(rs *appsv1.ReplicaSet) {
		rs.Spec.Template.Annotations = map[string]string{"bosun.dev/test": "changed"}
	})
	if updated.Generation == before.Generation {
		t.Fatalf("a template change did not bump generation %d", before.Generation)
	}
	e.replicaSets().WaitFor(t, rs.Name, "status.observedGeneration to reach the new generation", func(rs *appsv1.ReplicaSet) bool {
		return rs.Status.ObservedGeneration == updated.Generation
	})
	e.waitForReplicas(t, rs.Name, 2)
}

// Scenario 4: terminating and failed pods are replaced and not counted.
func TestDeletingAndFailedPods(t *testing.T) {
	e := setup(t)
	e.startController(t, "")
	rs := e.replicaSets().Create(t, newReplicaSet("rs", 2))
	pods := e.waitForReplicas(t, rs.Name, 2)

	deleting, failed := pods[0].Name, pods[1].Name
	e.holdAndDelete(t, deleting)
	e.Pods().UpdateStatus(t, failed, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })

	replacements := e.waitForReplicas(t, rs.Name, 2)
	for _, p := range replacements {
		if p.Name == deleting || p.Name == failed {
			t.Errorf("pod %s is counted as active", p.Name)
		}
	}
	e.WaitForNoWrites(t, idlePeriod)
	all := e.GetPods(t, nil)
	if len(all) != 4 || countActive(all) != 2 {
		t.Errorf("%s; want 4 pods: the terminating one, the failed one and 2 replacements", framework.DescribePods(all))
	}
	if got := e.replicaSets().Get(t, rs.Name).Status.Replicas; got != 2 {
		t.Errorf("status.replicas = %d, want 2", got)
	}
}

// Scenario 6: ReplicaSets with identical selectors never take each other's pods.
func TestOverlappingRSs(t *testing.T) {
	e := setup(t)
	e.startController(t, "")
	shared := map[string]string{"app": "shared"}
	one := e.replicaSets().Create(t, replicaSetSelecting("rs-one", 1, shared))
	two := e.replicaSets().Create(t, replicaSetSelecting("rs-two", 2, shared))

	e.waitForReplicas(t, one.Name, 1)
	e.waitForReplicas(t, two.Name, 2)
	e.WaitForNoWrites(t, idlePeriod)

	pods := e.GetPods(t, nil)
	if len(pods) != 3 {
		t.Fatalf("%s; want 3", framework.DescribePods(pods))
	}
	owned := map[string]int{}
	for _, p := range pods {
		if ref := metav1.GetControllerOf(&p); ref != nil {
			owned[ref.Name]++
		}
	}
	if owned[one.Name] != 1 || owned[two.Name] != 2 {
		t.Errorf("pods per controller %v, want %s:1 %s:2", owned, one.Name, two.Name)
	}
	for _, rs := range []*appsv1.ReplicaSet{one, two} {
		got := e.replicaSets().Get(t, rs.Name)
		if got.Status.Replicas != *got.Spec.Replicas {
			t.Errorf("%s: status.replicas %d, want %d", rs.Name, got.Status.Replicas, *got.Spec.Replicas)
		}
	}
}

// Scenario 10: the scale subresource reads and writes spec.replicas.
func TestRSScaleSubresource(t *testing.T) {
	e := setup(t)
	e.startController(t, "")
	rs := e.replicaSets().Create(t, newReplicaSet("rs", 1))
	e.waitForReplicas(t, rs.Name, 1)

	rsClient := e.Client.AppsV1().ReplicaSets(e.Namespace)
	scale, err := rsClient.GetScale(e.Ctx, rs.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading /scale: %v", err)
	}
	if scale.Spec.Replicas != 1 || scale.Status.Replicas != 1 || scale.Status.Selector != "app=rs" {
		t.Errorf("/scale = spec %d, status %d, selector %q; want 1, 1, app=rs", scale.Spec.Replicas, scale.Status.Replicas, scale.Status.Selector)
	}

	scale.Spec.Replicas = 3
	if _, err := rsClient.UpdateScale(e.Ctx, rs.Name, scale, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing /scale: %v", err)
	}
	e.waitForReplicas(t, rs.Name, 3)
	if got := *e.replicaSets().Get(t, rs.Name).Spec.Replicas; got != 3 {
		t.Errorf("spec.replicas = %d after writing /scale, want 3", got)
	}
	scale, err = rsClient.GetScale(e.Ctx, rs.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading /scale: %v", err)
	}
	if scale.Spec.Replicas != 3 || scale.Status.Replicas != 3 {
		t.Errorf("/scale = spec %d, status %d; want 3, 3", scale.Spec.Replicas, scale.Status.Replicas)
	}
}

// Scenario 13: apps/v1 deletes in the background, so the garbage collector removes the
// pods once the ReplicaSet is gone.
func TestReplicaSetsAppsV1DefaultGCPolicy(t *testing.T) {
	e := setup(t)
	e.startController(t, "")
	framework.StartBosunControllerManager(t, e.CP, framework.ControllerManagerOptions{Controllers: "garbagecollector"})
	rs := newReplicaSet("rs", 2)
	rs.Finalizers = []string{holdFinalizer}
	rs = e.replicaSets().Create(t, rs)
	e.waitForReplicas(t, rs.Name, 2)

	rsClient := e.Client.AppsV1().ReplicaSets(e.Namespace)
	if err := rsClient.Delete(e.Ctx, rs.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the ReplicaSet: %v", err)
	}
	deleting := e.replicaSets().Get(t, rs.Name)
	if deleting.DeletionTimestamp == nil {
		t.Fatal("the ReplicaSet has no deletionTimestamp although the test finalizer holds it")
	}
	if !slices.Equal(deleting.Finalizers, []string{holdFinalizer}) {
		t.Errorf("finalizers after a default delete: %v, want only %s (no orphan finalizer)", deleting.Finalizers, holdFinalizer)
	}

	e.replicaSets().Update(t, rs.Name, func(rs *appsv1.ReplicaSet) { rs.Finalizers = nil })
	err := framework.WaitFor(e.Ctx, waitTimeout, "the ReplicaSet to disappear", func(ctx context.Context) (bool, error) {
		_, err := rsClient.Get(ctx, rs.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e.WaitForPods(t, "the garbage collector to delete the pods", func(pods []corev1.Pod) bool { return len(pods) == 0 })
}
