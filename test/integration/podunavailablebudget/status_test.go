package podunavailablebudget

import (
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// A budget over a Deployment's 4 Ready pods reports the Deployment's replicas as its total
// and derives what must stay available from its limit, percentages rounded up.
func TestStatus(t *testing.T) {
	e := setup(t)
	opts := managerOptions("")
	opts.Controllers += "," + workloadControllers
	e.startManager(t, opts)
	framework.StartPodReadierForTest(t, e.Ctx, e.Client, e.Namespace, 2, nil)

	e.Deployments().Create(t, newDeployment("web", 4))
	e.budgets().Create(t, newBudget("web", withTarget("apps/v1", "Deployment", "web"), withMaxUnavailable(intstr.FromString("25%"))))
	e.waitForSettled(t, "web", counts{total: 4, desired: 3, current: 4, allowed: 1})

	e.budgets().Update(t, "web", func(b *pub) {
		b.Spec.MaxUnavailable = nil
		b.Spec.MinAvailable = ptr.To(intstr.FromString("50%"))
	})
	e.waitForSettled(t, "web", counts{total: 4, desired: 2, current: 4, allowed: 2})
}

// When the Deployment a budget targets is scaled from 10 to 5, the budget's total and
// desired follow from the Deployment alone: the ReplicaSet and Deployment controllers are
// stopped first, so no pod changes, and the periodic resync is off.
func TestScaleDownFollow(t *testing.T) {
	e := setup(t)
	workloads := framework.StartBosunControllerManager(t, e.CP, framework.ControllerManagerOptions{Controllers: workloadControllers})
	e.startManager(t, managerOptions("", resyncFlag+"=0"))
	framework.StartPodReadierForTest(t, e.Ctx, e.Client, e.Namespace, 2, nil)

	e.Deployments().Create(t, newDeployment("web", 10))
	e.budgets().Create(t, newBudget("web", withTarget("apps/v1", "Deployment", "web"), withMaxUnavailable(intstr.FromString("20%"))))
	e.waitForSettled(t, "web", counts{total: 10, desired: 8, current: 10, allowed: 2})

	workloads.Stop(framework.DefaultStopGracePeriod)
	before := podVersions(t, e)
	if len(before) != 10 {
		t.Fatalf("%d pods before the scale-down, want 10", len(before))
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := e.Client.AppsV1().Deployments(e.Namespace).Get(e.Ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Replicas = ptr.To[int32](5)
		_, err = e.Client.AppsV1().Deployments(e.Namespace).Update(e.Ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("scaling Deployment web to 5: %v", err)
	}
	// The 10 pods are still there and Ready, so 6 may go until the controllers catch up.
	e.waitForSettled(t, "web", counts{total: 5, desired: 4, current: 10, allowed: 6})
	if after := podVersions(t, e); !maps.Equal(before, after) {
		t.Errorf("pods changed during the scale-down, so the budget may have followed them: before %v, after %v", before, after)
	}
}

// podVersions returns the resourceVersion of every pod of the namespace by name.
func podVersions(t *testing.T, e *testEnv) map[string]string {
	t.Helper()
	list, err := e.Client.CoreV1().Pods(e.Namespace).List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, pod := range list.Items {
		out[pod.Name] = pod.ResourceVersion
	}
	return out
}
