package pod

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/pubutil"
	"github.com/bosun-dev/bosun/pkg/features"
)

var updateOn = map[featuregate.Feature]bool{features.PodUnavailableBudgetUpdateGate: true}

// Delete budget: the first delete is paid for and recorded, the second refused with a 403,
// an event on its pod and a counted denial.
func TestDeleteSpendsTheBudget(t *testing.T) {
	a, b := readyPod("a"), readyPod("b")
	f := newFixture(t, fixtureOptions{}, a, b, newBudget("pub", 1, 2, 3))
	before := denials(t, "ReplicaSet_ns_rs", "delete-user")

	expectAllowed(t, f.validate(deleteRequest(t, a, "delete-user")))
	pub := f.budget("pub")
	if pub.Status.UnavailableAllowed != 0 {
		t.Errorf("allowed after the first delete = %d, want 0", pub.Status.UnavailableAllowed)
	}
	if at, ok := pub.Status.DisruptedPods["a"]; !ok || !at.Time.Equal(now) {
		t.Errorf("disruptedPods = %v, want a at %v", pub.Status.DisruptedPods, now)
	}
	if len(pub.Status.UnavailablePods) != 0 {
		t.Errorf("unavailablePods = %v, want none", pub.Status.UnavailablePods)
	}
	if events := f.events(); len(events) != 0 {
		t.Errorf("events after an admitted delete: %v", events)
	}

	expectDenied(t, f.validate(deleteRequest(t, b, "delete-user")), 403, metav1.StatusReasonForbidden, noBudgetMessage("pub"))
	if resp := f.validate(deleteRequest(t, b, "delete-user")); resp.Result.Message != noBudgetMessage("pub") {
		t.Errorf("message %q, want exactly %q", resp.Result.Message, noBudgetMessage("pub"))
	}
	if _, ok := f.budget("pub").Status.DisruptedPods["b"]; ok {
		t.Errorf("the refused pod was recorded")
	}
	events := f.events()
	wantEvent := "Warning PubPreventPodDeletion PodUnavailableBudget pub prevents the deletion of the pod: pub unavailable allowed is negative @ns/b"
	if len(events) != 2 || events[0] != wantEvent {
		t.Errorf("events = %q, want twice %q", events, wantEvent)
	}
	if got := denials(t, "ReplicaSet_ns_rs", "delete-user") - before; got != 2 {
		t.Errorf("pod_unavailable_budget{ReplicaSet_ns_rs, delete-user} rose by %v, want 2", got)
	}
}

// Eviction: the same through pods/eviction, refused with a 403 (not a PDB's 429).
func TestEvictionSpendsTheBudget(t *testing.T) {
	a, b := readyPod("a"), readyPod("b", withoutController)
	f := newFixture(t, fixtureOptions{}, a, b, newBudget("pub", 1, 2, 3))
	before := denials(t, "unknown_ns_b", "evict-user")

	expectAllowed(t, f.validate(evictionRequest(t, "a", "evict-user", false)))
	if _, ok := f.budget("pub").Status.DisruptedPods["a"]; !ok {
		t.Errorf("evicted pod not recorded in disruptedPods")
	}
	expectDenied(t, f.validate(evictionRequest(t, "b", "evict-user", false)), 403, metav1.StatusReasonForbidden, noBudgetMessage("pub"))
	if got := denials(t, "unknown_ns_b", "evict-user") - before; got != 1 {
		t.Errorf("pod_unavailable_budget{unknown_ns_b, evict-user} rose by %v, want 1", got)
	}
	if events := f.events(); len(events) != 1 || !strings.Contains(events[0], "prevents the eviction of the pod") || !strings.HasSuffix(events[0], "@ns/b") {
		t.Errorf("events = %q, want one eviction refusal on b", events)
	}
}

// A pod made Ready a moment ago can be evicted before the pod cache has it: it is read from
// the API server and charged like any other, so a slow informer cannot let it through.
func TestEvictionOfAPodNotYetCached(t *testing.T) {
	f := newFixture(t, fixtureOptions{live: []runtime.Object{readyPod("new")}}, newBudget("pub", 1, 2, 3))

	expectAllowed(t, f.validate(evictionRequest(t, "new", "evict-user", false)))
	if _, ok := f.budget("pub").Status.DisruptedPods["new"]; !ok {
		t.Errorf("evicted pod not recorded in disruptedPods")
	}
	if got := f.budget("pub").Status.UnavailableAllowed; got != 0 {
		t.Errorf("unavailableAllowed = %d, want 0", got)
	}
	// A pod neither the cache nor the API server has is left to the API server's 404.
	expectAllowed(t, f.validate(evictionRequest(t, "gone", "evict-user", false)))
}

// A budget asking eviction clients to retry answers refused evictions with a 429; deletes
// stay 403.
func TestRetryDeniedEvictions(t *testing.T) {
	a := readyPod("a")
	f := newFixture(t, fixtureOptions{}, a,
		newBudget("pub", 0, 3, 3, pubAnnotation(pubutil.RetryDeniedEvictionsAnnotation, "true")))
	expectDenied(t, f.validate(evictionRequest(t, "a", "u", false)), 429, metav1.StatusReasonTooManyRequests, noBudgetMessage("pub"))
	expectDenied(t, f.validate(deleteRequest(t, a, "u")), 403, metav1.StatusReasonForbidden, noBudgetMessage("pub"))

	g := newFixture(t, fixtureOptions{}, a,
		newBudget("pub", 0, 3, 3, pubAnnotation(pubutil.RetryDeniedEvictionsAnnotation, "false")))
	expectDenied(t, g.validate(evictionRequest(t, "a", "u", false)), 403, metav1.StatusReasonForbidden, noBudgetMessage("pub"))
}

// Dry runs are judged but spend nothing.
func TestDryRun(t *testing.T) {
	a := readyPod("a")
	f := newFixture(t, fixtureOptions{}, a, newBudget("pub", 1, 2, 3))
	before := f.budget("pub")

	expectAllowed(t, f.validate(dryRunDelete(t, a, "u")))
	onlyOptions := deleteRequest(t, a, "u")
	onlyOptions.Options = raw(t, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	expectAllowed(t, f.validate(onlyOptions))
	onlyFlag := deleteRequest(t, a, "u")
	onlyFlag.DryRun = ptr.To(true)
	expectAllowed(t, f.validate(onlyFlag))
	expectAllowed(t, f.validate(evictionRequest(t, "a", "u", true)))

	after := f.budget("pub")
	if after.ResourceVersion != before.ResourceVersion || after.Status.UnavailableAllowed != 1 || len(after.Status.DisruptedPods) != 0 {
		t.Errorf("dry runs changed the budget: %+v", after.Status)
	}

	g := newFixture(t, fixtureOptions{}, a, newBudget("pub", 0, 3, 3))
	expectDenied(t, g.validate(dryRunDelete(t, a, "u")), 403, metav1.StatusReasonForbidden, noBudgetMessage("pub"))
	expectDenied(t, g.validate(evictionRequest(t, "a", "u", true)), 403, metav1.StatusReasonForbidden, noBudgetMessage("pub"))
}

// Pods that cost nothing pass an exhausted budget: unavailable ones (not Ready, labelled
// unavailable, being deleted, state-inconsistent), exempt ones, those of a budget that is
// gone or protects nothing, and those already paid for.
func TestWhatPassesAnExhaustedBudget(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		pub  *policyv1beta1.PodUnavailableBudget
	}{
		{"not ready", readyPod("a", notReady), newBudget("pub", 0, 3, 3)},
		{"not running", readyPod("a", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }), newBudget("pub", 0, 3, 3)},
		{"unavailable label", readyPod("a", withLabel("unavailable-pod.kruise.io/drain", "true")), newBudget("pub", 0, 3, 3)},
		{"state-inconsistent", readyPod("a", func(p *corev1.Pod) {
			p.Spec.Containers[0].Image = "nginx@sha256:new"
			p.Status.ContainerStatuses[0].ImageID = "docker.io/library/nginx@sha256:old"
		}), newBudget("pub", 0, 3, 3)},
		{"no-protect", readyPod("a", withAnnotation(policyv1beta1.PodPubNoProtectionAnnotation, "true")), newBudget("pub", 0, 3, 3)},
		{"ignoredPodSelector", readyPod("a", withLabel("force-deletable", "true")),
			newBudget("pub", 0, 3, 3, ignoring(map[string]string{"force-deletable": "true"}))},
		{"untagged", readyPod("a", untagged), newBudget("pub", 0, 3, 3)},
		{"budget gone", readyPod("a"), newBudget("other", 0, 3, 3)},
		{"desired 0", readyPod("a"), newBudget("pub", 0, 0, 3)},
		{"operation not protected", readyPod("a"), newBudget("pub", 0, 3, 3, pubAnnotation(policyv1beta1.PubProtectOperationAnnotation, "EVICT"))},
		{"already recorded", readyPod("a"), newBudget("pub", 0, 3, 3, disrupted("a"))},
		{"only the old annotation, budget gone", readyPod("a", func(p *corev1.Pod) {
			p.Annotations = map[string]string{policyv1beta1.PodRelatedPubAnnotation: "gone"}
		}), newBudget("pub", 0, 3, 3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fixtureOptions{}, tt.pod, tt.pub)
			rv := f.budget(tt.pub.Name).ResourceVersion
			expectAllowed(t, f.validate(deleteRequest(t, tt.pod, "u")))
			if tt.name != "operation not protected" {
				expectAllowed(t, f.validate(evictionRequest(t, "a", "u", false)))
			}
			if got := f.budget(tt.pub.Name).ResourceVersion; got != rv {
				t.Errorf("the budget was written")
			}
			if events := f.events(); len(events) != 0 {
				t.Errorf("events: %v", events)
			}
		})
	}
}

// The newer related-pub annotation wins over the older one.
func TestNewerAnnotationNamesTheBudget(t *testing.T) {
	pod := readyPod("a", withAnnotation(policyv1beta1.PodRelatedPubAnnotation, "old"))
	f := newFixture(t, fixtureOptions{}, pod, newBudget("pub", 0, 3, 3), newBudget("old", 5, 3, 8))
	expectDenied(t, f.validate(deleteRequest(t, pod, "u")), 403, metav1.StatusReasonForbidden, noBudgetMessage("pub"))
}

// Operation filter: a budget protecting EVICT only lets a DELETE through but refuses an
// eviction.
func TestProtectedOperationsFilter(t *testing.T) {
	a := readyPod("a")
	f := newFixture(t, fixtureOptions{}, a,
		newBudget("pub", 0, 3, 3, pubAnnotation(policyv1beta1.PubProtectOperationAnnotation, "EVICT")))
	expectAllowed(t, f.validate(deleteRequest(t, a, "u")))
	expectDenied(t, f.validate(evictionRequest(t, "a", "u", false)), 403, metav1.StatusReasonForbidden, noBudgetMessage("pub"))
}

// spec.protectOperations decides over the annotation a v1alpha1 writer left; without the
// field the annotation decides (TestProtectedOperationsFilter).
func TestProtectedOperationsField(t *testing.T) {
	a := readyPod("a")
	f := newFixture(t, fixtureOptions{}, a,
		newBudget("pub", 0, 3, 3, protecting(policyv1beta1.PubEvictOperation), pubAnnotation(policyv1beta1.PubProtectOperationAnnotation, "DELETE")))
	expectAllowed(t, f.validate(deleteRequest(t, a, "u")))
	expectDenied(t, f.validate(evictionRequest(t, "a", "u", false)), 403, metav1.StatusReasonForbidden, noBudgetMessage("pub"))

	// Unknown words of the annotation are ignored, the known ones still protect.
	g := newFixture(t, fixtureOptions{}, a,
		newBudget("pub", 0, 3, 3, pubAnnotation(policyv1beta1.PubProtectOperationAnnotation, "DELETE, FOO")))
	expectDenied(t, g.validate(deleteRequest(t, a, "u")), 403, metav1.StatusReasonForbidden, noBudgetMessage("pub"))
	expectAllowed(t, g.validate(evictionRequest(t, "a", "u", false)))
}

// A budget's ignoredPodSelector lets the pods it matches go whatever the budget has left,
// for every operation, without spending it or recording them; the other pods stay
// protected.
func TestIgnoredPodSelector(t *testing.T) {
	ignored := readyPod("ignored", withLabel("force-deletable", "true"))
	kept := readyPod("kept", withLabel("force-deletable", "false"))
	pub := newBudget("pub", 0, 2, 2, ignoring(map[string]string{"force-deletable": "true"}),
		pubAnnotation(pubutil.ProtectNotReadyAnnotation, "true"))
	f := newFixture(t, fixtureOptions{gates: updateOn}, ignored, kept, pub)
	rv := f.budget("pub").ResourceVersion

	expectAllowed(t, f.validate(deleteRequest(t, ignored, "u")))
	expectAllowed(t, f.validate(evictionRequest(t, "ignored", "u", false)))
	changed := ignored.DeepCopy()
	changed.Spec.Containers[0].Image = "nginx:1.26"
	expectAllowed(t, f.validate(updateRequest(t, ignored, changed, "u")))
	if got := f.budget("pub"); got.ResourceVersion != rv || len(got.Status.DisruptedPods)+len(got.Status.UnavailablePods) != 0 {
		t.Errorf("an ignored pod was charged: %+v", got.Status)
	}
	if events := f.events(); len(events) != 0 {
		t.Errorf("events for ignored pods: %v", events)
	}

	expectDenied(t, f.validate(deleteRequest(t, kept, "u")), 403, metav1.StatusReasonForbidden, noBudgetMessage("pub"))
	expectDenied(t, f.validate(evictionRequest(t, "kept", "u", false)), 403, metav1.StatusReasonForbidden, noBudgetMessage("pub"))

	// An unavailable ignored pod passes even a budget that protects unavailable pods and
	// is not met.
	sick := readyPod("sick", notReady, withLabel("force-deletable", "true"))
	unmet := newFixture(t, fixtureOptions{}, sick, newBudget("pub", 0, 2, 1, ignoring(map[string]string{"force-deletable": "true"}),
		pubAnnotation(pubutil.ProtectNotReadyAnnotation, "true")))
	expectAllowed(t, unmet.validate(deleteRequest(t, sick, "u")))

	// With budget left, an ignored pod still costs nothing.
	spare := newFixture(t, fixtureOptions{}, ignored, newBudget("pub", 1, 2, 3, ignoring(map[string]string{"force-deletable": "true"})))
	expectAllowed(t, spare.validate(deleteRequest(t, ignored, "u")))
	if got := spare.budget("pub").Status; got.UnavailableAllowed != 1 || len(got.DisruptedPods) != 0 {
		t.Errorf("an ignored pod was charged: %+v", got)
	}
}

// The informer's copy may lag behind this process's writes: a pod the fresh copy already
// records is not charged again.
func TestRetriedRequestIsNotChargedTwice(t *testing.T) {
	a := readyPod("a")
	f := newFixture(t, fixtureOptions{}, a, newBudget("pub", 2, 1, 3))
	expectAllowed(t, f.validate(deleteRequest(t, a, "u")))
	expectAllowed(t, f.validate(deleteRequest(t, a, "u")))
	pub := f.budget("pub")
	if pub.Status.UnavailableAllowed != 1 || len(pub.Status.DisruptedPods) != 1 {
		t.Errorf("after a repeated delete: allowed %d, disrupted %v; want 1 and a only", pub.Status.UnavailableAllowed, pub.Status.DisruptedPods)
	}
	if writes, _, _ := f.server.Counts(); writes != 1 {
		t.Errorf("%d writes, want 1", writes)
	}
}

func TestTooManyRecordedPods(t *testing.T) {
	names := make([]string, pubutil.MaxRecordedPods+1)
	for i := range names {
		names[i] = fmt.Sprintf("old-%d", i)
	}
	a := readyPod("a")
	f := newFixture(t, fixtureOptions{}, a, newBudget("pub", 5, 1, 3, disrupted(names...)))
	expectDenied(t, f.validate(deleteRequest(t, a, "u")), 403, metav1.StatusReasonForbidden,
		`podunavailablebudget.policy.kruise.io "pub" is forbidden: DisruptedPods and UnavailablePods map too big`)

	// Exactly the limit still admits one more.
	g := newFixture(t, fixtureOptions{}, a, newBudget("pub", 5, 1, 3, disrupted(names[1:]...)))
	expectAllowed(t, g.validate(deleteRequest(t, a, "u")))
}

// A budget deleted after the cache saw it lets the pod go (the write finds it gone).
func TestBudgetDeletedMidRequest(t *testing.T) {
	a := readyPod("a")
	f := newFixture(t, fixtureOptions{}, a, newBudget("pub", 1, 2, 3))
	f.server.Delete(ns, "pub")
	expectAllowed(t, f.validate(deleteRequest(t, a, "u")))
	expectAllowed(t, f.validate(evictionRequest(t, "a", "u", false)))
}

// When every attempt conflicts, the request is refused naming the budget.
func TestConflictsExhausted(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the conflict backoff")
	}
	a := readyPod("a")
	f := newFixture(t, fixtureOptions{}, a, newBudget("pub", 1, 2, 3))
	f.server.InjectConflicts(100)
	before := denials(t, "ReplicaSet_ns_rs", "conflict-user")
	expectDenied(t, f.validate(deleteRequest(t, a, "conflict-user")), 403, metav1.StatusReasonForbidden, "ns/pub")
	resp := f.validate(evictionRequest(t, "a", "conflict-user", false))
	expectDenied(t, resp, 403, metav1.StatusReasonForbidden, "due to conflicts")
	if got := denials(t, "ReplicaSet_ns_rs", "conflict-user") - before; got != 0 {
		t.Errorf("conflicts counted as budget denials (%v)", got)
	}
}

// Concurrency: ten parallel deletes of distinct Ready pods against a budget of two: exactly
// two pass, and exactly those are recorded.
func TestConcurrentDeletes(t *testing.T) {
	const parallel = 10
	objects := []runtime.Object{newBudget("pub", 2, 8, 10)}
	var pods []*corev1.Pod
	for i := range parallel {
		pod := readyPod(fmt.Sprintf("p%d", i))
		pods = append(pods, pod)
		objects = append(objects, pod)
	}
	f := newFixture(t, fixtureOptions{}, objects...)
	answers := make([]*admissionv1.AdmissionResponse, parallel)
	var wg sync.WaitGroup
	for i, pod := range pods {
		wg.Go(func() { answers[i] = f.validate(deleteRequest(t, pod, "storm")) })
	}
	wg.Wait()

	admitted := map[string]bool{}
	for i, resp := range answers {
		if resp.Allowed {
			admitted[pods[i].Name] = true
			continue
		}
		if resp.Result.Code != 403 || resp.Result.Message != noBudgetMessage("pub") {
			t.Errorf("pod %s: denied with %d %q", pods[i].Name, resp.Result.Code, resp.Result.Message)
		}
	}
	pub := f.budget("pub")
	if len(admitted) != 2 || pub.Status.UnavailableAllowed != 0 || len(pub.Status.DisruptedPods) != 2 {
		t.Fatalf("admitted %v, allowed %d, disrupted %v; want 2 admitted and recorded", admitted, pub.Status.UnavailableAllowed, pub.Status.DisruptedPods)
	}
	for name := range pub.Status.DisruptedPods {
		if !admitted[name] {
			t.Errorf("disruptedPods holds %s, which was refused", name)
		}
	}
	if events := f.events(); len(events) != parallel-2 {
		t.Errorf("%d events, want %d", len(events), parallel-2)
	}
}

// UPDATE protection: a spec change is paid for and recorded in unavailablePods; a second
// is refused; label-only changes always pass.
func TestUpdateProtection(t *testing.T) {
	a, b := readyPod("a"), readyPod("b")
	f := newFixture(t, fixtureOptions{gates: updateOn}, a, b, newBudget("pub", 1, 2, 3))
	image := func(p *corev1.Pod) *corev1.Pod {
		changed := p.DeepCopy()
		changed.Spec.Containers[0].Image = "nginx:1.26"
		return changed
	}
	relabel := func(p *corev1.Pod) *corev1.Pod {
		changed := p.DeepCopy()
		changed.Labels["version"] = "2"
		return changed
	}

	expectAllowed(t, f.validate(updateRequest(t, a, image(a), "u")))
	pub := f.budget("pub")
	if at, ok := pub.Status.UnavailablePods["a"]; !ok || !at.Time.Equal(now) || len(pub.Status.DisruptedPods) != 0 {
		t.Errorf("unavailablePods %v, disruptedPods %v; want a in unavailablePods", pub.Status.UnavailablePods, pub.Status.DisruptedPods)
	}
	expectDenied(t, f.validate(updateRequest(t, b, image(b), "u")), 403, metav1.StatusReasonForbidden, noBudgetMessage("pub"))
	if events := f.events(); len(events) != 1 || !strings.Contains(events[0], "prevents the update of the pod") {
		t.Errorf("events = %q", events)
	}
	expectAllowed(t, f.validate(updateRequest(t, b, relabel(b), "u")))

	// Adding an unavailable label is a disruption even without a spec change.
	expectDenied(t, f.validate(updateRequest(t, b, func() *corev1.Pod {
		changed := b.DeepCopy()
		changed.Labels["unavailable-pod.kruise.io/maintenance"] = "true"
		return changed
	}(), "u")), 403, metav1.StatusReasonForbidden, noBudgetMessage("pub"))

	// Untagged pods, status and other subresources pass.
	c := readyPod("c", untagged)
	expectAllowed(t, f.validate(updateRequest(t, c, image(c), "u")))
	status := updateRequest(t, b, image(b), "u")
	status.SubResource = "status"
	expectAllowed(t, f.validate(status))
}

// An update that only resizes containers in place is RESIZE, protected by the budget
// separately from UPDATE and recorded in disruptedPods.
func TestResizeOperation(t *testing.T) {
	resize := func(p *corev1.Pod) *corev1.Pod {
		changed := p.DeepCopy()
		changed.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: mustQuantity("200m")}
		return changed
	}
	a := readyPod("a", func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: mustQuantity("100m")}
	})

	// UPDATE implies RESIZE.
	f := newFixture(t, fixtureOptions{gates: updateOn}, a, newBudget("pub", 1, 2, 3, pubAnnotation(policyv1beta1.PubProtectOperationAnnotation, "UPDATE")))
	expectAllowed(t, f.validate(updateRequest(t, a, resize(a), "u")))
	if pub := f.budget("pub"); len(pub.Status.DisruptedPods) != 1 || len(pub.Status.UnavailablePods) != 0 {
		t.Errorf("resize recorded as disrupted %v, unavailable %v; want disruptedPods", pub.Status.DisruptedPods, pub.Status.UnavailablePods)
	}

	// A budget protecting DELETE only lets resizes and updates through.
	g := newFixture(t, fixtureOptions{gates: updateOn}, a, newBudget("pub", 0, 3, 3, pubAnnotation(policyv1beta1.PubProtectOperationAnnotation, "DELETE")))
	expectAllowed(t, g.validate(updateRequest(t, a, resize(a), "u")))

	// A budget protecting RESIZE only refuses a resize but not an image change.
	h := newFixture(t, fixtureOptions{gates: updateOn}, a, newBudget("pub", 0, 3, 3, pubAnnotation(policyv1beta1.PubProtectOperationAnnotation, "RESIZE")))
	expectDenied(t, h.validate(updateRequest(t, a, resize(a), "u")), 403, metav1.StatusReasonForbidden, noBudgetMessage("pub"))
	image := a.DeepCopy()
	image.Spec.Containers[0].Image = "nginx:1.26"
	expectAllowed(t, h.validate(updateRequest(t, a, image, "u")))
	if events := h.events(); len(events) != 1 || !strings.Contains(events[0], "prevents the resize of the pod") {
		t.Errorf("events = %q", events)
	}
}

// protect-not-ready: an unavailable pod passes only while the budget is met, and costs
// nothing; updates of unavailable pods are not affected.
func TestProtectNotReady(t *testing.T) {
	protect := pubAnnotation(pubutil.ProtectNotReadyAnnotation, "true")
	sick := readyPod("sick", notReady)

	met := newFixture(t, fixtureOptions{gates: updateOn}, sick, newBudget("pub", 0, 2, 2, protect))
	rv := met.budget("pub").ResourceVersion
	expectAllowed(t, met.validate(deleteRequest(t, sick, "u")))
	expectAllowed(t, met.validate(evictionRequest(t, "sick", "u", false)))
	if pub := met.budget("pub"); pub.ResourceVersion != rv || len(pub.Status.DisruptedPods) != 0 {
		t.Errorf("an unavailable pod was charged: %+v", pub.Status)
	}

	before := denials(t, "ReplicaSet_ns_rs", "pnr-user")
	unmet := newFixture(t, fixtureOptions{gates: updateOn}, sick, newBudget("pub", 0, 2, 1, protect,
		pubAnnotation(pubutil.RetryDeniedEvictionsAnnotation, "true")))
	expectDenied(t, unmet.validate(deleteRequest(t, sick, "pnr-user")), 403, metav1.StatusReasonForbidden, noBudgetMessage("pub"))
	expectDenied(t, unmet.validate(evictionRequest(t, "sick", "pnr-user", false)), 429, metav1.StatusReasonTooManyRequests, noBudgetMessage("pub"))
	if got := denials(t, "ReplicaSet_ns_rs", "pnr-user") - before; got != 2 {
		t.Errorf("denials rose by %v, want 2", got)
	}
	if events := unmet.events(); len(events) != 2 {
		t.Errorf("events = %q, want 2", events)
	}
	changed := sick.DeepCopy()
	changed.Spec.Containers[0].Image = "nginx:1.26"
	expectAllowed(t, unmet.validate(updateRequest(t, sick, changed, "pnr-user")))

	// Without the annotation (or with "false") unavailable pods bypass the budget.
	plain := newFixture(t, fixtureOptions{}, sick, newBudget("pub", 0, 2, 1, pubAnnotation(pubutil.ProtectNotReadyAnnotation, "false")))
	expectAllowed(t, plain.validate(deleteRequest(t, sick, "u")))

	// The budget being met is judged on this process's freshest copy, not the informer's.
	fresh := newFixture(t, fixtureOptions{}, sick, newBudget("pub", 1, 2, 3, protect))
	if _, err := fresh.handler.Cache.UpdateStatus(fresh.ctx, fresh.server, fresh.budget("pub"),
		func(pub *policyv1beta1.PodUnavailableBudget) (bool, error) {
			pub.Status.CurrentAvailable, pub.Status.UnavailableAllowed = 1, 0
			return true, nil
		}); err != nil {
		t.Fatal(err)
	}
	expectDenied(t, fresh.validate(deleteRequest(t, sick, "u")), 403, metav1.StatusReasonForbidden, noBudgetMessage("pub"))

	// A refusal is checked against the API server: the controller's recount may not have
	// reached this process's informer yet.
	lagging := newFixture(t, fixtureOptions{}, sick, newBudget("pub", 0, 2, 1, protect))
	recounted := lagging.budget("pub")
	recounted.Status.CurrentAvailable = 2
	lagging.server.Put(recounted)
	expectAllowed(t, lagging.validate(deleteRequest(t, sick, "u")))
}

// Requests the webhook cannot judge, or has nothing to judge in.
func TestRequestDecoding(t *testing.T) {
	a := readyPod("a")
	exhausted := newBudget("pub", 0, 3, 3)
	tests := []struct {
		name  string
		gates map[featuregate.Feature]bool
		req   func(t *testing.T) *admissionv1.AdmissionRequest
		code  int32 // 0: allowed
	}{
		{name: "delete without oldObject", req: func(t *testing.T) *admissionv1.AdmissionRequest {
			req := deleteRequest(t, a, "u")
			req.OldObject = runtime.RawExtension{}
			return req
		}},
		{name: "delete of a subresource", req: func(t *testing.T) *admissionv1.AdmissionRequest {
			req := deleteRequest(t, a, "u")
			req.SubResource = "status"
			return req
		}},
		{name: "delete with undecodable oldObject", code: 400, req: func(t *testing.T) *admissionv1.AdmissionRequest {
			req := deleteRequest(t, a, "u")
			req.OldObject = runtime.RawExtension{Raw: []byte(`{"metadata": 5}`)}
			return req
		}},
		{name: "delete with undecodable options", code: 400, req: func(t *testing.T) *admissionv1.AdmissionRequest {
			req := deleteRequest(t, a, "u")
			req.Options = runtime.RawExtension{Raw: []byte(`{"dryRun": "All"}`)}
			return req
		}},
		{name: "delete without options", code: 403, req: func(t *testing.T) *admissionv1.AdmissionRequest {
			req := deleteRequest(t, a, "u")
			req.Options = runtime.RawExtension{}
			return req
		}},
		{name: "pod creation", req: func(t *testing.T) *admissionv1.AdmissionRequest { return createRequest(t, a) }},
		{name: "other subresource creation", req: func(t *testing.T) *admissionv1.AdmissionRequest {
			req := evictionRequest(t, "a", "u", false)
			req.SubResource = "binding"
			return req
		}},
		{name: "eviction of a pod not in the cache", req: func(t *testing.T) *admissionv1.AdmissionRequest {
			return evictionRequest(t, "nowhere", "u", false)
		}},
		{name: "undecodable eviction", code: 400, req: func(t *testing.T) *admissionv1.AdmissionRequest {
			req := evictionRequest(t, "a", "u", false)
			req.Object = runtime.RawExtension{Raw: []byte(`[]`)}
			return req
		}},
		{name: "empty eviction", code: 400, req: func(t *testing.T) *admissionv1.AdmissionRequest {
			req := evictionRequest(t, "a", "u", false)
			req.Object = runtime.RawExtension{}
			return req
		}},
		{name: "policy/v1beta1 eviction", code: 403, req: func(t *testing.T) *admissionv1.AdmissionRequest {
			req := evictionRequest(t, "a", "u", false)
			req.Kind = metav1.GroupVersionKind{Group: "policy", Version: "v1beta1", Kind: "Eviction"}
			req.Object = raw(t, map[string]any{"apiVersion": "policy/v1beta1", "kind": "Eviction", "metadata": map[string]any{"name": "a"}})
			return req
		}},
		{name: "v1beta1 dry-run eviction is judged too", code: 403, req: func(t *testing.T) *admissionv1.AdmissionRequest {
			req := evictionRequest(t, "a", "u", false)
			req.Object = raw(t, map[string]any{"apiVersion": "policy/v1beta1", "kind": "Eviction", "metadata": map[string]any{"name": "a"},
				"deleteOptions": map[string]any{"dryRun": []string{"All"}}})
			return req
		}},
		{name: "update with undecodable object", gates: updateOn, code: 400, req: func(t *testing.T) *admissionv1.AdmissionRequest {
			req := updateRequest(t, a, a, "u")
			req.Object = runtime.RawExtension{Raw: []byte(`"pod"`)}
			return req
		}},
		{name: "update with undecodable oldObject", gates: updateOn, code: 400, req: func(t *testing.T) *admissionv1.AdmissionRequest {
			changed := a.DeepCopy()
			changed.Spec.Containers[0].Image = "x"
			req := updateRequest(t, a, changed, "u")
			req.OldObject = runtime.RawExtension{}
			return req
		}},
		{name: "update without spec change", gates: updateOn, req: func(t *testing.T) *admissionv1.AdmissionRequest {
			return updateRequest(t, a, a, "u")
		}},
		{name: "dry-run update", gates: updateOn, code: 403, req: func(t *testing.T) *admissionv1.AdmissionRequest {
			changed := a.DeepCopy()
			changed.Spec.Containers[0].Image = "x"
			req := updateRequest(t, a, changed, "u")
			req.Options = raw(t, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			return req
		}},
		{name: "connect", req: func(t *testing.T) *admissionv1.AdmissionRequest {
			req := deleteRequest(t, a, "u")
			req.Operation = admissionv1.Connect
			return req
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fixtureOptions{gates: tt.gates}, a, exhausted)
			resp := f.validate(tt.req(t))
			if tt.code == 0 {
				expectAllowed(t, resp)
				return
			}
			if resp.Allowed || resp.Result.Code != tt.code {
				t.Fatalf("answer allowed=%v result=%+v, want code %d", resp.Allowed, resp.Result, tt.code)
			}
		})
	}
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
