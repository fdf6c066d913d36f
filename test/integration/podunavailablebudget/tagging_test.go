package podunavailablebudget

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// A pod created under a budget — by selector, or through its owner for a targetRef — comes
// back from the API server already carrying both related-pub annotations; a pod no budget
// covers carries none.
func TestTaggingAtCreate(t *testing.T) {
	e := setup(t)
	e.startManager(t, managerOptions(""))

	e.budgets().Create(t, newBudget("web-budget", withSelector(map[string]string{"app": "web"}), withMaxUnavailable(intstr.FromInt32(1))))
	db := e.ReplicaSets().Create(t, newReplicaSet("db", 2, map[string]string{"app": "db"}))
	e.budgets().Create(t, newBudget("db-budget", withTarget("apps/v1", "ReplicaSet", "db"), withMaxUnavailable(intstr.FromInt32(1))))

	// The webhook learns of budgets through an informer; wait until a dry-run create, which
	// goes through the same webhook, is tagged, so that the real creates below are not
	// racing it.
	e.waitForTaggingAtCreate(t, newPod("probe-web", map[string]string{"app": "web"}, nil), "web-budget")
	e.waitForTaggingAtCreate(t, newPod("probe-db", map[string]string{"app": "db"}, db), "db-budget")

	web := e.Pods().Create(t, newPod("web-0", map[string]string{"app": "web", "tier": "fe"}, nil))
	if !taggedWith(web, "web-budget") {
		t.Errorf("pod web-0 labelled app=web was created with annotations %v, want %s and %s = web-budget",
			web.Annotations, relatedPubAnnotation, relatedPubAnnotationNew)
	}
	dbPod := e.Pods().Create(t, newPod("db-0", map[string]string{"app": "db"}, db))
	if !taggedWith(dbPod, "db-budget") {
		t.Errorf("pod db-0 of ReplicaSet db was created with annotations %v, want both related-pub annotations = db-budget", dbPod.Annotations)
	}
	other := e.Pods().Create(t, newPod("other-0", map[string]string{"app": "other"}, nil))
	if !untagged(other) {
		t.Errorf("pod other-0, which no budget covers, was created with annotations %v", other.Annotations)
	}
	// What the API server stored, not only what it answered.
	if live := e.Pods().Get(t, "web-0"); !taggedWith(live, "web-budget") {
		t.Errorf("stored pod web-0 has annotations %v", live.Annotations)
	}
}

// waitForTaggingAtCreate waits until a dry-run create of pod comes back tagged with budget.
func (e *testEnv) waitForTaggingAtCreate(t *testing.T, pod *corev1.Pod, budget string) {
	t.Helper()
	var last *corev1.Pod
	err := framework.WaitFor(e.Ctx, waitTimeout, fmt.Sprintf("a pod created like %s to be tagged with %s", pod.Name, budget), func(ctx context.Context) (bool, error) {
		created, err := e.Client.CoreV1().Pods(e.Namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, fmt.Errorf("dry-run create of pod %s: %w", pod.Name, err)
		}
		last = created
		return taggedWith(created, budget), nil
	})
	if err != nil {
		annotations := map[string]string{}
		if last != nil {
			annotations = last.Annotations
		}
		t.Fatalf("%v; last annotations: %v", err, annotations)
	}
}

// Pods created before their budget are tagged by the controller once the budget exists.
func TestTaggingExistingPods(t *testing.T) {
	e := setup(t)
	e.startManager(t, managerOptions(""))

	owner := e.ReplicaSets().Create(t, newReplicaSet("web", 3, map[string]string{"app": "web"}))
	var names []string
	for i := range 3 {
		pod := e.Pods().Create(t, newPod(fmt.Sprintf("web-%d", i), map[string]string{"app": "web"}, owner))
		if !untagged(pod) {
			t.Fatalf("pod %s was tagged before any budget existed: %v", pod.Name, pod.Annotations)
		}
		names = append(names, pod.Name)
	}
	e.Pods().Create(t, newPod("other-0", map[string]string{"app": "other"}, nil))

	e.budgets().Create(t, newBudget("web-budget", withSelector(map[string]string{"app": "web"}), withMaxUnavailable(intstr.FromInt32(1))))
	e.waitForTagged(t, "web-budget", names...)
	// The controller tags in one pass what it covers; by now it has passed over other-0.
	if other := e.Pods().Get(t, "other-0"); !untagged(other) {
		t.Errorf("pod other-0, which the budget does not cover, was tagged: %v", other.Annotations)
	}
}

// Beyond OpenKruise (which never looks at a budget again once it matched no pod): a budget
// created before any of its pods covers the pods created later, by selector or by
// targetRef, although nothing tags them at creation and nothing touches the budget. No
// webhook runs here, as when the mutating webhook (failure policy Ignore) is unreachable,
// and the periodic resync is off, so only the controller's reaction to the pods' creation
// can tag and count them.
func TestBudgetCreatedBeforeItsPods(t *testing.T) {
	e := setup(t)
	if _, err := e.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(e.Ctx, mutatingConfiguration, metav1.GetOptions{}); err == nil {
		t.Fatalf("webhook configuration %s exists: an earlier test did not clean up", mutatingConfiguration)
	}
	if _, err := e.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(e.Ctx, validatingConfiguration, metav1.GetOptions{}); err == nil {
		t.Fatalf("webhook configuration %s exists: an earlier test did not clean up", validatingConfiguration)
	}
	e.startManager(t, framework.ControllerManagerOptions{Controllers: pubController, ExtraArgs: []string{resyncFlag + "=0"}})

	web := e.budgets().Create(t, newBudget("web", withSelector(map[string]string{"app": "web"}), withMaxUnavailable(intstr.FromInt32(1))))
	db := e.budgets().Create(t, newBudget("db", withTarget("apps/v1", "ReplicaSet", "db"), withMaxUnavailable(intstr.FromInt32(1))))
	e.waitForSettled(t, "web", counts{})
	e.waitForSettled(t, "db", counts{})
	e.waitForEvent(t, "PodUnavailableBudget", "web", corev1.EventTypeNormal, eventNoPods)

	webOwner := e.ReplicaSets().Create(t, newReplicaSet("web", 3, map[string]string{"app": "web"}))
	dbOwner := e.ReplicaSets().Create(t, newReplicaSet("db", 2, map[string]string{"app": "db"}))
	var webPods, dbPods []string
	for i := range 3 {
		pod := e.Pods().Create(t, newPod(fmt.Sprintf("web-%d", i), map[string]string{"app": "web"}, webOwner))
		if !untagged(pod) {
			t.Fatalf("pod %s was tagged at creation (%v): a webhook ran", pod.Name, pod.Annotations)
		}
		e.SetPodRunning(t, pod.Name, true, time.Time{})
		webPods = append(webPods, pod.Name)
	}
	for i := range 2 {
		pod := e.Pods().Create(t, newPod(fmt.Sprintf("db-%d", i), map[string]string{"app": "db"}, dbOwner))
		e.SetPodRunning(t, pod.Name, true, time.Time{})
		dbPods = append(dbPods, pod.Name)
	}

	e.waitForTagged(t, "web", webPods...)
	e.waitForTagged(t, "db", dbPods...)
	e.waitForSettled(t, "web", counts{total: 3, desired: 2, current: 3, allowed: 1})
	e.waitForSettled(t, "db", counts{total: 2, desired: 1, current: 2, allowed: 1})
	for _, before := range []*pub{web, db} {
		if after := e.budgets().Get(t, before.Name); after.Generation != before.Generation {
			t.Errorf("budget %s went from generation %d to %d: the test changed nothing", before.Name, before.Generation, after.Generation)
		}
	}
}
