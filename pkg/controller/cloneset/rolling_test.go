package cloneset

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/features"
)

// rollout is a CloneSet with n ready pods at revision v1 whose template now asks for v2.
type rollout struct {
	cs               *appsv1beta1.CloneSet
	current, update  *appsv1.ControllerRevision
	pods             []*corev1.Pod
	mutateUpdatedSet func(*appsv1beta1.CloneSet)
}

func newRollout(t *testing.T, n int32, mutate func(cs *appsv1beta1.CloneSet)) *rollout {
	t.Helper()
	old := newCS(n)
	if mutate != nil {
		mutate(old)
	}
	current := revisionOf(t, old, 1)
	cs := withImage(newCS(n), "img:v2")
	if mutate != nil {
		mutate(cs)
	}
	cs.Status.CurrentRevision = current.Name
	update := revisionOf(t, cs, 2)
	r := &rollout{cs: cs, current: current, update: update}
	for i := range n {
		r.pods = append(r.pods, newPod(old, strings.Repeat(string(idAlphabet[i]), 5), current))
	}
	return r
}

func (r *rollout) objects(extra ...runtime.Object) []runtime.Object {
	return append(append(podsOf(r.pods...), r.cs, r.current, r.update), extra...)
}

// recreated returns the names of pods labelled for deletion, sorted.
func (f *fixture) recreated() []string {
	var names []string
	for name, patches := range f.podPatches() {
		for _, p := range patches {
			if strings.Contains(p, appsv1beta1.SpecifiedDeleteKey) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return names
}

func TestRecreateRolloutWithinMaxUnavailable(t *testing.T) {
	r := newRollout(t, 4, func(cs *appsv1beta1.CloneSet) {
		cs.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	})
	f := newFixture(t, fixtureOption{}, r.objects()...)
	f.sync(r.cs)
	if recreated := f.recreated(); len(recreated) != 1 {
		t.Errorf("labelled %v for recreation, want one pod", recreated)
	}
	if n := countEvents(f.events(), "Normal SuccessfulUpdatePodReCreate successfully patch pod cs-"); n != 1 {
		t.Errorf("%d SuccessfulUpdatePodReCreate events, want 1", n)
	}
	if len(f.deleted("pods")) != 0 || len(f.createdPods()) != 0 {
		t.Error("the update step deleted or created pods itself")
	}
	status := f.lastStatus()
	if status == nil || status.UpdateRevision != r.update.Name || status.CurrentRevision != r.current.Name || status.UpdatedReplicas != 0 ||
		status.ExpectedUpdatedReplicas != 4 {
		t.Errorf("status = %+v", status)
	}
}

func TestUnavailablePodsUseUpTheBudget(t *testing.T) {
	r := newRollout(t, 4, func(cs *appsv1beta1.CloneSet) {
		cs.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	})
	// One old pod is not ready, and one updated pod is not ready either.
	notReady(r.pods[0])
	updated := notReady(newPod(r.cs, "99999", r.update))
	r.pods = r.pods[:3]
	f := newFixture(t, fixtureOption{}, r.objects(updated)...)
	f.sync(r.cs)
	// Budget 2: the unavailable updated pod takes one; the unavailable old pod goes first
	// and takes the other.
	if recreated := f.recreated(); !slices.Equal(recreated, []string{r.pods[0].Name}) {
		t.Errorf("labelled %v, want only the unready old pod %s", recreated, r.pods[0].Name)
	}
}

func TestPartitionKeepsPodsAtTheCurrentRevision(t *testing.T) {
	for _, tc := range []struct {
		partition intstr.IntOrString
		want      int
	}{
		{intstr.FromInt32(2), 2},
		{intstr.FromString("99%"), 1},
		{intstr.FromInt32(4), 0},
	} {
		r := newRollout(t, 4, func(cs *appsv1beta1.CloneSet) {
			cs.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(4))
			cs.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(tc.partition)
		})
		f := newFixture(t, fixtureOption{}, r.objects()...)
		f.sync(r.cs)
		if recreated := f.recreated(); len(recreated) != tc.want {
			t.Errorf("partition %s: labelled %v, want %d pods", tc.partition.String(), recreated, tc.want)
		}
		if status := f.lastStatus(); status == nil || status.ExpectedUpdatedReplicas != int32(tc.want) {
			t.Errorf("partition %s: status %+v, want expectedUpdatedReplicas %d", tc.partition.String(), status, tc.want)
		}
	}
}

func TestNoUpdateWhenPausedOrOnDelete(t *testing.T) {
	for name, mutate := range map[string]func(*appsv1beta1.CloneSet){
		"paused": func(cs *appsv1beta1.CloneSet) { cs.Spec.UpdateStrategy.RollingUpdate.Paused = true },
		"OnDelete": func(cs *appsv1beta1.CloneSet) {
			cs.Spec.UpdateStrategy.Type = appsv1beta1.OnDeleteCloneSetUpdateStrategyType
		},
	} {
		r := newRollout(t, 3, mutate)
		f := newFixture(t, fixtureOption{}, r.objects()...)
		f.sync(r.cs)
		if recreated := f.recreated(); len(recreated) != 0 {
			t.Errorf("%s: labelled %v", name, recreated)
		}
	}
}

func TestPausedCloneSetStillScalesFromTheCurrentRevision(t *testing.T) {
	r := newRollout(t, 3, func(cs *appsv1beta1.CloneSet) {
		cs.Spec.UpdateStrategy.RollingUpdate.Paused = true
		cs.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(1))
		cs.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(4))
	})
	r.cs.Spec.Replicas = ptr.To[int32](4)
	f := newFixture(t, fixtureOption{}, r.objects()...)
	f.sync(r.cs)
	created := f.createdPods()
	if len(created) != 1 || created[0].Labels[appsv1beta1.ControllerRevisionHashLabelKey] != r.current.Name {
		t.Errorf("created %v, want one pod at the current revision and no surge", podNamesOf(created))
	}
}

func TestSurgeCreatesBeforeDeleting(t *testing.T) {
	r := newRollout(t, 4, func(cs *appsv1beta1.CloneSet) {
		cs.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
		cs.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(1))
	})
	f := newFixture(t, fixtureOption{}, r.objects()...)
	f.sync(r.cs)
	created := f.createdPods()
	if len(created) != 1 || created[0].Labels[appsv1beta1.ControllerRevisionHashLabelKey] != r.update.Name {
		t.Errorf("created %v, want one surge pod at the update revision", podNamesOf(created))
	}
	if len(f.recreated()) != 0 || len(f.deleted("pods")) != 0 {
		t.Error("touched old pods in the sync that surged")
	}
}

func inPlace(cs *appsv1beta1.CloneSet) {
	cs.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType
	cs.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(1))
}

func TestInPlaceUpdate(t *testing.T) {
	r := newRollout(t, 2, inPlace)
	f := newFixture(t, fixtureOption{}, r.objects()...)
	f.sync(r.cs)

	statusWrites := f.podStatusUpdates()
	if len(statusWrites) != 1 {
		t.Fatalf("%d pod status writes, want the InPlaceUpdateReady condition of one pod", len(statusWrites))
	}
	cond := kruisepod.PodCondition(statusWrites[0], appsv1beta1.InPlaceUpdateReady)
	ready := kruisepod.PodCondition(statusWrites[0], corev1.PodReady)
	if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != "StartInPlaceUpdate" || ready.Status != corev1.ConditionFalse {
		t.Errorf("conditions = %+v, want InPlaceUpdateReady False (StartInPlaceUpdate) and Ready False", statusWrites[0].Status.Conditions)
	}
	updates := f.actions("update", "pods")
	if len(updates) != 1 {
		t.Fatalf("%d pod updates, want 1", len(updates))
	}
	pod := updates[0].(clienttesting.UpdateAction).GetObject().(*corev1.Pod)
	if pod.Spec.Containers[0].Image != "img:v2" || pod.Labels[appsv1beta1.ControllerRevisionHashLabelKey] != r.update.Name ||
		pod.Labels[appsv1beta1.PodTemplateHashLabelKey] != strings.TrimPrefix(r.update.Name, "cs-") ||
		pod.Labels[appsv1beta1.LifecycleStateKey] != string(appsv1beta1.LifecycleStateUpdating) {
		t.Errorf("updated pod: image %s labels %v", pod.Spec.Containers[0].Image, pod.Labels)
	}
	state, err := kruisepod.ReadInPlaceUpdateState(pod)
	if err != nil || state == nil || state.Revision != r.update.Name || state.LastContainerStatuses["c"].ImageID != "sha-img:v1" {
		t.Errorf("in-place update state = %+v, %v", state, err)
	}
	if n := countEvents(f.events(), "Normal SuccessfulUpdatePodInPlace successfully update pod "+pod.Name+" in-place(revision "+r.update.Name+")"); n != 1 {
		t.Errorf("%d SuccessfulUpdatePodInPlace events, want 1", n)
	}
	if len(f.recreated()) != 0 {
		t.Error("labelled a pod for recreation although it could be updated in place")
	}
}

// The status says what the sync saw before the update step writes pods, which at the
// client's rate limit can take seconds; the step changing no condition, it is written once.
func TestStatusIsWrittenBeforeTheUpdateStep(t *testing.T) {
	r := newRollout(t, 2, inPlace)
	f := newFixture(t, fixtureOption{}, r.objects()...)
	var writes []clienttesting.Action // both clients', in the order sent
	record := func(a clienttesting.Action) (bool, runtime.Object, error) {
		if verb := a.GetVerb(); verb != "get" && verb != "list" && verb != "watch" {
			writes = append(writes, a)
		}
		return false, nil, nil
	}
	f.kubeClient.PrependReactor("*", "*", record)
	f.bosunClient.PrependReactor("*", "*", record)
	f.sync(r.cs)
	statusAt, podAt, statusWrites := -1, -1, 0
	for i, a := range writes {
		switch {
		case a.GetResource().Resource == "clonesets" && a.GetSubresource() == "status":
			statusWrites++
			if statusAt < 0 {
				statusAt = i
			}
		case a.GetResource().Resource == "pods" && podAt < 0:
			podAt = i
		}
	}
	if statusAt < 0 || podAt < 0 || statusAt > podAt {
		t.Errorf("first CloneSet status write at %d, first pod write at %d: want the status first", statusAt, podAt)
	}
	if statusWrites != 1 {
		t.Errorf("%d CloneSet status writes, want 1", statusWrites)
	}
	if status := f.lastStatus(); status == nil || status.Replicas != 2 || status.UpdatedReplicas != 0 || status.UpdateRevision != r.update.Name {
		t.Errorf("status %+v, want the 2 pods at the old revision counted, update revision %s", status, r.update.Name)
	}
}

func TestInPlaceUpdateCompletes(t *testing.T) {
	r := newRollout(t, 1, inPlace)
	pod := newPod(r.cs, "bbbbb", r.update)
	pod.Labels[appsv1beta1.LifecycleStateKey] = string(appsv1beta1.LifecycleStateUpdating)
	pod.Annotations[appsv1beta1.InPlaceUpdateStateKey] = `{"revision":"` + r.update.Name + `","updateTimestamp":"2026-03-01T11:00:00Z","lastContainerStatuses":{"c":{"imageID":"sha-img:v1"}},"updateImages":true}`
	kruisepod.SetPodCondition(pod, corev1.PodCondition{Type: appsv1beta1.InPlaceUpdateReady, Status: corev1.ConditionFalse})
	pod.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "c", Image: "img:v1", ImageID: "sha-img:v1"} // not restarted yet
	f := newFixture(t, fixtureOption{}, r.cs, r.current, r.update, pod)
	f.sync(r.cs)
	if len(f.podStatusUpdates()) != 0 || len(f.podPatches()) != 0 {
		t.Errorf("touched a pod whose container has not restarted: %v %v", f.podStatusUpdates(), f.podPatches())
	}

	pod.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "c", Image: "img:v2", ImageID: "sha-img:v2"}
	f = newFixture(t, fixtureOption{}, r.cs, r.current, r.update, pod)
	f.sync(r.cs)
	f.wantInPlaceUpdateDone(t)
}

func TestInPlaceIfPossibleRecreatesOtherChanges(t *testing.T) {
	r := newRollout(t, 2, func(cs *appsv1beta1.CloneSet) { inPlace(cs) })
	r.cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
	r.update = revisionOf(t, r.cs, 2)
	f := newFixture(t, fixtureOption{}, r.objects()...)
	f.sync(r.cs)
	if recreated := f.recreated(); len(recreated) != 1 {
		t.Errorf("labelled %v, want one pod recreated", recreated)
	}
	if len(f.actions("update", "pods")) != 0 {
		t.Error("updated a pod in place although its env changed")
	}
}

func TestInPlaceOnlyRefusesOtherChanges(t *testing.T) {
	r := newRollout(t, 2, func(cs *appsv1beta1.CloneSet) {
		inPlace(cs)
		cs.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = appsv1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType
	})
	r.cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
	r.update = revisionOf(t, r.cs, 2)
	f := newFixture(t, fixtureOption{}, r.objects()...)
	err := f.c.syncCloneSet(f.ctx, key(r.cs))
	if err == nil || !strings.Contains(err.Error(), "update strategy is InPlaceOnly but can not update in-place") {
		t.Errorf("sync error = %v, want OpenKruise's InPlaceOnly error", err)
	}
	if len(f.recreated()) != 0 {
		t.Error("labelled a pod for recreation under InPlaceOnly")
	}
	status := f.lastStatus()
	if status == nil || len(status.Conditions) != 1 || status.Conditions[0].Type != appsv1beta1.CloneSetConditionFailedUpdate {
		t.Errorf("status = %+v, want a FailedUpdate condition", status)
	}
}

func TestInPlaceUpdateHookHoldsPods(t *testing.T) {
	hook := &appsv1beta1.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}, MarkPodNotReady: true}
	r := newRollout(t, 1, func(cs *appsv1beta1.CloneSet) {
		inPlace(cs)
		cs.Spec.Lifecycle = &appsv1beta1.Lifecycle{InPlaceUpdate: hook}
	})
	withLabel(r.pods[0], "hold", "true")
	r.pods[0].Spec.ReadinessGates = append(r.pods[0].Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: appsv1beta1.KruisePodReadyConditionType})
	f := newFixture(t, fixtureOption{}, r.objects()...)
	f.sync(r.cs)
	if len(f.actions("update", "pods")) != 0 {
		t.Error("updated a pod the inPlaceUpdate hook holds")
	}
	if patches := f.podPatches()[r.pods[0].Name]; len(patches) != 1 || !strings.Contains(patches[0], `"PreparingUpdate"`) {
		t.Errorf("patches %v, want PreparingUpdate", patches)
	}
	writes := f.podStatusUpdates()
	if len(writes) != 1 || kruisepod.PodCondition(writes[0], appsv1beta1.KruisePodReadyConditionType).Message != `[{"userAgent":"Lifecycle","key":"preUpdateHook"}]` {
		t.Errorf("status writes %v, want the preUpdate mark", writes)
	}

	// Released by the hook, the held pod is updated.
	released := newPod(newCS(1), "bbbbb", r.current)
	released.Labels[appsv1beta1.LifecycleStateKey] = string(appsv1beta1.LifecycleStatePreparingUpdate)
	f = newFixture(t, fixtureOption{}, r.cs, r.current, r.update, released)
	f.sync(r.cs)
	if len(f.actions("update", "pods")) != 1 {
		t.Errorf("pod updates = %v, want the released pod updated in place", f.actions("update", "pods"))
	}
}

func TestNewPodsBecomeNormalOnceScheduled(t *testing.T) {
	cs := newCS(2)
	revision := revisionOf(t, cs, 1)
	scheduled := newPod(cs, "aaaaa", revision)
	scheduled.Labels[appsv1beta1.LifecycleStateKey] = string(appsv1beta1.LifecycleStatePreparingNormal)
	unscheduled := newPod(cs, "bbbbb", revision)
	unscheduled.Labels[appsv1beta1.LifecycleStateKey] = string(appsv1beta1.LifecycleStatePreparingNormal)
	unscheduled.Spec.NodeName = ""
	f := newFixture(t, fixtureOption{}, cs, revision, scheduled, unscheduled)
	f.sync(cs)
	patches := f.podPatches()
	if len(patches) != 1 || len(patches["cs-aaaaa"]) != 1 || !strings.Contains(patches["cs-aaaaa"][0], `"Normal"`) {
		t.Errorf("patches = %v, want only the scheduled pod moved to Normal", patches)
	}
	if status := f.lastStatus(); status == nil || status.AvailableReplicas != 0 || status.ReadyReplicas != 2 {
		t.Errorf("status = %+v, want 2 ready and none available while PreparingNormal", status)
	}
}

// A new pod gets its InPlaceUpdateReady condition and the move to Normal in one status
// write once a node has taken it, and nothing before.
func TestNewPodIsReadiedAndNormalInOneWrite(t *testing.T) {
	cs := newCS(1)
	revision := revisionOf(t, cs, 1)
	unscheduled := newPreparingPod(cs, "bbbbb", revision)
	unscheduled.Spec.NodeName = ""
	f := newFixture(t, fixtureOption{}, cs, revision, unscheduled)
	f.sync(cs)
	for _, w := range f.writes() {
		if w.GetResource().Resource != "clonesets" {
			t.Errorf("%s %s/%s: a pod no node has taken is written, or another object", w.GetVerb(), w.GetResource().Resource, w.GetSubresource())
		}
	}
	if status := f.lastStatus(); status == nil || status.Replicas != 1 {
		t.Errorf("status %+v, want the one pod counted: the sync got to its end", status)
	}

	f = newFixture(t, fixtureOption{}, cs, revision, newPreparingPod(cs, "aaaaa", revision))
	f.sync(cs)
	f.wantInPlaceUpdateDone(t)
}

// newPreparingPod is a new pod of cs at revision that a node has taken: PreparingNormal,
// without the InPlaceUpdateReady condition newPod gives it.
func newPreparingPod(cs *appsv1beta1.CloneSet, id string, revision *appsv1.ControllerRevision) *corev1.Pod {
	pod := newPod(cs, id, revision)
	pod.Labels[appsv1beta1.LifecycleStateKey] = string(appsv1beta1.LifecycleStatePreparingNormal)
	pod.Status.Conditions = pod.Status.Conditions[:2]
	return pod
}

// A conflict on that write is retried against the live pod, once.
func TestInPlaceUpdateReadyWriteRetriesAConflict(t *testing.T) {
	cs := newCS(1)
	revision := revisionOf(t, cs, 1)
	pod := newPreparingPod(cs, "aaaaa", revision)
	f := newFixture(t, fixtureOption{}, cs, revision, pod)
	conflicts := 0
	f.kubeClient.PrependReactor("update", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "status" || conflicts > 0 {
			return false, nil, nil
		}
		conflicts++
		return true, nil, apierrors.NewConflict(corev1.Resource("pods"), pod.Name, errors.New("the object has been modified"))
	})
	f.sync(cs)
	if len(f.actions("get", "pods")) != 1 {
		t.Errorf("pod reads %v, want the live pod read once after the conflict", f.actions("get", "pods"))
	}
	writes := f.podStatusUpdates()
	if len(writes) != 2 {
		t.Fatalf("%d status writes, want the refused one and its retry", len(writes))
	}
	last := writes[1]
	if c := kruisepod.PodCondition(last, appsv1beta1.InPlaceUpdateReady); c == nil || c.Status != corev1.ConditionTrue ||
		last.Labels[appsv1beta1.LifecycleStateKey] != string(appsv1beta1.LifecycleStateNormal) {
		t.Errorf("retried write: %+v, state %q; want InPlaceUpdateReady True and Normal", c, last.Labels[appsv1beta1.LifecycleStateKey])
	}
}

// A pod the cache shows from before this controller's last write to it (the sync's list
// and the write's event can race) is not moved a second time: the conflicted write finds
// the live pod Normal already and the pod is left alone, neither rewritten nor patched.
func TestPodMovedSinceItWasCachedIsLeftAlone(t *testing.T) {
	cs := newCS(1)
	revision := revisionOf(t, cs, 1)
	cached := newPreparingPod(cs, "aaaaa", revision)
	f := newFixture(t, fixtureOption{}, cs, revision, cached)

	live := cached.DeepCopy()
	live.ResourceVersion = "999"
	kruisepod.MarkInPlaceUpdateReady(live, metav1.Now())
	kruisepod.SetLifecycleState(live, appsv1beta1.LifecycleStateNormal, time.Now())
	if err := f.kubeClient.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), live, live.Namespace); err != nil {
		t.Fatal(err)
	}
	f.kubeClient.PrependReactor("update", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		sent := action.(clienttesting.UpdateAction).GetObject().(*corev1.Pod)
		if sent.ResourceVersion == live.ResourceVersion {
			return false, nil, nil
		}
		return true, nil, apierrors.NewConflict(corev1.Resource("pods"), sent.Name, errors.New("the object has been modified"))
	})
	f.sync(cs)
	if patches := f.podPatches(); len(patches) != 0 {
		t.Errorf("pods patched: %v; want none, the pod is Normal already", patches)
	}
	if writes := f.podStatusUpdates(); len(writes) != 1 {
		t.Errorf("%d pod status writes, want only the one the conflict refused", len(writes))
	}
}

func TestMissingPodTemplateHashIsAdded(t *testing.T) {
	cs := newCS(1)
	revision := revisionOf(t, cs, 1)
	pod := newPod(cs, "aaaaa", revision)
	delete(pod.Labels, appsv1beta1.PodTemplateHashLabelKey)
	f := newFixture(t, fixtureOption{}, cs, revision, pod)
	f.sync(cs)
	want := `{"metadata":{"labels":{"pod-template-hash":"` + strings.TrimPrefix(revision.Name, "cs-") + `"}}}`
	if patches := f.podPatches()["cs-aaaaa"]; len(patches) != 1 || patches[0] != want {
		t.Errorf("patches = %v, want %s", patches, want)
	}
}

func TestInPlaceUpdateReadyIsTurnedTrue(t *testing.T) {
	cs := newCS(1)
	revision := revisionOf(t, cs, 1)
	pod := newPod(cs, "aaaaa", revision)
	pod.Status.Conditions = pod.Status.Conditions[:2] // a new pod: no InPlaceUpdateReady yet
	f := newFixture(t, fixtureOption{}, cs, revision, pod)
	f.sync(cs)
	writes := f.podStatusUpdates()
	if len(writes) != 1 || kruisepod.PodCondition(writes[0], appsv1beta1.InPlaceUpdateReady) == nil ||
		kruisepod.PodCondition(writes[0], appsv1beta1.InPlaceUpdateReady).Status != corev1.ConditionTrue {
		t.Errorf("status writes = %v, want InPlaceUpdateReady True", writes)
	}
}

func TestPriorityStrategyPicksPodsFirst(t *testing.T) {
	r := newRollout(t, 4, func(cs *appsv1beta1.CloneSet) {
		cs.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		cs.Spec.UpdateStrategy.RollingUpdate.PriorityStrategy = &appsv1beta1.UpdatePriorityStrategy{
			WeightPriority: []appsv1beta1.UpdatePriorityWeightTerm{{Weight: 50, MatchSelector: metaSelector("tier", "a")}},
		}
	})
	withLabel(r.pods[2], "tier", "a")
	f := newFixture(t, fixtureOption{}, r.objects()...)
	f.sync(r.cs)
	if recreated := f.recreated(); !slices.Equal(recreated, []string{r.pods[2].Name}) {
		t.Errorf("labelled %v, want the tier=a pod %s first", recreated, r.pods[2].Name)
	}
}

func TestOnDeleteReplacesDeletedPodsAtTheUpdateRevision(t *testing.T) {
	r := newRollout(t, 3, func(cs *appsv1beta1.CloneSet) {
		cs.Spec.UpdateStrategy.Type = appsv1beta1.OnDeleteCloneSetUpdateStrategyType
	})
	r.pods = r.pods[:2] // one was deleted
	f := newFixture(t, fixtureOption{}, r.objects()...)
	f.sync(r.cs)
	created := f.createdPods()
	if len(created) != 1 || created[0].Labels[appsv1beta1.ControllerRevisionHashLabelKey] != r.update.Name ||
		created[0].Spec.Containers[0].Image != "img:v2" {
		t.Errorf("created %v, want one pod at the update revision", podNamesOf(created))
	}
	if len(f.recreated()) != 0 {
		t.Errorf("labelled %v under OnDelete", f.recreated())
	}
}

func TestSurgeReplacesLabelledPodsBeforeDeletingThem(t *testing.T) {
	r := newRollout(t, 3, func(cs *appsv1beta1.CloneSet) {
		cs.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
		cs.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(1))
		cs.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(2))
	})
	withLabel(r.pods[0], appsv1beta1.SpecifiedDeleteKey, "true")
	f := newFixture(t, fixtureOption{}, r.objects()...)
	f.sync(r.cs)
	if created := f.createdPods(); len(created) != 1 || created[0].Labels[appsv1beta1.ControllerRevisionHashLabelKey] != r.update.Name {
		t.Errorf("created %v, want the replacement at the update revision first", podNamesOf(created))
	}
	if deleted := f.deleted("pods"); len(deleted) != 0 {
		t.Errorf("deleted %v before the replacement is available", deleted)
	}

	// Once the replacement is available, the labelled pod goes.
	replacement := newPod(r.cs, "99999", r.update)
	f = newFixture(t, fixtureOption{}, r.objects(replacement)...)
	f.sync(r.cs)
	if deleted := f.deleted("pods"); !slices.Equal(deleted, []string{r.pods[0].Name}) {
		t.Errorf("deleted %v, want the labelled pod %s", deleted, r.pods[0].Name)
	}
}

func TestPartitionRollbackGate(t *testing.T) {
	// Every pod was updated; the partition then grew to 2.
	mutate := func(cs *appsv1beta1.CloneSet) {
		cs.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(3))
		cs.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(2))
	}
	for _, on := range []bool{false, true} {
		r := newRollout(t, 3, mutate)
		for i := range r.pods {
			r.pods[i] = newPod(r.cs, strings.Repeat(string(idAlphabet[i]), 5), r.update)
		}
		f := newFixture(t, fixtureOption{gates: map[featuregate.Feature]bool{features.CloneSetPartitionRollback: on}}, r.objects()...)
		f.sync(r.cs)
		want := 0
		if on {
			want = 2
		}
		if recreated := f.recreated(); len(recreated) != want {
			t.Errorf("gate %v: labelled %v, want %d pods back to the current revision", on, recreated, want)
		}
		if on {
			if n := countEvents(f.events(), "Normal SuccessfulUpdatePodReCreate successfully patch pod cs-"); n != 2 {
				t.Errorf("%d recreate events, want 2", n)
			}
		}
	}
}

func TestInPlaceUpdateWithGracePeriod(t *testing.T) {
	withGrace := func(cs *appsv1beta1.CloneSet) {
		inPlace(cs)
		cs.Spec.UpdateStrategy.RollingUpdate.InPlaceUpdateStrategy = &appsv1beta1.InPlaceUpdateStrategy{GracePeriodSeconds: 10}
	}
	r := newRollout(t, 1, withGrace)
	f := newFixture(t, fixtureOption{}, r.objects()...)
	f.sync(r.cs)

	writes := f.podStatusUpdates()
	if len(writes) != 1 || kruisepod.PodCondition(writes[0], appsv1beta1.InPlaceUpdateReady).Status != corev1.ConditionFalse {
		t.Fatalf("status writes %v, want the pod out of service at once", writes)
	}
	updates := f.actions("update", "pods")
	if len(updates) != 1 {
		t.Fatalf("%d pod updates, want 1", len(updates))
	}
	deferred := updates[0].(clienttesting.UpdateAction).GetObject().(*corev1.Pod)
	if deferred.Spec.Containers[0].Image != "img:v1" || deferred.Labels[appsv1beta1.ControllerRevisionHashLabelKey] != r.update.Name {
		t.Errorf("deferred pod runs %s at %s, want img:v1 until the grace period is over, labelled with the new revision",
			deferred.Spec.Containers[0].Image, deferred.Labels[appsv1beta1.ControllerRevisionHashLabelKey])
	}
	spec, err := kruisepod.ReadInPlaceUpdateGrace(deferred)
	if err != nil || spec == nil || spec.GraceSeconds != 10 || spec.ContainerImages["c"] != "img:v2" || spec.Revision != r.update.Name {
		t.Errorf("grace = %+v, %v", spec, err)
	}
	if delayed := f.queue.Delayed(); len(delayed) == 0 || delayed[len(delayed)-1].Delay != 10*time.Second {
		t.Errorf("requeued %v, want after the grace period", delayed)
	}

	// Four seconds later the grace period is not over: nothing changes, look again in 6s.
	deferred.Status = *writes[0].Status.DeepCopy()
	f = newFixture(t, fixtureOption{}, r.cs, r.current, r.update, deferred)
	f.clock.Step(4 * time.Second)
	f.sync(r.cs)
	if len(f.actions("update", "pods")) != 0 {
		t.Errorf("updated the pod during its grace period")
	}
	if delayed := f.queue.Delayed(); len(delayed) == 0 || delayed[len(delayed)-1].Delay != 6*time.Second {
		t.Errorf("requeued %v, want after the rest of the grace period", delayed)
	}

	// Once it is over, the images are updated.
	f = newFixture(t, fixtureOption{}, r.cs, r.current, r.update, deferred)
	f.clock.Step(11 * time.Second)
	f.sync(r.cs)
	updates = f.actions("update", "pods")
	if len(updates) != 1 {
		t.Fatalf("%d pod updates after the grace period, want 1", len(updates))
	}
	finished := updates[0].(clienttesting.UpdateAction).GetObject().(*corev1.Pod)
	if finished.Spec.Containers[0].Image != "img:v2" || finished.Annotations[appsv1beta1.InPlaceUpdateGraceKey] != "" {
		t.Errorf("finished pod runs %s with grace %q", finished.Spec.Containers[0].Image, finished.Annotations[appsv1beta1.InPlaceUpdateGraceKey])
	}
	state, _ := kruisepod.ReadInPlaceUpdateState(finished)
	if state == nil || state.LastContainerStatuses["c"].ImageID != "sha-img:v1" {
		t.Errorf("state = %+v, want the container's image ID before the update", state)
	}

	// A rollback during the grace period drops it.
	rolledBack := deferred.DeepCopy()
	rolledBack.Labels[appsv1beta1.ControllerRevisionHashLabelKey] = r.current.Name
	f = newFixture(t, fixtureOption{}, r.cs, r.current, r.update, rolledBack)
	f.sync(r.cs)
	updates = f.actions("update", "pods")
	if len(updates) == 0 {
		t.Fatal("the stale grace was left on the pod")
	}
	if dropped := updates[0].(clienttesting.UpdateAction).GetObject().(*corev1.Pod); dropped.Annotations[appsv1beta1.InPlaceUpdateGraceKey] != "" ||
		dropped.Spec.Containers[0].Image != "img:v1" {
		t.Errorf("after a rollback the pod runs %s with grace %q", dropped.Spec.Containers[0].Image, dropped.Annotations[appsv1beta1.InPlaceUpdateGraceKey])
	}
}

func TestUnavailableUpdatedPodsHoldBackEvenUnavailableOldOnes(t *testing.T) {
	r := newRollout(t, 4, func(cs *appsv1beta1.CloneSet) {
		cs.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	})
	// One pod is updated but not ready; of the old ones, two are not ready either.
	notReady(r.pods[0])
	notReady(r.pods[1])
	updated := notReady(newPod(r.cs, "99999", r.update))
	r.pods = r.pods[:3]
	f := newFixture(t, fixtureOption{}, r.objects(updated)...)
	f.sync(r.cs)
	// The budget of 1 is taken by the updated pod that is not available yet.
	if recreated := f.recreated(); len(recreated) != 0 {
		t.Errorf("labelled %v while an updated pod is unavailable and maxUnavailable is 1", recreated)
	}
}
