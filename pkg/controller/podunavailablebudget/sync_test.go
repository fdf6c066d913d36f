package podunavailablebudget

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/pubutil"
	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
	"github.com/bosun-dev/bosun/pkg/features"
)

// deploymentWithPods returns Deployment name with replicas, its ReplicaSet and n ready pods
// of it, labelled app=name.
func deploymentWithPods(name string, replicas int32, n int) []runtime.Object {
	d := newDeployment(name, replicas)
	dRef := controllerRef(deploymentGVK, d.Name, d.UID)
	rs := newReplicaSet(name+"-rs", replicas, &dRef)
	rsRef := controllerRef(replicaSetGVK, rs.Name, rs.UID)
	objects := []runtime.Object{d, rs}
	for _, pod := range podsOf(name, name, n, &rsRef) {
		objects = append(objects, pod)
	}
	return objects
}

func TestSyncStatusOfDeploymentBudget(t *testing.T) {
	for _, tc := range []struct {
		name string
		pub  *policyv1beta1.PodUnavailableBudget
		want counts
	}{
		{"targetRef maxUnavailable 25%", targetBudget("pub", deploymentGVK, "web", intstr.FromString("25%")), counts{4, 3, 4, 1}},
		{"selector maxUnavailable 25%", selectorBudget("pub", "web", intstr.FromString("25%")), counts{4, 3, 4, 1}},
		{"targetRef minAvailable 50%", func() *policyv1beta1.PodUnavailableBudget {
			pub := targetBudget("pub", deploymentGVK, "web", intstr.FromInt32(0))
			pub.Spec.MaxUnavailable, pub.Spec.MinAvailable = nil, ptr.To(intstr.FromString("50%"))
			return pub
		}(), counts{4, 2, 4, 2}},
		{"targetRef maxUnavailable 1", targetBudget("pub", deploymentGVK, "web", intstr.FromInt32(1)), counts{4, 3, 4, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fixtureOption{}, append(deploymentWithPods("web", 4, 4), tc.pub)...)
			f.sync("pub")
			status := f.status("pub")
			if got := countsOf(status); got != tc.want {
				t.Errorf("status %+v, want %+v", got, tc.want)
			}
			if status.ObservedGeneration != 1 {
				t.Errorf("observedGeneration %d, want 1", status.ObservedGeneration)
			}
			if status.DisruptedPods != nil || status.UnavailablePods != nil {
				t.Errorf("maps %v %v, want none", status.DisruptedPods, status.UnavailablePods)
			}
		})
	}
}

func TestSyncTagsUntaggedPods(t *testing.T) {
	objects := deploymentWithPods("web", 4, 4)
	// web-0 is tagged with both keys already, web-1 only with the key older OpenKruise
	// writes (for another budget): neither is patched.
	tagged(objects[2].(*corev1.Pod), "pub")
	objects[3].(*corev1.Pod).Annotations = map[string]string{policyv1beta1.PodRelatedPubAnnotation: "other"}
	f := newFixture(t, fixtureOption{}, append(objects, selectorBudget("pub", "web", intstr.FromInt32(1)))...)
	f.sync("pub")

	want := map[string]map[string]string{
		"web-2": pubutil.RelatedBudgetAnnotations("pub"),
		"web-3": pubutil.RelatedBudgetAnnotations("pub"),
	}
	if got := f.patchedPods(); !maps.EqualFunc(got, want, maps.Equal) {
		t.Errorf("patched %v, want %v", got, want)
	}
	live, err := f.kubeClient.CoreV1().Pods(testNamespace).Get(f.ctx, "web-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pubutil.RelatedBudget(live) != "pub" || live.Annotations[policyv1beta1.PodRelatedPubAnnotation] != "pub" {
		t.Errorf("web-2 annotations after the patch: %v", live.Annotations)
	}
}

func TestSyncTagFailureStillWritesStatus(t *testing.T) {
	f := newFixture(t, fixtureOption{}, append(deploymentWithPods("web", 2, 2), selectorBudget("pub", "web", intstr.FromInt32(1)))...)
	// web-1 is in the informer cache but gone from the API server: skipped silently.
	if err := f.kubeClient.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), testNamespace, "web-1"); err != nil {
		t.Fatal(err)
	}
	f.sync("pub")
	if got := countsOf(f.status("pub")); got != (counts{2, 1, 2, 1}) {
		t.Errorf("status %+v", got)
	}

	f2 := newFixture(t, fixtureOption{}, append(deploymentWithPods("web", 2, 2), selectorBudget("pub", "web", intstr.FromInt32(1)))...)
	f2.kubeClient.PrependReactor("patch", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "web-0", errors.New("denied"))
	})
	err := f2.c.syncBudget(f2.ctx, "ns/pub")
	if err == nil || !strings.Contains(err.Error(), "tagging pod") {
		t.Errorf("sync error %v, want the tagging failures", err)
	}
	if got := countsOf(f2.status("pub")); got != (counts{2, 1, 2, 1}) {
		t.Errorf("status after failed tagging %+v, want it written anyway", got)
	}
}

func TestSyncNoPodsEventOnce(t *testing.T) {
	pub := selectorBudget("pub", "web", intstr.FromInt32(1))
	f := newFixture(t, fixtureOption{resync: time.Minute}, pub)
	f.sync("pub")
	f.sync("pub")
	want := []string{"Normal NoPods PodUnavailableBudget/pub: No matching pods found"}
	if got := f.recorder.take(); !slices.Equal(got, want) {
		t.Errorf("events of two syncs without pods: %v, want %v", got, want)
	}
	if got := countsOf(f.status("pub")); got != (counts{}) {
		t.Errorf("status %+v, want zeros", got)
	}

	// Pods come and go: the next empty sync reports again.
	pod := newPod("p", map[string]string{"app": "web"}, nil)
	f.add(pod)
	f.sync("pub")
	f.remove(pod)
	f.sync("pub")
	if got := f.recorder.take(); !slices.Equal(got, want) {
		t.Errorf("events after pods came and went: %v, want %v", got, want)
	}

	// A budget re-created under the name is a new budget.
	f.remove(pub)
	f.sync("pub")
	recreated := selectorBudget("pub", "web", intstr.FromInt32(1))
	recreated.UID = "uid-pub-2"
	f.add(recreated)
	f.sync("pub")
	if got := f.recorder.take(); !slices.Equal(got, want) {
		t.Errorf("events for the re-created budget: %v, want %v", got, want)
	}
}

func TestSyncForgetsDeletedBudget(t *testing.T) {
	for _, deleting := range []bool{false, true} {
		f := newFixture(t, fixtureOption{}, append(deploymentWithPods("web", 2, 2), selectorBudget("pub", "web", intstr.FromInt32(1)))...)
		informerCopy := f.server.Budget(testNamespace, "pub")
		f.sync("pub")
		written := f.server.Budget(testNamespace, "pub")
		if got := f.cache.Freshest(informerCopy); got.ResourceVersion != written.ResourceVersion {
			t.Fatalf("cache holds version %s after the write, want %s", got.ResourceVersion, written.ResourceVersion)
		}
		if deleting {
			terminating := informerCopy.DeepCopy()
			terminating.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
			if err := f.indexers["budget"].Update(terminating); err != nil {
				t.Fatal(err)
			}
		} else {
			f.remove(informerCopy)
		}
		writes := f.statusWrites()
		f.sync("pub")
		if got := f.cache.Freshest(informerCopy); got != informerCopy {
			t.Errorf("deleting=%v: the cache still holds version %s", deleting, got.ResourceVersion)
		}
		if f.statusWrites() != writes || len(f.patchedPods()) != 2 {
			t.Errorf("deleting=%v: a gone budget was written or its pods tagged again", deleting)
		}
		if len(f.queue.Delayed()) != 0 {
			t.Errorf("deleting=%v: a gone budget was requeued: %v", deleting, f.queue.Delayed())
		}
	}
}

func TestSyncFollowsScaleDown(t *testing.T) {
	objects := deploymentWithPods("web", 10, 10)
	pub := targetBudget("pub", deploymentGVK, "web", intstr.FromString("10%"))
	f := newFixture(t, fixtureOption{}, append(objects, pub)...)
	f.sync("pub")
	if got := countsOf(f.status("pub")); got != (counts{10, 9, 10, 1}) {
		t.Fatalf("status before the scale-down %+v", got)
	}

	before := objects[0]
	after := newDeployment("web", 5)
	after.ResourceVersion = "2"
	f.add(after)
	f.c.updateWorkload(f.ctx, before, after)
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"ns/pub"}) {
		t.Fatalf("scale-down queued %v", got)
	}
	f.refreshBudget("pub")
	f.sync("pub")
	// The pods are still there, so the budget now allows taking five of them down.
	if got := countsOf(f.status("pub")); got != (counts{5, 4, 10, 6}) {
		t.Errorf("status after the scale-down %+v, want total 5 desired 4 current 10 allowed 6", got)
	}
}

func TestSyncTotalReplicasOverride(t *testing.T) {
	for _, tc := range []struct {
		name string
		pub  *policyv1beta1.PodUnavailableBudget
		want counts
	}{
		{"selector", selectorBudget("pub", "web", intstr.FromInt32(1)), counts{6, 5, 4, 0}},
		{"targetRef", targetBudget("pub", deploymentGVK, "web", intstr.FromInt32(1)), counts{6, 5, 4, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pub := withAnnotation(tc.pub, policyv1beta1.PubProtectTotalReplicasAnnotation, "6")
			f := newFixture(t, fixtureOption{}, append(deploymentWithPods("web", 4, 4), pub)...)
			f.sync("pub")
			if got := countsOf(f.status("pub")); got != tc.want {
				t.Errorf("status %+v, want %+v", got, tc.want)
			}
		})
	}

	t.Run("invalid", func(t *testing.T) {
		pub := withAnnotation(selectorBudget("pub", "web", intstr.FromInt32(1)), policyv1beta1.PubProtectTotalReplicasAnnotation, "abc")
		f := newFixture(t, fixtureOption{}, append(deploymentWithPods("web", 4, 4), pub)...)
		if err := f.c.syncBudget(f.ctx, "ns/pub"); err == nil {
			t.Error("sync with an invalid protect-total-replicas succeeded")
		}
		events := f.recorder.take()
		if len(events) != 1 || !strings.HasPrefix(events[0], "Warning CalculateExpectedPodCountFailed PodUnavailableBudget/pub: Failed to calculate the number of expected pods: ") {
			t.Errorf("events %v, want one CalculateExpectedPodCountFailed", events)
		}
		if f.statusWrites() != 0 {
			t.Error("status written")
		}
	})
}

// spec.protectTotalReplicas replaces the computed count and decides over the annotation a
// v1alpha1 writer left; a count below 1 is no count.
func TestSyncTotalReplicasField(t *testing.T) {
	withTotal := func(pub *policyv1beta1.PodUnavailableBudget, total int32) *policyv1beta1.PodUnavailableBudget {
		pub.Spec.ProtectTotalReplicas = ptr.To(total)
		return pub
	}
	for _, tc := range []struct {
		name string
		pub  *policyv1beta1.PodUnavailableBudget
		want counts
	}{
		{"field", withTotal(selectorBudget("pub", "web", intstr.FromInt32(1)), 6), counts{6, 5, 4, 0}},
		{"field over the annotation", withTotal(withAnnotation(selectorBudget("pub", "web", intstr.FromInt32(1)),
			policyv1beta1.PubProtectTotalReplicasAnnotation, "3"), 6), counts{6, 5, 4, 0}},
		{"field over an invalid annotation", withTotal(withAnnotation(targetBudget("pub", deploymentGVK, "web", intstr.FromInt32(1)),
			policyv1beta1.PubProtectTotalReplicasAnnotation, "abc"), 6), counts{6, 5, 4, 0}},
		{"annotation zero is no override", withAnnotation(selectorBudget("pub", "web", intstr.FromInt32(1)),
			policyv1beta1.PubProtectTotalReplicasAnnotation, "0"), counts{4, 3, 4, 1}},
		{"annotation negative is no override", withAnnotation(targetBudget("pub", deploymentGVK, "web", intstr.FromInt32(1)),
			policyv1beta1.PubProtectTotalReplicasAnnotation, "-1"), counts{4, 3, 4, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fixtureOption{}, append(deploymentWithPods("web", 4, 4), tc.pub)...)
			f.sync("pub")
			if got := countsOf(f.status("pub")); got != tc.want {
				t.Errorf("status %+v, want %+v", got, tc.want)
			}
			if events := f.recorder.take(); len(events) != 0 {
				t.Errorf("events %v, want none", events)
			}
		})
	}
}

// Pods a budget exempts, by its ignoredPodSelector or their no-protect annotation, are
// counted like the others: only the pod webhook lets them go for free.
func TestSyncCountsExemptPods(t *testing.T) {
	objects := deploymentWithPods("web", 3, 3)
	for _, obj := range objects {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			continue
		}
		switch pod.Name {
		case "web-0":
			pod.Labels["force-deletable"] = "true"
		case "web-1":
			pod.Annotations = map[string]string{policyv1beta1.PodPubNoProtectionAnnotation: "true"}
		}
	}
	pub := selectorBudget("pub", "web", intstr.FromInt32(0))
	pub.Spec.IgnoredPodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"force-deletable": "true"}}
	f := newFixture(t, fixtureOption{}, append(objects, pub)...)
	f.sync("pub")
	if got := countsOf(f.status("pub")); got != (counts{3, 3, 3, 0}) {
		t.Errorf("status %+v, want total 3 desired 3 current 3 allowed 0", got)
	}
	if got := len(f.patchedPods()); got != 3 {
		t.Errorf("%d pods tagged, want all 3", got)
	}
}

func TestSyncCalculateExpectedPodCountFailed(t *testing.T) {
	pub := selectorBudget("pub", "web", intstr.FromString("abc"))
	f := newFixture(t, fixtureOption{}, append(deploymentWithPods("web", 4, 4), pub)...)
	if err := f.c.syncBudget(f.ctx, "ns/pub"); err == nil {
		t.Error("sync with maxUnavailable \"abc\" succeeded")
	}
	events := f.recorder.take()
	if len(events) != 1 || !strings.HasPrefix(events[0], "Warning CalculateExpectedPodCountFailed PodUnavailableBudget/pub: Failed to calculate the number of expected pods: ") {
		t.Errorf("events %v", events)
	}
	if f.statusWrites() != 0 {
		t.Error("status written")
	}
}

// TestSyncDaemonSetPods: pods of an Advanced DaemonSet have no replica count unless feature
// PodUnavailableBudgetDaemonSetReplicas gives them one.
func TestSyncDaemonSetPods(t *testing.T) {
	ds := newDaemonSet("agent", 3)
	dsRef := controllerRef(daemonSetGVK, ds.Name, ds.UID)
	objects := []runtime.Object{ds}
	for _, pod := range podsOf("agent", "agent", 3, &dsRef) {
		objects = append(objects, pod)
	}
	withGate := map[featuregate.Feature]bool{features.PodUnavailableBudgetDaemonSetReplicas: true}
	for _, tc := range []struct {
		name  string
		gates map[featuregate.Feature]bool
		pub   *policyv1beta1.PodUnavailableBudget
		want  counts
	}{
		// OpenKruise's answer: an owner without a count counts -1, nothing is protected.
		{"selector", nil, selectorBudget("pub", "agent", intstr.FromInt32(1)), counts{-1, 0, 3, 3}},
		{"selector with total 3", nil, withAnnotation(selectorBudget("pub", "agent", intstr.FromInt32(1)),
			policyv1beta1.PubProtectTotalReplicasAnnotation, "3"), counts{3, 2, 3, 1}},
		{"selector with the gate", withGate, selectorBudget("pub", "agent", intstr.FromInt32(1)), counts{3, 2, 3, 1}},
		{"targetRef", nil, targetBudget("pub", daemonSetGVK, "agent", intstr.FromInt32(1)), counts{0, 0, 3, 3}},
		{"targetRef with total 3", nil, withAnnotation(targetBudget("pub", daemonSetGVK, "agent", intstr.FromInt32(1)),
			policyv1beta1.PubProtectTotalReplicasAnnotation, "3"), counts{3, 2, 3, 1}},
		{"targetRef with the gate", withGate, targetBudget("pub", daemonSetGVK, "agent", intstr.FromInt32(1)), counts{3, 2, 3, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fixtureOption{gates: tc.gates}, append(slices.Clone(objects), tc.pub)...)
			f.sync("pub")
			if got := countsOf(f.status("pub")); got != tc.want {
				t.Errorf("status %+v, want %+v", got, tc.want)
			}
			if got := len(f.patchedPods()); got != 3 {
				t.Errorf("%d pods tagged, want 3", got)
			}
		})
	}
}

// Owner references and targetRefs written with apps.kruise.io/v1alpha1, before the
// DaemonSet was cached in v1beta1, still name it: kinds are matched by group and kind.
func TestSyncDaemonSetNamedInV1alpha1(t *testing.T) {
	v1alpha1DaemonSet := schema.GroupVersionKind{Group: daemonSetGVK.Group, Version: "v1alpha1", Kind: daemonSetGVK.Kind}
	ds := newDaemonSet("agent", 3)
	dsRef := controllerRef(v1alpha1DaemonSet, ds.Name, ds.UID)
	objects := []runtime.Object{ds}
	for _, pod := range podsOf("agent", "agent", 3, &dsRef) {
		objects = append(objects, pod)
	}
	withGate := fixtureOption{gates: map[featuregate.Feature]bool{features.PodUnavailableBudgetDaemonSetReplicas: true}}
	for _, tc := range []struct {
		name string
		pub  *policyv1beta1.PodUnavailableBudget
	}{
		{"selector", selectorBudget("pub", "agent", intstr.FromInt32(1))},
		{"targetRef", targetBudget("pub", v1alpha1DaemonSet, "agent", intstr.FromInt32(1))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, withGate, append(slices.Clone(objects), tc.pub)...)
			f.sync("pub")
			if got := countsOf(f.status("pub")); got != (counts{3, 2, 3, 1}) {
				t.Errorf("status %+v, want the DaemonSet's 3 pods out of 3", got)
			}
		})
	}
}

// TestSyncOwnerChain: a Widget drives a ReplicaSet of its own. Only with feature
// PodUnavailableBudgetOwnerChain does a budget targeting the Widget cover its pods.
func TestSyncOwnerChain(t *testing.T) {
	widgetRef := controllerRef(widgetKind, "w", "uid-w")
	rs := newReplicaSet("w-rs", 3, &widgetRef)
	rsRef := controllerRef(replicaSetGVK, rs.Name, rs.UID)
	objects := []runtime.Object{rs, targetBudget("pub", widgetKind, "w", intstr.FromInt32(1))}
	for _, pod := range podsOf("w", "w", 3, &rsRef) {
		objects = append(objects, pod)
	}
	// The Widget publishes no selector, so nothing but the chain leads to its pods.
	opt := fixtureOption{live: []*metav1.PartialObjectMetadata{liveWidget("w")}, scales: map[string]*autoscalingv1.Scale{"w": scaleOf(3, "")}}

	f := newFixture(t, opt, objects...)
	f.sync("pub")
	if got := countsOf(f.status("pub")); got != (counts{3, 2, 0, 0}) {
		t.Errorf("without the gate: status %+v, want total 3 and no pods", got)
	}

	opt.gates = map[featuregate.Feature]bool{features.PodUnavailableBudgetOwnerChain: true}
	f = newFixture(t, opt, objects...)
	f.sync("pub")
	if got := countsOf(f.status("pub")); got != (counts{3, 2, 3, 1}) {
		t.Errorf("with the gate: status %+v, want the Widget's three pods", got)
	}
}

func TestSyncExpiresDisruptedPods(t *testing.T) {
	objects := deploymentWithPods("web", 4, 4)
	pub := targetBudget("pub", deploymentGVK, "web", intstr.FromInt32(1))
	// web-0's deletion was admitted five seconds ago but did not happen; gone-pod's did.
	pub.Status.DisruptedPods = map[string]metav1.Time{
		"web-0":    metav1.NewTime(t0.Add(-5 * time.Second)),
		"gone-pod": metav1.NewTime(t0.Add(-5 * time.Second)),
	}
	f := newFixture(t, fixtureOption{}, append(objects, pub)...)
	f.sync("pub")
	status := f.status("pub")
	if got := countsOf(status); got != (counts{4, 3, 3, 0}) {
		t.Errorf("status %+v, want web-0 not counted", got)
	}
	if want := map[string]metav1.Time{"web-0": metav1.NewTime(t0.Add(-5 * time.Second))}; !entriesEqual(status.DisruptedPods, want) {
		t.Errorf("disruptedPods %v, want only web-0", status.DisruptedPods)
	}
	if got, want := f.queue.Delayed(), []queuetest.Delayed{{Key: "ns/pub", Delay: 15 * time.Second}}; !slices.Equal(got, want) {
		t.Errorf("requeued %v, want %v", got, want)
	}
	if got := f.recorder.take(); len(got) != 0 {
		t.Errorf("events %v before the entry expired", got)
	}

	f.queue.Reset()
	f.clock.Step(15 * time.Second)
	f.refreshBudget("pub")
	f.sync("pub")
	status = f.status("pub")
	if got := countsOf(status); got != (counts{4, 3, 4, 1}) {
		t.Errorf("status after expiry %+v, want web-0 counted again", got)
	}
	if status.DisruptedPods != nil {
		t.Errorf("disruptedPods %v after expiry", status.DisruptedPods)
	}
	want := []string{"Warning NotDeleted Pod/web-0: Pod was expected by PUB ns/pub to be deleted but it wasn't"}
	if got := f.recorder.take(); !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	if got := f.queue.Delayed(); len(got) != 0 {
		t.Errorf("requeued %v with nothing left to expire", got)
	}
}

func TestSyncExpiresUnavailablePods(t *testing.T) {
	objects := deploymentWithPods("web", 4, 4)
	pub := targetBudget("pub", deploymentGVK, "web", intstr.FromInt32(1))
	pub.Status.UnavailablePods = map[string]metav1.Time{"web-1": metav1.NewTime(t0)}
	f := newFixture(t, fixtureOption{}, append(objects, pub)...)
	f.sync("pub")
	if got := countsOf(f.status("pub")); got != (counts{4, 3, 3, 0}) {
		t.Errorf("status %+v, want web-1 not counted", got)
	}
	if got, want := f.queue.Delayed(), []queuetest.Delayed{{Key: "ns/pub", Delay: 10 * time.Second}}; !slices.Equal(got, want) {
		t.Errorf("requeued %v, want %v", got, want)
	}

	f.clock.Step(10 * time.Second)
	f.refreshBudget("pub")
	f.sync("pub")
	status := f.status("pub")
	if got := countsOf(status); got != (counts{4, 3, 4, 1}) || status.UnavailablePods != nil {
		t.Errorf("status after expiry %+v %v", got, status.UnavailablePods)
	}
	if got := f.recorder.take(); len(got) != 0 {
		t.Errorf("events %v: an expired update record is not an anomaly", got)
	}
}

// TestSyncRecomputesOnFreshestCopy: the webhook spent the budget after the informer saw it;
// the controller's first write conflicts and the retry keeps the webhook's record.
func TestSyncRecomputesOnFreshestCopy(t *testing.T) {
	f := newFixture(t, fixtureOption{}, append(deploymentWithPods("web", 4, 4), targetBudget("pub", deploymentGVK, "web", intstr.FromInt32(1)))...)
	spent := f.server.Budget(testNamespace, "pub")
	spent.Status = policyv1beta1.PodUnavailableBudgetStatus{
		DisruptedPods: map[string]metav1.Time{"web-2": metav1.NewTime(t0)},
		TotalReplicas: 4, DesiredAvailable: 3, CurrentAvailable: 4, UnavailableAllowed: 0,
	}
	f.server.Put(spent)

	f.sync("pub")
	status := f.status("pub")
	if _, ok := status.DisruptedPods["web-2"]; !ok {
		t.Errorf("the webhook's record of web-2 was lost: %v", status.DisruptedPods)
	}
	if got := countsOf(status); got != (counts{4, 3, 3, 0}) {
		t.Errorf("status %+v, want web-2 not counted", got)
	}
	if _, conflicts, _ := f.server.Counts(); conflicts != 1 {
		t.Errorf("%d conflicts, want the one of the stale first attempt", conflicts)
	}
}

func TestSyncWritesOnlyChanges(t *testing.T) {
	f := newFixture(t, fixtureOption{resync: time.Minute}, append(deploymentWithPods("web", 4, 4), targetBudget("pub", deploymentGVK, "web", intstr.FromInt32(1)))...)
	f.sync("pub")
	if f.statusWrites() != 1 {
		t.Fatalf("%d writes for the first sync, want 1", f.statusWrites())
	}
	// A resync with nothing changed writes nothing, whether the informer has seen the
	// write yet or not.
	f.sync("pub")
	f.refreshBudget("pub")
	f.sync("pub")
	if f.statusWrites() != 1 {
		t.Errorf("%d writes after unchanged resyncs, want 1", f.statusWrites())
	}

	// A generation bump alone is a change.
	pub := f.server.Budget(testNamespace, "pub")
	pub.Generation = 2
	f.add(pub)
	f.sync("pub")
	if f.statusWrites() != 2 || f.status("pub").ObservedGeneration != 2 {
		t.Errorf("generation 2: %d writes, observedGeneration %d", f.statusWrites(), f.status("pub").ObservedGeneration)
	}
}

func TestSyncCountsOnlyAvailablePods(t *testing.T) {
	d := newDeployment("web", 6)
	dRef := controllerRef(deploymentGVK, d.Name, d.UID)
	rs := newReplicaSet("web-rs", 6, &dRef)
	rsRef := controllerRef(replicaSetGVK, rs.Name, rs.UID)
	pods := podsOf("web", "web", 6, &rsRef)
	pods[1].Labels[policyv1beta1.PubUnavailablePodLabelPrefix+"drain"] = "true"
	notReady(pods[2])
	pods[3].Status.Phase = corev1.PodPending
	pods[4].Status.Phase = corev1.PodSucceeded // inactive: not covered at all
	pods[5].DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	objects := []runtime.Object{d, rs, targetBudget("pub", deploymentGVK, "web", intstr.FromInt32(1))}
	for _, pod := range pods {
		objects = append(objects, pod)
	}
	f := newFixture(t, fixtureOption{}, objects...)
	f.sync("pub")
	if got := countsOf(f.status("pub")); got != (counts{6, 5, 1, 0}) {
		t.Errorf("status %+v, want only web-0 available", got)
	}
	if got := slices.Sorted(maps.Keys(f.patchedPods())); !slices.Equal(got, []string{"web-0", "web-1", "web-2", "web-3"}) {
		t.Errorf("tagged %v, want the active pods", got)
	}
}

func TestSyncResyncs(t *testing.T) {
	for _, resync := range []time.Duration{0, time.Minute} {
		f := newFixture(t, fixtureOption{resync: resync}, targetBudget("pub", deploymentGVK, "web", intstr.FromInt32(1)))
		f.sync("pub")
		var want []queuetest.Delayed
		if resync > 0 {
			want = []queuetest.Delayed{{Key: "ns/pub", Delay: resync}}
		}
		if got := f.queue.Delayed(); !slices.Equal(got, want) {
			t.Errorf("resync %v: requeued %v, want %v", resync, got, want)
		}
	}
}

func TestSyncInvalidSelector(t *testing.T) {
	pub := selectorBudget("pub", "web", intstr.FromInt32(1))
	pub.Spec.Selector = &metav1.LabelSelector{}
	f := newFixture(t, fixtureOption{}, append(deploymentWithPods("web", 2, 2), pub)...)
	if err := f.c.syncBudget(f.ctx, "ns/pub"); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("sync of a budget with an empty selector: %v", err)
	}
	if len(f.patchedPods()) != 0 || f.statusWrites() != 0 {
		t.Error("a budget with an empty selector tagged pods or wrote status")
	}
}

// TestSyncWhileDeploymentIsCollected follows a selector budget with maxUnavailable 0 through
// the deletion of its Deployment as the garbage collector carries it out. Once the
// Deployment is gone, or being deleted, its ReplicaSets' replicas no longer keep the pods
// protected: the collector must be let delete them.
func TestSyncWhileDeploymentIsCollected(t *testing.T) {
	objects := deploymentWithPods("web", 2, 2)
	web, rs := objects[0].(*appsv1.Deployment), objects[1].(*appsv1.ReplicaSet)
	pods := []*corev1.Pod{objects[2].(*corev1.Pod), objects[3].(*corev1.Pod)}
	deleting := func(obj metav1.Object) { obj.SetDeletionTimestamp(ptr.To(metav1.NewTime(t0))) }

	for _, tc := range []struct {
		name string
		// collect changes the caches from the protected state.
		collect func(f *fixture)
		want    counts
	}{
		// Background propagation: the Deployment goes first; its ReplicaSet, naming a
		// controller that is gone, counts as unknown (-1), as in OpenKruise.
		{"Deployment gone", func(f *fixture) { f.remove(web) }, counts{-1, 0, 2, 2}},
		{"Deployment re-created", func(f *fixture) {
			recreated := web.DeepCopy()
			recreated.UID = "uid-web-2"
			f.add(recreated)
		}, counts{-1, 0, 2, 2}},
		// Then the ReplicaSet: its pods have no owner left to count.
		{"Deployment and ReplicaSet gone", func(f *fixture) { f.remove(web); f.remove(rs) }, counts{0, 0, 2, 2}},
		// Foreground propagation: the Deployment waits, being deleted, for its dependents.
		{"Deployment being deleted", func(f *fixture) {
			d := web.DeepCopy()
			deleting(d)
			f.add(d)
		}, counts{0, 0, 2, 2}},
		{"Deployment and ReplicaSet being deleted", func(f *fixture) {
			d, r := web.DeepCopy(), rs.DeepCopy()
			deleting(d)
			deleting(r)
			f.add(d)
			f.add(r)
		}, counts{0, 0, 2, 2}},
		// Orphan propagation: the ReplicaSet lives on without a controller and counts itself.
		{"ReplicaSet orphaned", func(f *fixture) {
			r := rs.DeepCopy()
			r.OwnerReferences = nil
			f.remove(web)
			f.add(r)
		}, counts{2, 2, 2, 0}},
		// The pods are gone: nothing is left to count.
		{"everything gone", func(f *fixture) {
			f.remove(web)
			f.remove(rs)
			for _, pod := range pods {
				f.remove(pod)
			}
		}, counts{0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fixtureOption{}, slices.Concat(objects, []runtime.Object{selectorBudget("pub", "web", intstr.FromInt32(0))})...)
			f.sync("pub")
			if got := countsOf(f.status("pub")); got != (counts{2, 2, 2, 0}) {
				t.Fatalf("before the deletion: status %+v, want {2 2 2 0}", got)
			}
			tc.collect(f)
			f.sync("pub")
			if got := countsOf(f.status("pub")); got != tc.want {
				t.Errorf("status %+v, want %+v", got, tc.want)
			}
		})
	}
}
