package podunavailablebudget

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// gcController is the --controllers name of the garbage collector.
const gcController = "garbagecollector"

// OpenKruise's "PodUnavailableBudget selector pods and delete deployment ignore": deleting a
// Deployment whose pods a budget covers with maxUnavailable 0 lets the garbage collector
// delete the pods, whichever way the deletion propagates. Once the Deployment is gone
// (background) or being deleted (foreground), its ReplicaSet's replicas no longer count, and
// the deletions of the ReplicaSet and of the pods wake the budget, which settles with
// nothing left: total, desired and current 0, no records. The periodic resync is off, so
// only those events can get the pods deleted and the budget settled; the settled version
// must come before the webhook's records of the pods' deletions expire, which would have
// woken the budget by the clock.
func TestDeleteDeploymentUnderBudget(t *testing.T) {
	e := setup(t)
	opts := managerOptions("", resyncFlag+"=0")
	opts.Controllers += "," + workloadControllers + "," + gcController
	e.startManager(t, opts)
	framework.StartPodReadierForTest(t, e.Ctx, e.Client, e.Namespace, 2, nil)

	propagations := []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground}
	names := map[metav1.DeletionPropagation]string{
		metav1.DeletePropagationBackground: "background",
		metav1.DeletePropagationForeground: "foreground",
	}
	for _, propagation := range propagations {
		name := names[propagation]
		e.budgets().Create(t, newBudget(name, withSelector(map[string]string{"app": name}), withMaxUnavailable(intstr.FromInt32(0))))
		e.Deployments().Create(t, newDeployment(name, 2))
	}
	recorders := map[string]*budgetRecorder{}
	for _, propagation := range propagations {
		name := names[propagation]
		e.waitForSettled(t, name, counts{total: 2, desired: 2, current: 2, allowed: 0})
		pods := e.WaitForPods(t, fmt.Sprintf("Deployment %s's 2 pods, Ready and tagged", name), func(pods []corev1.Pod) bool {
			return len(activeReadyTagged(pods, name)) == 2
		})
		// The budget protects them while the Deployment stands.
		victim := activeReadyTagged(pods, name)[0]
		expectBudgetDenial(t, "deleting pod "+victim+" of Deployment "+name, e.deletePod(victim))
		recorders[name] = e.recordBudget(t, name)
	}

	for _, propagation := range propagations {
		name := names[propagation]
		err := e.Client.AppsV1().Deployments(e.Namespace).Delete(e.Ctx, name, metav1.DeleteOptions{PropagationPolicy: &propagation})
		if err != nil {
			t.Fatalf("deleting Deployment %s with %s propagation: %v", name, propagation, err)
		}
	}

	for _, propagation := range propagations {
		name := names[propagation]
		e.WaitForPods(t, fmt.Sprintf("the pods of Deployment %s (%s propagation) to be deleted", name, propagation), func(pods []corev1.Pod) bool {
			for _, pod := range pods {
				if pod.Labels["app"] == name {
					return false
				}
			}
			return true
		})
		rec := recorders[name]
		settled := rec.waitFor(t, e.Ctx, 0, "budget "+name+" settled with nothing left", settledAt(counts{}))
		// Every record of a deletion was dropped because its pod went, not because it
		// expired.
		late := map[string]bool{}
		for _, v := range rec.all() {
			for pod, at := range v.budget.Status.DisruptedPods {
				if expiry := at.Add(deletionTimeout - clockSlack); !settled.seen.Before(expiry) && !late[pod] {
					late[pod] = true
					t.Errorf("budget %s settled at %s, only when the record of pod %s made at %s expired: nothing woke it when the pod went",
						name, settled.seen.Format("15:04:05.000"), pod, at.Format("15:04:05"))
				}
			}
		}
		if len(late) > 0 {
			t.Logf("versions of budget %s:\n%s", name, rec.describe())
		}
	}
}

// activeReadyTagged returns the names of the active, Ready pods labelled app=<budget> that
// carry budget's related-pub annotations.
func activeReadyTagged(pods []corev1.Pod, budget string) []string {
	var names []string
	for _, pod := range pods {
		if pod.Labels["app"] == budget && isActiveReady(&pod) && taggedWith(&pod, budget) {
			names = append(names, pod.Name)
		}
	}
	return names
}
