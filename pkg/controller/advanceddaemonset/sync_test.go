package advanceddaemonset

import (
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/advanceddaemonset/daemonsetutil"
	"github.com/bosun-dev/bosun/pkg/controller/hash"
	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
)

func TestSyncCreatesOnePodPerEligibleNode(t *testing.T) {
	ds := newDS()
	tainted := newNode("n3")
	tainted.Spec.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}
	cordoned := newNode("n2")
	cordoned.Spec.Unschedulable = true
	f := newFixture(t, fixtureOption{}, ds, revisionOf(t, ds, 1), newNode("n1"), cordoned, tainted)
	f.sync(ds)

	if got := f.createdNodes(); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Fatalf("pods created on %v, want [n1 n2]", got)
	}
	pod := f.createdPods()[0]
	if pod.GenerateName != "ds-" || pod.Labels[appsv1beta1.ControllerRevisionHashLabelKey] != hashOf(ds) {
		t.Errorf("pod metadata = %+v", pod.ObjectMeta)
	}
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.APIVersion != "apps.kruise.io/v1beta1" || ref.Kind != "DaemonSet" || ref.UID != ds.UID {
		t.Errorf("controller ref = %+v", ref)
	}
	if len(pod.Spec.Tolerations) != 6 {
		t.Errorf("tolerations = %v, want the 6 defaults", pod.Spec.Tolerations)
	}
	if len(pod.Spec.ReadinessGates) != 0 {
		t.Errorf("readiness gates on a Standard DaemonSet: %v", pod.Spec.ReadinessGates)
	}
	if status := f.lastStatus(); status == nil || status.DesiredNumberScheduled != 2 || status.ObservedGeneration != 0 {
		// Creates leave expectations open, so the status of this sync has no observedGeneration.
		t.Errorf("status = %+v", status)
	}
	if !hasEvent(f.events(), "Normal SuccessfulCreate") {
		t.Error("no SuccessfulCreate event")
	}
}

func TestSyncRespectsBurstAndExpectations(t *testing.T) {
	ds := newDS()
	ds.Spec.BurstReplicas = ptr.To(intstr.FromInt32(2))
	objects := []runtime.Object{ds, revisionOf(t, ds, 1)}
	for _, name := range []string{"n1", "n2", "n3", "n4", "n5"} {
		objects = append(objects, newNode(name))
	}
	f := newFixture(t, fixtureOption{}, objects...)
	f.sync(ds)
	if got := len(f.createdPods()); got != 2 {
		t.Fatalf("created %d pods, want burstReplicas 2", got)
	}
	// The informer has not shown the creates: the next sync must not create again.
	f.sync(ds)
	if got := len(f.createdPods()); got != 2 {
		t.Fatalf("created %d pods while expectations were open", got)
	}
}

func TestSyncDeletesPodsOnNodesThatNoLongerTolerateThem(t *testing.T) {
	ds := newDS()
	evicting, blocking := newNode("n1"), newNode("n2")
	evicting.Spec.Taints = []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectNoExecute}}
	blocking.Spec.Taints = []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectNoSchedule}}
	h := hashOf(ds)
	f := newFixture(t, fixtureOption{}, ds, revisionOf(t, ds, 1), evicting, blocking,
		newPod("p1", ds, h, "n1"), newPod("p2", ds, h, "n2"))
	f.sync(ds)
	if got := f.deletedPods(); !slices.Equal(got, []string{"p1"}) {
		t.Errorf("deleted %v, want [p1] (NoSchedule keeps running pods)", got)
	}
	if status := f.lastStatus(); status == nil || status.NumberMisscheduled != 2 || status.DesiredNumberScheduled != 0 {
		t.Errorf("status = %+v", status)
	}
}

func TestSyncDeletesSurplusAndVanishedNodePods(t *testing.T) {
	ds := newDS()
	h := hashOf(ds)
	older, newer := newPod("older", ds, h, "n1"), newPod("newer", ds, h, "n1")
	newer.CreationTimestamp = metav1.NewTime(t0.Add(-time.Minute))
	pending := newPod("pending", ds, h, "")
	daemonsetutil.BindToNode(&pending.Spec, "gone")
	f := newFixture(t, fixtureOption{}, ds, revisionOf(t, ds, 1), newNode("n1"), older, newer, pending)
	f.sync(ds)
	if got := f.deletedPods(); !slices.Equal(got, []string{"newer", "pending"}) {
		t.Errorf("deleted %v, want [newer pending]", got)
	}
}

func TestFailedPodIsDeletedWithBackoff(t *testing.T) {
	ds := newDS()
	h := hashOf(ds)
	failed := newPod("failed-1", ds, h, "n1")
	failed.Status.Phase = corev1.PodFailed
	f := newFixture(t, fixtureOption{}, ds, revisionOf(t, ds, 1), newNode("n1"), failed)
	f.sync(ds)
	if got := f.deletedPods(); !slices.Equal(got, []string{"failed-1"}) {
		t.Fatalf("deleted %v, want [failed-1]", got)
	}
	if !hasEvent(f.events(), "Warning FailedDaemonPod Found failed daemon pod ns/failed-1 on node n1") {
		t.Error("no FailedDaemonPod event")
	}

	// The pod is gone and its replacement failed at once: its deletion waits for the backoff.
	if err := f.podIndexer.Delete(failed); err != nil {
		t.Fatal(err)
	}
	f.c.deletePod(f.ctx, failed)
	again := newPod("failed-2", ds, h, "n1")
	again.Status.Phase = corev1.PodFailed
	f.cacheAdd(again)
	f.queue.Reset()
	f.sync(ds)
	if got := f.deletedPods(); len(got) != 1 {
		t.Errorf("deleted %v while backing off", got)
	}
	if len(f.createdPods()) != 0 {
		t.Error("created a pod next to the failed one")
	}
	delays := f.queue.Delayed()
	if len(delays) == 0 || delays[len(delays)-1].Delay > time.Second {
		t.Errorf("requeues = %v, want one after at most 1s", delays)
	}

	f.clock.Step(1500 * time.Millisecond)
	f.sync(ds)
	if got := f.deletedPods(); !slices.Equal(got, []string{"failed-1", "failed-2"}) {
		t.Errorf("deleted %v after the backoff, want both", got)
	}
}

func TestProgressiveCreationHonoursPartition(t *testing.T) {
	ds := newDS()
	ds.Annotations = map[string]string{appsv1beta1.ProgressiveCreatePodAnnotation: "true"}
	ds.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(2))
	objects := []runtime.Object{ds, revisionOf(t, ds, 1)}
	for _, name := range []string{"e", "d", "c", "b", "a"} {
		objects = append(objects, newNode(name))
	}
	f := newFixture(t, fixtureOption{}, objects...)
	f.sync(ds)
	if got := f.createdNodes(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("pods created on %v, want the 3 smallest node names", got)
	}

	// Without the annotation the partition does not hold back creation.
	ds2 := newDS()
	ds2.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(2))
	objects[0], objects[1] = ds2, revisionOf(t, ds2, 1)
	f2 := newFixture(t, fixtureOption{}, objects...)
	f2.sync(ds2)
	if got := len(f2.createdPods()); got != 5 {
		t.Errorf("created %d pods without progressive creation, want 5", got)
	}

	// The v1beta1 field asks for it too, and decides over the annotation when set.
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		scale       *appsv1beta1.DaemonSetScaleStrategy
		want        []string
	}{
		{"field true", nil, &appsv1beta1.DaemonSetScaleStrategy{PartitionedScaling: true}, []string{"a", "b", "c"}},
		{"field false over annotation true", map[string]string{appsv1beta1.ProgressiveCreatePodAnnotation: "true"}, &appsv1beta1.DaemonSetScaleStrategy{}, []string{"a", "b", "c", "d", "e"}},
		{"field true over annotation false", map[string]string{appsv1beta1.ProgressiveCreatePodAnnotation: "false"}, &appsv1beta1.DaemonSetScaleStrategy{PartitionedScaling: true}, []string{"a", "b", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := newDS()
			ds.Annotations = tc.annotations
			ds.Spec.ScaleStrategy = tc.scale
			ds.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(2))
			objects[0], objects[1] = ds, revisionOf(t, ds, 1)
			f := newFixture(t, fixtureOption{}, objects...)
			f.sync(ds)
			if got := f.createdNodes(); !slices.Equal(got, tc.want) {
				t.Errorf("pods created on %v, want %v", got, tc.want)
			}
		})
	}
}

// rolled returns ds with a new image, and the revisions of the old and new template.
func rolled(t *testing.T, ds *appsv1beta1.DaemonSet, image string) (*appsv1beta1.DaemonSet, *appsv1.ControllerRevision, *appsv1.ControllerRevision) {
	t.Helper()
	oldRevision := revisionOf(t, ds, 1)
	next := ds.DeepCopy()
	next.Generation++
	next.Spec.Template.Spec.Containers[0].Image = image
	return next, oldRevision, revisionOf(t, next, 2)
}

func TestRollingUpdateDeletesWithinMaxUnavailable(t *testing.T) {
	old := newDS()
	ds, r1, r2 := rolled(t, old, "img:v2")
	f := newFixture(t, fixtureOption{}, ds, r1, r2, newNode("n1"), newNode("n2"), newNode("n3"),
		newPod("p1", old, hashOf(old), "n1"), newPod("p2", old, hashOf(old), "n2"), newPod("p3", old, hashOf(old), "n3"))
	f.sync(ds)
	if got := f.deletedPods(); !slices.Equal(got, []string{"p3"}) {
		t.Errorf("deleted %v, want [p3] (largest node name first, maxUnavailable 1)", got)
	}
	cond := f.lastStatus().Conditions
	if len(cond) != 1 || cond[0].Reason != ReasonRollingUpdate || cond[0].Message != "0 of 3 pods updated to revision "+hashOf(ds) {
		t.Errorf("conditions = %+v", cond)
	}
}

func TestRollingUpdateWithPreDeleteHook(t *testing.T) {
	old := newDS()
	ds, r1, r2 := rolled(t, old, "img:v2")
	ds.Spec.Lifecycle = &appsv1beta1.Lifecycle{PreDelete: &appsv1beta1.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}, MarkPodNotReady: true}}
	held := newPod("p1", old, hashOf(old), "n1")
	held.Labels["hold"] = "true"
	held.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: appsv1beta1.KruisePodReadyConditionType}}
	held.Status.Conditions = append(held.Status.Conditions, corev1.PodCondition{Type: appsv1beta1.KruisePodReadyConditionType, Status: corev1.ConditionTrue})
	f := newFixture(t, fixtureOption{}, ds, r1, r2, newNode("n1"), held)
	f.sync(ds)
	if got := f.deletedPods(); len(got) != 0 {
		t.Fatalf("deleted %v although the hook holds the pod", got)
	}
	patches := f.actions("patch", "pods")
	if len(patches) != 1 || !strings.Contains(string(patches[0].(clienttesting.PatchAction).GetPatch()), `"lifecycle.apps.kruise.io/state":"PreparingDelete"`) {
		t.Fatalf("patches = %v", patches)
	}
	var marked *corev1.Pod
	for _, a := range f.actions("update", "pods") {
		if a.GetSubresource() == "status" {
			marked = a.(clienttesting.UpdateAction).GetObject().(*corev1.Pod)
		}
	}
	if marked == nil {
		t.Fatal("pod was not marked not ready")
	}
	cond := kruisepod.PodCondition(marked, appsv1beta1.KruisePodReadyConditionType)
	if cond.Status != corev1.ConditionFalse || cond.Message != `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]` {
		t.Errorf("KruisePodReady = %+v", cond)
	}
	if ready := kruisepod.PodCondition(marked, corev1.PodReady); ready.Status != corev1.ConditionFalse {
		t.Errorf("Ready = %+v, want False", ready)
	}
	// Until the informer shows the patch, the DaemonSet is not managed again.
	if ok, _ := f.c.expectationsSatisfied(f.ctx, key(ds)); ok {
		t.Error("pod update expectations satisfied before the informer showed the patch")
	}

	// Once the hook lets go, the pod is deleted.
	released := held.DeepCopy()
	released.ResourceVersion = "100"
	delete(released.Labels, "hold")
	released.Labels[appsv1beta1.LifecycleStateKey] = string(appsv1beta1.LifecycleStatePreparingDelete)
	f.c.podUpdates.Forget(key(ds))
	if err := f.podIndexer.Update(released); err != nil {
		t.Fatal(err)
	}
	f.sync(ds)
	if got := f.deletedPods(); !slices.Equal(got, []string{"p1"}) {
		t.Errorf("deleted %v after release, want [p1]", got)
	}
}

func TestSurgeCreatesNextToOldPodThenDeletesIt(t *testing.T) {
	old := newDS()
	old.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(1))
	old.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
	old.Spec.MinReadySeconds = 30
	ds, r1, r2 := rolled(t, old, "img:v2")
	f := newFixture(t, fixtureOption{}, ds, r1, r2, newNode("n1"), newNode("n2"),
		newPod("p1", old, hashOf(old), "n1"), newPod("p2", old, hashOf(old), "n2"))
	f.sync(ds)
	if got := f.createdNodes(); !slices.Equal(got, []string{"n2"}) {
		t.Fatalf("surged on %v, want [n2]", got)
	}
	if len(f.deletedPods()) != 0 {
		t.Fatal("deleted an old pod before its replacement was available")
	}

	// The new pod on n2 is ready but not yet available: the old one stays, and the
	// DaemonSet is looked at again when it becomes available.
	fresh := newPod("new2", ds, hashOf(ds), "n2")
	fresh.CreationTimestamp = metav1.NewTime(t0)
	fresh.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(-10 * time.Second))
	f2 := newFixture(t, fixtureOption{}, ds, r1, r2, newNode("n1"), newNode("n2"),
		newPod("p1", old, hashOf(old), "n1"), newPod("p2", old, hashOf(old), "n2"), fresh)
	f2.sync(ds)
	if len(f2.deletedPods()) != 0 {
		t.Fatalf("deleted %v before the new pod was available", f2.deletedPods())
	}
	delays := f2.queue.Delayed()
	if len(delays) == 0 || delays[0].Delay != 5*time.Second {
		t.Errorf("requeues = %v, want one after 5s (mixed revisions on n2)", delays)
	}
	f2.clock.Step(25 * time.Second)
	f2.sync(ds)
	if got := f2.deletedPods(); !slices.Equal(got, []string{"p2"}) {
		t.Errorf("deleted %v once the new pod was available, want [p2]", got)
	}
}

// When the deletes manage sends show in the cache before the rollout's turn (as they do at
// once for pods no kubelet runs), the rollout decides on the pods as they are then: an old
// pod manage deleted because its replacement was available is not deleted a second time.
func TestSurgeDeletesAnOldPodOnceWhenItsDeleteShowsAtOnce(t *testing.T) {
	old := newDS()
	old.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(1))
	old.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
	ds, r1, r2 := rolled(t, old, "img:v2")
	oldPod, newPod := newPod("old1", old, hashOf(old), "n1"), newPod("new1", ds, hashOf(ds), "n1")
	newPod.CreationTimestamp = metav1.NewTime(t0)
	f := newFixture(t, fixtureOption{}, ds, r1, r2, newNode("n1"), oldPod, newPod)
	f.kubeClient.PrependReactor("delete", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		name := action.(clienttesting.DeleteAction).GetName()
		if obj, exists, _ := f.podIndexer.GetByKey(testNamespace + "/" + name); exists {
			if err := f.podIndexer.Delete(obj); err != nil {
				t.Error(err)
			}
			f.c.deletePod(f.ctx, obj)
		}
		return false, nil, nil
	})
	f.sync(ds)
	if got := f.deletedPods(); !slices.Equal(got, []string{"old1"}) {
		t.Errorf("deleted %v, want old1 once", got)
	}
}

func TestInPlaceUpdate(t *testing.T) {
	old := newDS()
	old.Spec.UpdateStrategy.RollingUpdate.Type = appsv1beta1.InplaceRollingUpdateType
	ds, r1, r2 := rolled(t, old, "img:v2")
	pod := newPod("p1", old, hashOf(old), "n1")
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: appsv1beta1.InPlaceUpdateReady}}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: appsv1beta1.InPlaceUpdateReady, Status: corev1.ConditionTrue})
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Image: "img:v1", ImageID: "sha-1"}}
	f := newFixture(t, fixtureOption{}, ds, r1, r2, newNode("n1"), pod)
	f.sync(ds)

	if got := f.deletedPods(); len(got) != 0 {
		t.Fatalf("deleted %v instead of updating in place", got)
	}
	var updated, statusUpdate *corev1.Pod
	for _, a := range f.actions("update", "pods") {
		obj := a.(clienttesting.UpdateAction).GetObject().(*corev1.Pod)
		if a.GetSubresource() == "status" {
			statusUpdate = obj
		} else {
			updated = obj
		}
	}
	if statusUpdate == nil || updated == nil {
		t.Fatalf("status update %v, update %v", statusUpdate != nil, updated != nil)
	}
	if cond := kruisepod.PodCondition(statusUpdate, appsv1beta1.InPlaceUpdateReady); cond.Status != corev1.ConditionFalse || cond.Reason != "StartInPlaceUpdate" {
		t.Errorf("InPlaceUpdateReady = %+v", cond)
	}
	if updated.Spec.Containers[0].Image != "img:v2" || updated.Labels[appsv1beta1.ControllerRevisionHashLabelKey] != hashOf(ds) {
		t.Errorf("updated pod = %+v", updated)
	}
	if !strings.Contains(updated.Annotations[appsv1beta1.InPlaceUpdateStateKey], `"lastContainerStatuses":{"c":{"imageID":"sha-1"}}`) {
		t.Errorf("state = %s", updated.Annotations[appsv1beta1.InPlaceUpdateStateKey])
	}
	if !hasEvent(f.events(), "Normal SuccessfulUpdatePodInPlace") {
		t.Error("no SuccessfulUpdatePodInPlace event")
	}
}

func TestInPlaceFallsBackToRecreate(t *testing.T) {
	old := newDS()
	old.Spec.UpdateStrategy.RollingUpdate.Type = appsv1beta1.InplaceRollingUpdateType
	ds := old.DeepCopy()
	ds.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
	r1 := revisionOf(t, old, 1)
	r2 := revisionOf(t, ds, 2)
	r2.Name, r2.Labels[appsv1beta1.ControllerRevisionHashLabelKey] = "ds-env", "env"
	pod := newPod("p1", old, hashOf(old), "n1")
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: appsv1beta1.InPlaceUpdateReady}}
	f := newFixture(t, fixtureOption{}, ds, r1, r2, newNode("n1"), pod)
	f.sync(ds)
	if got := f.deletedPods(); !slices.Equal(got, []string{"p1"}) {
		t.Errorf("deleted %v, want [p1] (env change cannot be done in place)", got)
	}
}

func TestInPlaceCompletionTurnsConditionTrue(t *testing.T) {
	ds := newDS()
	ds.Spec.UpdateStrategy.RollingUpdate.Type = appsv1beta1.InplaceRollingUpdateType
	pod := newPod("p1", ds, hashOf(ds), "n1")
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: appsv1beta1.InPlaceUpdateReady}}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: appsv1beta1.InPlaceUpdateReady, Status: corev1.ConditionFalse, Reason: "StartInPlaceUpdate"})
	pod.Annotations = map[string]string{appsv1beta1.InPlaceUpdateStateKey: `{"revision":"x","updateTimestamp":null,"lastContainerStatuses":{"c":{"imageID":"sha-1"}},"updateImages":true}`}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Image: "img:v0", ImageID: "sha-1"}}
	f := newFixture(t, fixtureOption{}, ds, revisionOf(t, ds, 1), newNode("n1"), pod)
	f.sync(ds)
	if len(f.actions("update", "pods")) != 0 {
		t.Fatal("condition turned True before the container restarted")
	}
	if status := f.lastStatus(); status.NumberAvailable != 0 || status.NumberReady != 1 {
		t.Errorf("status = %+v; a pod mid in-place update is not available", status)
	}

	restarted := pod.DeepCopy()
	restarted.Status.ContainerStatuses[0].ImageID = "sha-2"
	f2 := newFixture(t, fixtureOption{}, ds, revisionOf(t, ds, 1), newNode("n1"), restarted)
	f2.sync(ds)
	updates := f2.actions("update", "pods")
	if len(updates) != 1 {
		t.Fatalf("pod updates = %d, want one status update", len(updates))
	}
	written := updates[0].(clienttesting.UpdateAction).GetObject().(*corev1.Pod)
	if cond := kruisepod.PodCondition(written, appsv1beta1.InPlaceUpdateReady); cond.Status != corev1.ConditionTrue {
		t.Errorf("InPlaceUpdateReady = %+v, want True", cond)
	}
}

func TestHistoryCreatesCanonicalRevision(t *testing.T) {
	ds := newDS()
	f := newFixture(t, fixtureOption{}, ds, newNode("n1"))
	f.sync(ds)
	creates := f.actions("create", "controllerrevisions")
	if len(creates) != 1 {
		t.Fatalf("revision creates = %d", len(creates))
	}
	revision := creates[0].(clienttesting.CreateAction).GetObject().(*appsv1.ControllerRevision)
	wantHash := hash.ComputeHash(&ds.Spec.Template, nil)
	if revision.Name != "ds-"+wantHash || revision.Labels[appsv1beta1.ControllerRevisionHashLabelKey] != wantHash || revision.Revision != 1 {
		t.Errorf("revision = %s %v %d", revision.Name, revision.Labels, revision.Revision)
	}
	data, _ := kruisepod.RevisionData(&ds.Spec.Template)
	if string(revision.Data.Raw) != string(data) {
		t.Errorf("data = %s", revision.Data.Raw)
	}
	if pods := f.createdPods(); len(pods) != 1 || pods[0].Labels[appsv1beta1.ControllerRevisionHashLabelKey] != wantHash {
		t.Errorf("pods = %v", pods)
	}
}

func TestHistoryRollbackRenumbers(t *testing.T) {
	ds := newDS()
	r1 := revisionOf(t, ds, 1)
	other, _, r2 := rolled(t, ds, "img:v2")
	_ = other
	f := newFixture(t, fixtureOption{}, ds, r1, r2, newNode("n1"))
	f.sync(ds)
	if len(f.actions("create", "controllerrevisions")) != 0 {
		t.Error("created a revision on rollback")
	}
	var renumbered *appsv1.ControllerRevision
	for _, a := range f.actions("update", "controllerrevisions") {
		renumbered = a.(clienttesting.UpdateAction).GetObject().(*appsv1.ControllerRevision)
	}
	if renumbered == nil || renumbered.Name != r1.Name || renumbered.Revision != 3 {
		t.Errorf("renumbered = %+v, want %s at revision 3", renumbered, r1.Name)
	}
}

func TestHistoryCleanupKeepsLiveHashes(t *testing.T) {
	ds := newDS()
	ds.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	objects := []runtime.Object{newNode("n1")}
	var oldDS *appsv1beta1.DaemonSet
	for i, image := range []string{"img:a", "img:b", "img:c", "img:d"} {
		d := ds.DeepCopy()
		d.Spec.Template.Spec.Containers[0].Image = image
		objects = append(objects, revisionOf(t, d, int64(i+1)))
		if image == "img:a" {
			oldDS = d
		}
	}
	objects = append(objects, ds, revisionOf(t, ds, 5), newPod("p1", oldDS, hashOf(oldDS), "n1"))
	f := newFixture(t, fixtureOption{}, objects...)
	f.sync(ds)
	var deleted []string
	for _, a := range f.actions("delete", "controllerrevisions") {
		deleted = append(deleted, a.(clienttesting.DeleteAction).GetName())
	}
	slices.Sort(deleted)
	// Four old revisions, limit 1: three go, lowest numbers first, but img:a is on a live
	// pod and stays in their place.
	if want := []string{"ds-h-img-b", "ds-h-img-c", "ds-h-img-d"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted revisions %v, want %v", deleted, want)
	}
}

func TestSelectingAllIsRefused(t *testing.T) {
	ds := newDS()
	ds.Spec.Selector = &metav1.LabelSelector{}
	f := newFixture(t, fixtureOption{}, ds, newNode("n1"))
	f.sync(ds)
	if len(f.createdPods()) != 0 || !hasEvent(f.events(), "Warning SelectingAll") {
		t.Error("an empty selector must stop the sync with a SelectingAll event")
	}
}

func TestOrphanIsAdoptedNotDuplicated(t *testing.T) {
	ds := newDS()
	orphan := newPod("orphan", ds, "whatever", "n1")
	orphan.OwnerReferences = nil
	f := newFixture(t, fixtureOption{}, ds, revisionOf(t, ds, 1), newNode("n1"), orphan)
	f.sync(ds)
	if len(f.createdPods()) != 0 {
		t.Error("created a pod next to the adopted orphan")
	}
	if patches := f.actions("patch", "pods"); len(patches) != 1 || !strings.Contains(string(patches[0].(clienttesting.PatchAction).GetPatch()), `"apiVersion":"apps.kruise.io/v1beta1"`) {
		t.Errorf("adoption patches = %v", patches)
	}
}

// A takeover from OpenKruise before 1.9 or an older bosun: the pods and revisions name the
// DaemonSet in v1alpha1. They are claimed by UID and never written just to change the
// version; the rollout goes on as with references of the current version.
func TestOlderOwnerReferencesAreClaimedNotRewritten(t *testing.T) {
	old := newDS()
	ds, oldRevision, current := rolled(t, old, "img:v2")
	f := newFixture(t, fixtureOption{}, ds, withAlphaOwner(oldRevision), withAlphaOwner(current),
		newNode("n1"), newNode("n2"),
		withAlphaOwner(newPod("p-n1", ds, hashOf(ds), "n1")),
		withAlphaOwner(newPod("p-n2", old, hashOf(old), "n2")))
	f.sync(ds)
	for _, write := range [][2]string{{"patch", "pods"}, {"update", "pods"}, {"patch", "controllerrevisions"}, {"update", "controllerrevisions"}, {"create", "controllerrevisions"}} {
		if got := f.actions(write[0], write[1]); len(got) != 0 {
			t.Errorf("%s %s: %v, want none", write[0], write[1], got)
		}
	}
	if got := len(f.createdPods()); got != 0 {
		t.Errorf("created %d pods next to claimed ones, want none", got)
	}
	if got := f.deletedPods(); !slices.Equal(got, []string{"p-n2"}) {
		t.Errorf("deleted %v, want the old pod p-n2 replaced", got)
	}
	status := f.lastStatus()
	if status == nil || status.CurrentNumberScheduled != 2 || status.UpdatedNumberScheduled != 1 || status.UpdateRevision != hashOf(ds) {
		t.Errorf("status = %+v, want 2 scheduled, 1 updated, updateRevision %s", status, hashOf(ds))
	}
}

// The KruisePodReady gate and its first condition are not this controller's: the pod
// webhook adds the gate and pod-readiness-controller sets the condition, as in OpenKruise.
// With a preDelete hook that marks pods not ready, new pods come without the gate and a
// gated pod without the condition is not written.
func TestKruisePodReadyIsLeftToThePodReadinessController(t *testing.T) {
	ds := newDS()
	ds.Spec.Lifecycle = &appsv1beta1.Lifecycle{PreDelete: &appsv1beta1.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}, MarkPodNotReady: true}}
	gated := newPod("p1", ds, hashOf(ds), "n1")
	gated.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: appsv1beta1.KruisePodReadyConditionType}}
	f := newFixture(t, fixtureOption{}, ds, revisionOf(t, ds, 1), newNode("n1"), newNode("n2"), gated)
	f.sync(ds)

	if got := f.createdNodes(); !slices.Equal(got, []string{"n2"}) {
		t.Fatalf("pods created on %v, want [n2]", got)
	}
	if gates := f.createdPods()[0].Spec.ReadinessGates; len(gates) != 0 {
		t.Errorf("created pod with readiness gates %v, want none", gates)
	}
	for _, a := range f.actions("update", "pods") {
		if a.GetSubresource() != "status" {
			continue
		}
		if cond := kruisepod.PodCondition(a.(clienttesting.UpdateAction).GetObject().(*corev1.Pod), appsv1beta1.KruisePodReadyConditionType); cond != nil {
			t.Errorf("wrote KruisePodReady %+v", cond)
		}
	}
}
