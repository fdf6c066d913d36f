package cloneset

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/cloneset/clonesetutil"
	"github.com/bosun-dev/bosun/pkg/controller/expectations"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
)

const idAlphabet = "bcdfghjklmnpqrstvwxz2456789"

func TestScaleUpCreatesNamedPods(t *testing.T) {
	cs := newCS(5)
	revision := revisionOf(t, cs, 1)
	f := newFixture(t, fixtureOption{}, cs, revision)
	f.sync(cs)

	created := f.createdPods()
	if len(created) != 5 {
		t.Fatalf("created %d pods, want 5", len(created))
	}
	ids := map[string]bool{}
	for _, pod := range created {
		id := pod.Labels[appsv1beta1.CloneSetInstanceID]
		if len(id) != 5 || strings.Trim(id, idAlphabet) != "" || pod.Name != "cs-"+id || ids[id] {
			t.Errorf("pod %s has instance ID %q: want a fresh 5-character ID from %s and the name cs-<id>", pod.Name, id, idAlphabet)
		}
		ids[id] = true
		if pod.Labels[appsv1beta1.ControllerRevisionHashLabelKey] != revision.Name ||
			pod.Labels[appsv1beta1.PodTemplateHashLabelKey] != clonesetutil.ShortHash(revision.Name) ||
			pod.Labels[appsv1beta1.LifecycleStateKey] != string(appsv1beta1.LifecycleStatePreparingNormal) ||
			pod.Annotations[appsv1beta1.LifecycleTimestampKey] != "2026-03-01T12:00:00Z" {
			t.Errorf("pod %s labels %v annotations %v", pod.Name, pod.Labels, pod.Annotations)
		}
		if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != cs.UID || ref.APIVersion != "apps.kruise.io/v1beta1" {
			t.Errorf("pod %s controller reference = %+v", pod.Name, ref)
		}
		if len(pod.Spec.ReadinessGates) != 1 || pod.Spec.ReadinessGates[0].ConditionType != appsv1beta1.InPlaceUpdateReady {
			t.Errorf("pod %s readiness gates = %v", pod.Name, pod.Spec.ReadinessGates)
		}
	}
	if n := countEvents(f.events(), "Normal SuccessfulCreate succeed to create pod cs-"); n != 5 {
		t.Errorf("%d SuccessfulCreate events, want 5", n)
	}
	if status := f.lastStatus(); status == nil || status.Replicas != 0 {
		t.Errorf("status = %+v, want the pods the cache shows: none", status)
	}

	// Until the informer shows them, nothing more is done.
	f.kubeClient.ClearActions()
	f.bosunClient.ClearActions()
	f.sync(cs)
	if writes := f.writes(); len(writes) != 0 {
		t.Errorf("a sync with creations outstanding wrote: %v", writes)
	}
	delayed := f.queue.Delayed()
	if len(delayed) == 0 || delayed[len(delayed)-1].Delay != expectations.ExpectationsTimeout {
		t.Errorf("requeued %v, want after the expectation timeout", delayed)
	}
	for _, pod := range created {
		f.c.addPod(f.ctx, pod)
	}
	if met, _ := f.c.scaleExpectations.Satisfied(key(cs)); !met {
		t.Errorf("expectations still pending after every pod was seen: %v", f.c.scaleExpectations.Pending(key(cs)))
	}
}

func TestSlowStartStopsAtAFailure(t *testing.T) {
	cs := newCS(10)
	f := newFixture(t, fixtureOption{}, cs, revisionOf(t, cs, 1))
	var calls atomic.Int32
	f.kubeClient.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if calls.Add(1) == 3 {
			return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "x", errors.New("quota exceeded"))
		}
		return false, nil, nil
	})
	if err := f.c.syncCloneSet(f.ctx, key(cs)); err == nil {
		t.Fatal("sync succeeded although a create failed")
	}
	// Batches of 1 and 2; the second fails, no third starts.
	if got := calls.Load(); got != 3 {
		t.Errorf("%d create calls, want 3", got)
	}
	if n := countEvents(f.events(), "Warning FailedCreate failed to create pod: "); n != 1 {
		t.Errorf("%d FailedCreate events, want 1", n)
	}
	// Two pods were created; only they are expected.
	pending := f.c.scaleExpectations.Pending(key(cs))
	if len(pending) != 2 {
		t.Errorf("pending expectations = %v, want the 2 created pods", pending)
	}
	status := f.lastStatus()
	if status == nil || len(status.Conditions) != 1 || status.Conditions[0].Type != appsv1beta1.CloneSetConditionFailedScale ||
		status.Conditions[0].Status != corev1.ConditionTrue || !strings.Contains(status.Conditions[0].Message, "quota exceeded") {
		t.Errorf("status conditions = %+v, want FailedScale with the error", status)
	}
}

func TestClaimsAreCreatedBeforeTheirPod(t *testing.T) {
	cs := newCS(1)
	cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	f := newFixture(t, fixtureOption{}, cs, revisionOf(t, cs, 1))
	f.sync(cs)

	pods, claims := f.createdPods(), f.createdClaims()
	if len(pods) != 1 || len(claims) != 1 {
		t.Fatalf("created %d pods and %d claims, want 1 and 1", len(pods), len(claims))
	}
	id := pods[0].Labels[appsv1beta1.CloneSetInstanceID]
	claim := claims[0]
	if claim.Name != "data-cs-"+id || claim.Labels["app"] != "cs" || claim.Labels[appsv1beta1.CloneSetInstanceID] != id {
		t.Errorf("claim %s labels %v, want data-cs-%s labelled app=cs and its instance ID", claim.Name, claim.Labels, id)
	}
	if ref := metav1.GetControllerOf(claim); ref == nil || ref.UID != cs.UID {
		t.Errorf("claim controller reference = %+v", ref)
	}
	if vol := pods[0].Spec.Volumes; len(vol) != 1 || vol[0].PersistentVolumeClaim == nil || vol[0].PersistentVolumeClaim.ClaimName != claim.Name {
		t.Errorf("pod volumes = %+v, want the claim", vol)
	}
	// The claim was written first.
	var order []string
	for _, a := range f.kubeClient.Actions() {
		if r := a.GetResource().Resource; a.GetVerb() == "create" && r != "controllerrevisions" {
			order = append(order, r)
		}
	}
	if !slices.Equal(order, []string{"persistentvolumeclaims", "pods"}) {
		t.Errorf("create order = %v, want the claim before the pod", order)
	}
	pending := f.c.scaleExpectations.Pending(key(cs))
	if len(pending) != 2 {
		t.Errorf("pending = %v, want the pod and the claim", pending)
	}
}

// claimFor returns the claim "data" of cs's pod with instance ID id, as the controller
// creates it.
func claimFor(cs *appsv1beta1.CloneSet, id string) *corev1.PersistentVolumeClaim {
	claim := clonesetutil.NewClaims(cs, id)[0]
	claim.UID = "uid-" + claim.UID
	claim.ResourceVersion = "5"
	return claim
}

func withDataClaims(cs *appsv1beta1.CloneSet) *appsv1beta1.CloneSet {
	cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	return cs
}

func TestReusedClaimKeepsItsInstanceID(t *testing.T) {
	cs := withDataClaims(newCS(1))
	cs.Spec.ScaleStrategy.EnablePVCReuse = true
	f := newFixture(t, fixtureOption{}, cs, revisionOf(t, cs, 1), claimFor(cs, "zzzzz"))
	f.sync(cs)
	pods := f.createdPods()
	if len(pods) != 1 || pods[0].Name != "cs-zzzzz" {
		t.Fatalf("created %v, want cs-zzzzz, the ID of the free claim", podNamesOf(pods))
	}
	if claims := f.createdClaims(); len(claims) != 0 {
		t.Errorf("created claims %v although the pod's claim exists", claims)
	}
}

func TestClaimOfAPodNameStillTakenIsNotReused(t *testing.T) {
	cs := withDataClaims(newCS(1))
	cs.Spec.ScaleStrategy.EnablePVCReuse = true
	revision := revisionOf(t, cs, 1)
	// The pod of ID zzzzz is still terminating, well past its deletion deadline (a lost
	// node).
	old := newPod(cs, "zzzzz", revision)
	old.DeletionTimestamp = ptr.To(metav1.NewTime(t0.Add(-terminatingNameWait - time.Second)))
	f := newFixture(t, fixtureOption{}, cs, revision, claimFor(cs, "zzzzz"), old)
	f.sync(cs)
	pods := f.createdPods()
	if len(pods) != 1 || pods[0].Name == "cs-zzzzz" {
		t.Errorf("created %v; must not take the name of a pod that still exists", podNamesOf(pods))
	}
}

// A finished pod (evicted, say) keeps its name for good: its claim's ID is given up at once.
func TestClaimOfAFinishedPodIsNotReused(t *testing.T) {
	cs := withDataClaims(newCS(1))
	cs.Spec.ScaleStrategy.EnablePVCReuse = true
	revision := revisionOf(t, cs, 1)
	old := newPod(cs, "zzzzz", revision)
	old.Status.Phase = corev1.PodFailed
	f := newFixture(t, fixtureOption{}, cs, revision, claimFor(cs, "zzzzz"), old)
	f.sync(cs)
	if pods := f.createdPods(); len(pods) != 1 || pods[0].Name == "cs-zzzzz" {
		t.Errorf("created %v, want one pod under a fresh instance ID", podNamesOf(pods))
	}
}

// The only missing pod waits for its claim's pod to go: nothing is created, nothing
// updated, and the CloneSet is looked at again once the pod should be gone.
func TestOnlyMissingPodWaitsForThePodBeingDeleted(t *testing.T) {
	cs := withDataClaims(newCS(1))
	cs.Spec.ScaleStrategy.EnablePVCReuse = true
	revision := revisionOf(t, cs, 1)
	old := newPod(cs, "zzzzz", revision)
	old.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	f := newFixture(t, fixtureOption{}, cs, revision, claimFor(cs, "zzzzz"), old)
	f.sync(cs)
	if pods := f.createdPods(); len(pods) != 0 {
		t.Errorf("created %v while cs-zzzzz goes, want none", podNamesOf(pods))
	}
	want := queuetest.Delayed{Key: key(cs), Delay: terminatingNameWait}
	if delayed := f.queue.Delayed(); !slices.Contains(delayed, want) {
		t.Errorf("queued later %v, want %v", delayed, want)
	}
}

// A pod being deleted gives its name back soon: its reusable claim waits for it, no pod
// is created in its stead (OpenKruise's creates under that name fail until it is gone), and
// once it is gone its replacement takes its instance ID and claim. A second missing pod,
// with no claim to wait for, is created at once.
func TestClaimOfAPodBeingDeletedWaitsForIt(t *testing.T) {
	cs := withDataClaims(newCS(2))
	cs.Spec.ScaleStrategy.EnablePVCReuse = true
	revision := revisionOf(t, cs, 1)
	old := newPod(cs, "zzzzz", revision)
	old.DeletionTimestamp = ptr.To(metav1.NewTime(t0.Add(30 * time.Second)))
	f := newFixture(t, fixtureOption{}, cs, revision, claimFor(cs, "zzzzz"), old)
	f.sync(cs)
	pods := f.createdPods()
	if len(pods) != 1 || pods[0].Name == "cs-zzzzz" {
		t.Fatalf("created %v, want one pod, under a fresh instance ID, while cs-zzzzz goes", podNamesOf(pods))
	}
	if patches := f.podPatches(); len(patches) != 0 || len(f.podStatusUpdates()) != 0 {
		t.Errorf("pods were updated while a scale-up waits: %v", patches)
	}
	want := queuetest.Delayed{Key: key(cs), Delay: 30*time.Second + terminatingNameWait}
	if delayed := f.queue.Delayed(); !slices.Contains(delayed, want) {
		t.Errorf("queued later %v, want %v", delayed, want)
	}

	// cs-zzzzz is gone, the pod created above runs.
	created := newPod(cs, pods[0].Labels[appsv1beta1.CloneSetInstanceID], revision)
	f = newFixture(t, fixtureOption{}, cs, revision, claimFor(cs, "zzzzz"), claimFor(cs, clonesetutil.InstanceID(created)), created)
	f.sync(cs)
	if again := f.createdPods(); len(again) != 1 || again[0].Name != "cs-zzzzz" {
		t.Errorf("created %v once the pod was gone, want cs-zzzzz, the ID of its claim", podNamesOf(again))
	}
	if claims := f.createdClaims(); len(claims) != 0 {
		t.Errorf("created claims %v although the pod's claim exists", claims)
	}
}

func TestUnusedClaimsAreCleanedUpWithoutReuse(t *testing.T) {
	cs := withDataClaims(newCS(1))
	revision := revisionOf(t, cs, 1)
	running := newPod(cs, "aaaaa", revision)
	finished := newPod(cs, "bbbbb", revision)
	finished.Status.Phase = corev1.PodFailed
	f := newFixture(t, fixtureOption{}, cs, revision, running, finished,
		claimFor(cs, "aaaaa"), claimFor(cs, "bbbbb"), claimFor(cs, "ccccc"))
	f.sync(cs)

	if deleted := f.deleted("persistentvolumeclaims"); !slices.Equal(deleted, []string{"data-cs-ccccc"}) {
		t.Errorf("deleted claims %v, want data-cs-ccccc (no pod)", deleted)
	}
	updates := f.actions("update", "persistentvolumeclaims")
	if len(updates) != 1 {
		t.Fatalf("updated %d claims, want the finished pod's", len(updates))
	}
	handed := updates[0].(clienttesting.UpdateAction).GetObject().(*corev1.PersistentVolumeClaim)
	ref := metav1.GetControllerOf(handed)
	if handed.Name != "data-cs-bbbbb" || len(handed.OwnerReferences) != 1 || ref == nil || ref.Kind != "Pod" || ref.APIVersion != "v1" || ref.UID != finished.UID {
		t.Errorf("claim %s owner references %+v, want only the finished pod as controller", handed.Name, handed.OwnerReferences)
	}
	// The replacement of the finished pod gets a fresh ID and a claim of its own.
	if pods := f.createdPods(); len(pods) != 0 {
		t.Errorf("created %v; one running pod is all replicas 1 wants", podNamesOf(pods))
	}
}

func TestScaleDownDeletesTheWorstPodsAndTheirClaims(t *testing.T) {
	cs := withDataClaims(newCS(3))
	revision := revisionOf(t, cs, 1)
	pending := newPod(cs, "ppppp", revision)
	pending.Status.Phase = corev1.PodPending
	unready := notReady(newPod(cs, "nnnnn", revision))
	cheap := newPod(cs, "ccccc", revision)
	cheap.Annotations[podutil.PodDeletionCostAnnotation] = "-10"
	keep := []*corev1.Pod{newPod(cs, "kkkkk", revision), newPod(cs, "lllll", revision), newPod(cs, "mmmmm", revision)}
	objs := append(podsOf(append(keep, pending, unready, cheap)...), cs, revision)
	for _, pod := range append(keep, pending, unready, cheap) {
		objs = append(objs, claimFor(cs, pod.Labels[appsv1beta1.CloneSetInstanceID]))
	}
	f := newFixture(t, fixtureOption{}, objs...)
	f.sync(cs)

	if deleted := f.deleted("pods"); !slices.Equal(deleted, []string{"cs-ccccc", "cs-nnnnn", "cs-ppppp"}) {
		t.Errorf("deleted pods %v, want the pending, the unready and the cheap one", deleted)
	}
	if deleted := f.deleted("persistentvolumeclaims"); !slices.Equal(deleted, []string{"data-cs-ccccc", "data-cs-nnnnn", "data-cs-ppppp"}) {
		t.Errorf("deleted claims %v, want those of the deleted pods", deleted)
	}
	if n := countEvents(f.events(), "Normal SuccessfulDelete succeed to delete pod cs-"); n != 3 {
		t.Errorf("%d SuccessfulDelete events, want 3", n)
	}
}

func TestScaleDownSpreadsOverNodes(t *testing.T) {
	cs := newCS(2)
	revision := revisionOf(t, cs, 1)
	a, b, c := newPod(cs, "aaaaa", revision), newPod(cs, "bbbbb", revision), newPod(cs, "ccccc", revision)
	c.Spec.NodeName = "n2"
	f := newFixture(t, fixtureOption{}, cs, revision, a, b, c)
	f.sync(cs)
	if deleted := f.deleted("pods"); len(deleted) != 1 || deleted[0] == "cs-ccccc" {
		t.Errorf("deleted %v, want one of the two pods sharing node n1", deleted)
	}
}

func TestPodsToDeleteAreReplaced(t *testing.T) {
	cs := newCS(3)
	revision := revisionOf(t, cs, 1)
	pods := []*corev1.Pod{newPod(cs, "aaaaa", revision), newPod(cs, "bbbbb", revision), newPod(cs, "ccccc", revision)}
	cs.Spec.ScaleStrategy.PodsToDelete = []string{"cs-bbbbb"}
	f := newFixture(t, fixtureOption{}, append(podsOf(pods...), cs, revision)...)
	f.sync(cs)
	if deleted := f.deleted("pods"); !slices.Equal(deleted, []string{"cs-bbbbb"}) {
		t.Errorf("deleted %v, want exactly cs-bbbbb", deleted)
	}
	if created := f.createdPods(); len(created) != 0 {
		t.Errorf("created %v in the same sync", podNamesOf(created))
	}

	// Once it is gone, its replacement is created and its name dropped from podsToDelete.
	f2 := newFixture(t, fixtureOption{}, append(podsOf(pods[0], pods[2]), cs, revision)...)
	f2.sync(cs)
	if created := f2.createdPods(); len(created) != 1 {
		t.Errorf("created %d pods, want the replacement", len(created))
	}
	updates := f2.actions("update", "clonesets")
	if len(updates) != 1 || len(updates[0].(clienttesting.UpdateAction).GetObject().(*appsv1beta1.CloneSet).Spec.ScaleStrategy.PodsToDelete) != 0 {
		t.Errorf("spec updates %v, want podsToDelete emptied", updates)
	}
}

func TestSpecifiedDeleteWithScaleDownDeletesExactlyThatPod(t *testing.T) {
	cs := newCS(2)
	revision := revisionOf(t, cs, 1)
	victim := withLabel(newPod(cs, "bbbbb", revision), appsv1beta1.SpecifiedDeleteKey, "true")
	f := newFixture(t, fixtureOption{}, cs, revision, newPod(cs, "aaaaa", revision), victim, notReady(newPod(cs, "ccccc", revision)))
	f.sync(cs)
	if deleted := f.deleted("pods"); !slices.Equal(deleted, []string{"cs-bbbbb"}) {
		t.Errorf("deleted %v, want exactly the labelled pod", deleted)
	}
}

func TestReadyPodsAreDeletedWithinMaxUnavailable(t *testing.T) {
	cs := newCS(5) // maxUnavailable 20% of 5: 1
	revision := revisionOf(t, cs, 1)
	var pods []*corev1.Pod
	for _, id := range []string{"aaaaa", "bbbbb", "ccccc", "ddddd", "fffff"} {
		pods = append(pods, newPod(cs, id, revision))
	}
	cs.Spec.ScaleStrategy.PodsToDelete = []string{"cs-aaaaa", "cs-bbbbb"}
	f := newFixture(t, fixtureOption{}, append(podsOf(pods...), cs, revision)...)
	f.sync(cs)
	if deleted := f.deleted("pods"); len(deleted) != 1 {
		t.Errorf("deleted %v, want one ready pod at a time", deleted)
	}
}

func hookedCS(replicas int32, markNotReady bool) *appsv1beta1.CloneSet {
	cs := newCS(replicas)
	cs.Spec.Lifecycle = &appsv1beta1.Lifecycle{PreDelete: &appsv1beta1.LifecycleHook{
		LabelsHandler: map[string]string{"hold": "true"}, MarkPodNotReady: markNotReady,
	}}
	return cs
}

func TestPreDeleteHookHoldsPods(t *testing.T) {
	cs := hookedCS(1, false)
	revision := revisionOf(t, cs, 1)
	kept := newPod(cs, "aaaaa", revision)
	hooked := withLabel(newPod(cs, "bbbbb", revision), "hold", "true")
	hooked.CreationTimestamp = metav1.NewTime(t0) // newer: chosen
	f := newFixture(t, fixtureOption{}, cs, revision, kept, hooked)
	f.sync(cs)

	if deleted := f.deleted("pods"); len(deleted) != 0 {
		t.Errorf("deleted %v although the preDelete hook holds the pod", deleted)
	}
	patches := f.podPatches()["cs-bbbbb"]
	if len(patches) != 1 || !strings.Contains(patches[0], `"lifecycle.apps.kruise.io/state":"PreparingDelete"`) {
		t.Errorf("patches of the hooked pod = %v, want PreparingDelete", patches)
	}

	// Released by its hook, a PreparingDelete pod is deleted.
	released := newPod(cs, "bbbbb", revision)
	released.Labels[appsv1beta1.LifecycleStateKey] = string(appsv1beta1.LifecycleStatePreparingDelete)
	f = newFixture(t, fixtureOption{}, cs, revision, kept, released)
	f.sync(cs)
	if deleted := f.deleted("pods"); !slices.Equal(deleted, []string{"cs-bbbbb"}) {
		t.Errorf("deleted %v, want the released pod", deleted)
	}
}

func TestPreDeleteMarksPodNotReady(t *testing.T) {
	cs := hookedCS(0, true)
	revision := revisionOf(t, cs, 1)
	pod := withLabel(newPod(cs, "aaaaa", revision), "hold", "true")
	pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: appsv1beta1.KruisePodReadyConditionType})
	f := newFixture(t, fixtureOption{}, cs, revision, pod)
	f.sync(cs)
	updates := f.podStatusUpdates()
	if len(updates) != 1 {
		t.Fatalf("%d pod status writes, want the not-ready mark", len(updates))
	}
	var found bool
	for _, cond := range updates[0].Status.Conditions {
		if cond.Type == appsv1beta1.KruisePodReadyConditionType {
			found = cond.Status == corev1.ConditionFalse && cond.Message == `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`
		}
	}
	if !found {
		t.Errorf("KruisePodReady conditions = %+v, want False with the preDelete mark", updates[0].Status.Conditions)
	}
}

func TestScaleUpCancelsPendingDeletion(t *testing.T) {
	cs := hookedCS(2, false)
	revision := revisionOf(t, cs, 1)
	held := withLabel(newPod(cs, "bbbbb", revision), "hold", "true")
	held.Labels[appsv1beta1.LifecycleStateKey] = string(appsv1beta1.LifecycleStatePreparingDelete)
	f := newFixture(t, fixtureOption{}, cs, revision, newPod(cs, "aaaaa", revision), held)
	f.sync(cs)
	patches := f.podPatches()["cs-bbbbb"]
	if len(patches) != 1 || !strings.Contains(patches[0], `"lifecycle.apps.kruise.io/state":"PreparingNormal"`) {
		t.Errorf("patches = %v, want the held pod back to PreparingNormal", patches)
	}
	if created := f.createdPods(); len(created) != 0 {
		t.Errorf("created %v instead of reusing the held pod", podNamesOf(created))
	}
}

func TestExcludePreparingDeleteCreatesReplacements(t *testing.T) {
	for _, tc := range []struct {
		name string
		cs   func() *appsv1beta1.CloneSet
		flag bool
	}{
		{"field", func() *appsv1beta1.CloneSet {
			cs := hookedCS(1, true)
			cs.Spec.ScaleStrategy.ExcludePreparingDelete = true
			return cs
		}, false},
		{"v1alpha1 label", func() *appsv1beta1.CloneSet {
			return withLabel(hookedCS(1, true), appsv1beta1.CloneSetScalingExcludePreparingDeleteKey, "true")
		}, false},
		{"flag", func() *appsv1beta1.CloneSet { return hookedCS(1, true) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := tc.cs()
			revision := revisionOf(t, cs, 1)
			held := withLabel(newPod(cs, "bbbbb", revision), "hold", "true")
			held.Labels[appsv1beta1.LifecycleStateKey] = string(appsv1beta1.LifecycleStatePreparingDelete)
			held.Labels[appsv1beta1.SpecifiedDeleteKey] = "true"
			f := newFixture(t, fixtureOption{excludePreparingDelete: tc.flag}, cs, revision, held)
			f.sync(cs)
			if created := f.createdPods(); len(created) != 1 {
				t.Errorf("created %d pods, want the replacement of the held one", len(created))
			}
		})
	}
}

func TestScaleUpLimitedByScaleMaxUnavailable(t *testing.T) {
	cs := newCS(3)
	cs.Spec.ScaleStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	revision := revisionOf(t, cs, 1)
	f := newFixture(t, fixtureOption{}, cs, revision, notReady(newPod(cs, "aaaaa", revision)))
	f.sync(cs)
	if created := f.createdPods(); len(created) != 0 {
		t.Errorf("created %v while a pod is unavailable and maxUnavailable is 1", podNamesOf(created))
	}
	if n := countEvents(f.events(), "Warning ScaleUpLimited scaleUp is limited because of scaleStrategy.maxUnavailable, limit: 0"); n != 1 {
		t.Errorf("%d ScaleUpLimited events, want 1", n)
	}
}

func TestPartitionShareIsCreatedAtTheCurrentRevision(t *testing.T) {
	old := newCS(4)
	current := revisionOf(t, old, 1)
	cs := withImage(newCS(4), "img:v2")
	cs.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(2))
	cs.Status.CurrentRevision = current.Name
	update := revisionOf(t, cs, 2)
	f := newFixture(t, fixtureOption{}, cs, current, update, newPod(old, "aaaaa", current))
	f.sync(cs)
	var atCurrent, atUpdate int
	for _, pod := range f.createdPods() {
		switch pod.Labels[appsv1beta1.ControllerRevisionHashLabelKey] {
		case current.Name:
			atCurrent++
			if pod.Spec.Containers[0].Image != "img:v1" {
				t.Errorf("pod %s at the current revision runs %s", pod.Name, pod.Spec.Containers[0].Image)
			}
		case update.Name:
			atUpdate++
			if pod.Spec.Containers[0].Image != "img:v2" {
				t.Errorf("pod %s at the update revision runs %s", pod.Name, pod.Spec.Containers[0].Image)
			}
		}
	}
	if atCurrent != 1 || atUpdate != 2 {
		t.Errorf("created %d at the current and %d at the update revision, want 1 and 2", atCurrent, atUpdate)
	}
}

func TestLeakedExpectationsAreCheckedLive(t *testing.T) {
	cs := newCS(1)
	revision := revisionOf(t, cs, 1)
	existing := newPod(cs, "bbbbb", revision)
	f := newFixture(t, fixtureOption{}, cs, revision)
	if err := f.kubeClient.Tracker().Add(existing); err != nil { // live, not cached
		t.Fatal(err)
	}
	k := key(cs)
	f.c.scaleExpectations.Expect(k, expectations.Create, podsResource, "cs-aaaaa") // lost
	f.c.scaleExpectations.Expect(k, expectations.Create, podsResource, "cs-bbbbb") // cache behind
	f.c.scaleExpectations.Expect(k, expectations.Delete, podsResource, "cs-ccccc") // gone
	before, _ := testutil.GetCounterMetricValue(scaleExpectationLeakage.WithLabelValues(testNamespace, "cs"))

	f.clock.Step(4 * time.Minute)
	f.sync(cs)
	if len(f.c.scaleExpectations.Pending(k)) != 3 {
		t.Fatalf("expectations checked before the timeout: %v", f.c.scaleExpectations.Pending(k))
	}
	f.clock.Step(2 * time.Minute)
	f.sync(cs)
	pending := f.c.scaleExpectations.Pending(k)
	if len(pending) != 1 || pending[0].Name != "cs-bbbbb" {
		t.Errorf("pending = %v, want only the pod that exists but is not cached", pending)
	}
	after, _ := testutil.GetCounterMetricValue(scaleExpectationLeakage.WithLabelValues(testNamespace, "cs"))
	if after-before != 1 {
		t.Errorf("leakage metric rose by %v, want 1", after-before)
	}
	delayed := f.queue.Delayed()
	if last := delayed[len(delayed)-1]; last.Delay != leakedExpectationsRecheck {
		t.Errorf("requeued after %v, want %v", last.Delay, leakedExpectationsRecheck)
	}
	if created := f.createdPods(); len(created) != 0 {
		t.Errorf("created %v while an expectation is pending", podNamesOf(created))
	}
}

func podNamesOf(pods []*corev1.Pod) []string {
	var names []string
	for _, pod := range pods {
		names = append(names, pod.Name)
	}
	return names
}

// TestSurplusIgnoresMaxUnavailableWithFlag is OpenKruise issue #1478: after a scale-out, the
// new pods are ready but not available until minReadySeconds pass, so they use up
// maxUnavailable, and a scale-in back deletes none of them. With
// --cloneset-scaling-surplus-ignore-max-unavailable the pods above replicas go at once.
func TestSurplusIgnoresMaxUnavailableWithFlag(t *testing.T) {
	for _, tc := range []struct {
		name        string
		flag        bool
		wantDeleted int
	}{
		{"default, as OpenKruise", false, 0},
		{"flag", true, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := newCS(5)
			cs.Spec.MinReadySeconds = 600
			cs.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
			cs.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(1))
			revision := revisionOf(t, cs, 1)
			var pods, fresh []*corev1.Pod
			for i := range 10 {
				pod := newPod(cs, strings.Repeat(string(idAlphabet[i]), 5), revision)
				if i >= 5 {
					// Ready a minute ago: not available for another nine.
					for j := range pod.Status.Conditions {
						pod.Status.Conditions[j].LastTransitionTime = metav1.NewTime(t0.Add(-time.Minute))
					}
					fresh = append(fresh, pod)
				}
				pods = append(pods, pod)
			}
			var opts []options.Option
			if tc.flag {
				opts = append(opts, WithScalingSurplusIgnoreMaxUnavailable(true))
			}
			f := newFixture(t, fixtureOption{opts: opts}, append(podsOf(pods...), cs, revision)...)
			f.sync(cs)
			deleted := f.deleted("pods")
			if len(deleted) != tc.wantDeleted {
				t.Fatalf("deleted %v, want %d pods", deleted, tc.wantDeleted)
			}
			if tc.wantDeleted > 0 && !slices.Equal(deleted, podNamesOf(fresh)) {
				t.Errorf("deleted %v, want the pods that are not available yet %v", deleted, podNamesOf(fresh))
			}
		})
	}
}

// TestSurplusFlagKeepsSpecifiedDeletesWithinMaxUnavailable: the flag concerns pods above
// replicas only; pods deleted to be replaced still go one ready pod at a time.
func TestSurplusFlagKeepsSpecifiedDeletesWithinMaxUnavailable(t *testing.T) {
	cs := newCS(5) // maxUnavailable 20% of 5: 1
	revision := revisionOf(t, cs, 1)
	var pods []*corev1.Pod
	for _, id := range []string{"aaaaa", "bbbbb", "ccccc", "ddddd", "fffff"} {
		pods = append(pods, newPod(cs, id, revision))
	}
	cs.Spec.ScaleStrategy.PodsToDelete = []string{"cs-aaaaa", "cs-bbbbb"}
	f := newFixture(t, fixtureOption{opts: []options.Option{WithScalingSurplusIgnoreMaxUnavailable(true)}}, append(podsOf(pods...), cs, revision)...)
	f.sync(cs)
	if deleted := f.deleted("pods"); len(deleted) != 1 {
		t.Errorf("deleted %v, want one ready pod at a time", deleted)
	}
}

// A pod create that got no answer (kube-apiserver crashed after it committed and logged
// the pod, or timed out) may have been carried out. The next sync reads the pod live: there,
// it waits for the cache to show it rather than create a second pod under a new name; not
// there, it creates again; when the API server does not answer that read either, it
// creates nothing and looks again soon. A refused create is simply retried.
func TestCreatesThatGotNoAnswerAreReadLive(t *testing.T) {
	apiServerDown := errors.New(`Post "https://127.0.0.1:6443/api/v1/namespaces/ns/pods": unexpected EOF`)
	for _, tc := range []struct {
		name      string
		createErr error
		landed    bool
		getErr    error // of the live read in the second sync
		// wantCreated is how many creates the second sync sends; wantPending whether the
		// first pod's expectation still waits after it.
		wantCreated int
		wantPending bool
	}{
		{name: "carried out, answer lost", createErr: apiServerDown, landed: true, wantPending: true},
		{name: "carried out, timed out", createErr: apierrors.NewTimeoutError("the commit outlasted the request", 0), landed: true, wantPending: true},
		{name: "not carried out, answer lost", createErr: apiServerDown, wantCreated: 1},
		{name: "the live read fails too", createErr: apiServerDown, landed: true, getErr: apiServerDown, wantPending: true},
		{name: "refused", createErr: apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("quota")), wantCreated: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := newCS(1)
			revision := revisionOf(t, cs, 1)
			f := newFixture(t, fixtureOption{}, cs, revision)
			var creates atomic.Int32
			f.kubeClient.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
				if creates.Add(1) > 1 {
					return false, nil, nil
				}
				if tc.landed {
					pod := action.(clienttesting.CreateAction).GetObject()
					if err := f.kubeClient.Tracker().Add(pod); err != nil {
						t.Fatal(err)
					}
				}
				return true, nil, tc.createErr
			})
			if tc.getErr != nil {
				f.kubeClient.PrependReactor("get", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, tc.getErr
				})
			}
			if err := f.c.syncCloneSet(f.ctx, key(cs)); err == nil {
				t.Fatal("the first sync succeeded although its create failed")
			}
			first := f.createdPods()
			if len(first) != 1 {
				t.Fatalf("the first sync created %d pods, want 1", len(first))
			}

			if err := f.c.syncCloneSet(f.ctx, key(cs)); err != nil {
				t.Fatalf("second sync: %v", err)
			}
			if again := f.createdPods()[1:]; len(again) != tc.wantCreated {
				t.Errorf("the second sync created %v, want %d pods", podNamesOf(again), tc.wantCreated)
			}
			pending := slices.Contains(f.c.scaleExpectations.Pending(key(cs)),
				expectations.Expected{Action: expectations.Create, Resource: podsResource, Name: first[0].Name})
			if pending != tc.wantPending {
				t.Errorf("the first pod's expectation pending: %v, want %v (pending: %v)", pending, tc.wantPending, f.c.scaleExpectations.Pending(key(cs)))
			}
			unanswered := f.c.scaleExpectations.PendingUnanswered(key(cs))
			if wantUnanswered := tc.getErr != nil; (len(unanswered) > 0) != wantUnanswered {
				t.Errorf("still to be read live: %v, want some: %v", unanswered, wantUnanswered)
			}
			if tc.getErr != nil {
				delayed := f.queue.Delayed()
				if last := delayed[len(delayed)-1]; last.Delay != unansweredRecheck {
					t.Errorf("requeued after %v, want %v", last.Delay, unansweredRecheck)
				}
			}
		})
	}
}
