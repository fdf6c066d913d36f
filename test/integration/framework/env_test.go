package framework_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// The end of a test removes what it made, finalizers and all, in each of its namespaces,
// deletes its Nodes and runs its own cleanup steps; and its context ends.
func TestEnvRemovesWhatTheTestMade(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	client := cp.Clientset(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var e *framework.Env
	var other, node string
	stepRan := false
	t.Run("test", func(t *testing.T) {
		e = framework.NewTestEnv(t, cp, framework.EnvOptions{Remove: []string{"pods", "configmaps"}})
		held := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"bosun.dev/test-hold"}},
			Spec:       corev1.PodSpec{NodeName: "nowhere", Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c:1"}}},
		}
		e.Pods().Create(t, held)
		e.Pods().Delete(t, "held") // bound, so it stays terminating; the finalizer holds it anyway
		e.ConfigMaps().Create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}})
		other = e.NewNamespace(t)
		if _, err := client.CoreV1().ConfigMaps(other).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		node = e.CreateNode(t, e.NewNode("a", nil, time.Time{})).Name
		e.OnCleanup(func(context.Context) error { stepRan = true; return nil })
	})

	if e.Ctx.Err() == nil {
		t.Error("the Env's context is still live after its test ended")
	}
	for _, ns := range []string{e.Namespace, other} {
		if cms, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil || len(cms.Items) != 0 {
			t.Errorf("ConfigMaps left in %s: %v (%v)", ns, cms, err)
		}
	}
	if _, err := client.CoreV1().Pods(e.Namespace).Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the held pod: %v, want it removed", err)
	}
	if _, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Node %s: %v, want it deleted", node, err)
	}
	if !stepRan {
		t.Error("the test's own cleanup step did not run")
	}
}

// CreateNode writes what a create ignores or admission changes: the taints are exactly the
// Node's (admission adds node.kubernetes.io/not-ready) and its Ready condition is stored.
func TestCreateNodeStoresTaintsAndStatusAsGiven(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	e := framework.NewTestEnv(t, cp, framework.EnvOptions{Timeout: time.Minute})
	since := time.Now().Add(-time.Hour).Truncate(time.Second)
	node := e.NewNode("tainted", map[string]string{"zone": "a"}, since)
	node.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	e.CreateNode(t, node)

	got := e.Nodes().Get(t, e.NodeName("tainted"))
	if len(got.Spec.Taints) != 1 || got.Spec.Taints[0].Key != "dedicated" {
		t.Errorf("taints %+v, want only dedicated", got.Spec.Taints)
	}
	if got.Labels["zone"] != "a" || got.Labels[framework.OwnerNamespaceLabel] != e.Namespace {
		t.Errorf("labels %v, want zone=a and %s=%s", got.Labels, framework.OwnerNamespaceLabel, e.Namespace)
	}
	if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Status != corev1.ConditionTrue ||
		!got.Status.Conditions[0].LastTransitionTime.Time.Equal(since) {
		t.Errorf("conditions %+v, want Ready since %v", got.Status.Conditions, since)
	}

	bare := e.CreateNode(t, e.NewNode("bare", nil, time.Time{}))
	if len(bare.Spec.Taints) != 0 || len(bare.Status.Conditions) != 0 {
		t.Errorf("a Node created without taints or conditions has taints %+v, conditions %+v", bare.Spec.Taints, bare.Status.Conditions)
	}
}

// WaitForNoWrites returns once the namespace has seen no write for the period, not before.
func TestWaitForNoWritesWaitsOutThePeriod(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	e := framework.NewTestEnv(t, cp, framework.EnvOptions{Timeout: time.Minute, Audit: true})
	e.ConfigMaps().Create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}})
	written := time.Now()
	const period = 700 * time.Millisecond
	e.WaitForNoWrites(t, period)
	if quiet := time.Since(written); quiet < period {
		t.Errorf("returned %v after the last write, want at least %v", quiet, period)
	}
	writes, err := e.AuditEvents(func(ev *auditv1.Event) bool {
		return framework.IsWriteVerb(ev.Verb) && ev.ObjectRef != nil && ev.ObjectRef.Namespace == e.Namespace && ev.ObjectRef.Resource == "configmaps"
	})
	if err != nil || len(writes) != 1 {
		t.Errorf("audited ConfigMap writes: %d (%v), want the one create", len(writes), err)
	}
}
