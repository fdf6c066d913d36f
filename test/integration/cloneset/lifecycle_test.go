package cloneset

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// A preNormal hook (a finalizer) keeps new pods in PreparingNormal, and
// unavailable, until they carry it; meanwhile the Progressing condition passes its deadline
// (ProgressDeadlineExceeded), and once they are Normal it reads CloneSetAvailable.
func testPreNormalHook(t *testing.T, e *testEnv) {
	const finalizer = "example.com/warmed-up"
	e.startKubelet(t)
	cs := newCloneSet("web", 2)
	cs.Spec.Lifecycle = &appsv1beta1.Lifecycle{PreNormal: &appsv1beta1.LifecycleHook{FinalizersHandler: []string{finalizer}}}
	cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](11)
	cs = e.cloneSets().Create(t, cs)
	reasons := &statusLog{}
	e.observeCloneSet(t, "web", reasons.add)

	pods := e.waitForPods(t, cs, "2 pods scheduled and ready", func(pods []*corev1.Pod) bool {
		return len(pods) == 2 && countPods(pods, func(p *corev1.Pod) bool { return conditionTrue(p, corev1.PodReady) }) == 2
	})
	exceeded := e.cloneSets().WaitFor(t, "web", "Progressing False/ProgressDeadlineExceeded", func(cs *appsv1beta1.CloneSet) bool {
		c := progressing(cs)
		return c != nil && c.Status == corev1.ConditionFalse && c.Reason == string(appsv1beta1.CloneSetProgressDeadlineExceeded)
	})
	if want := fmt.Sprintf("CloneSet revision %s has timed out progressing", exceeded.Status.UpdateRevision); progressing(exceeded).Message != want {
		t.Errorf("Progressing message %q, want %q", progressing(exceeded).Message, want)
	}
	if s := exceeded.Status; s.Replicas != 2 || s.ReadyReplicas != 2 || s.AvailableReplicas != 0 {
		t.Errorf("with the preNormal hook unmet: status %+v, want 2 replicas ready and none available", s)
	}
	for _, pod := range activePods(e.GetPods(t, nil), cs.UID) {
		if lifecycleState(pod) != appsv1beta1.LifecycleStatePreparingNormal {
			t.Errorf("pod %s without the preNormal finalizer is in state %q, want PreparingNormal", pod.Name, lifecycleState(pod))
		}
	}

	for _, pod := range pods {
		e.patchPod(t, pod.Name, fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, finalizer))
	}
	_, pods = e.waitForSettled(t, "web")
	for _, pod := range pods {
		if lifecycleState(pod) != appsv1beta1.LifecycleStateNormal {
			t.Errorf("pod %s with the preNormal finalizer is in state %q, want Normal", pod.Name, lifecycleState(pod))
		}
	}
	e.cloneSets().WaitFor(t, "web", "Progressing True/CloneSetAvailable", func(cs *appsv1beta1.CloneSet) bool {
		c := progressing(cs)
		return c != nil && c.Status == corev1.ConditionTrue && c.Reason == string(appsv1beta1.CloneSetAvailable) && c.Message == "CloneSet is available"
	})
	// The reasons the Progressing condition went through, as the watch saw them.
	var seen []string
	e.Await(t, "the watch to see Progressing CloneSetAvailable", func(context.Context) (bool, error) {
		seen = nil
		for _, s := range reasons.all() {
			if c := progressing(&appsv1beta1.CloneSet{Status: s}); c != nil && (len(seen) == 0 || seen[len(seen)-1] != c.Reason) {
				seen = append(seen, c.Reason)
			}
		}
		return len(seen) > 0 && seen[len(seen)-1] == string(appsv1beta1.CloneSetAvailable), nil
	}, func() string { return fmt.Sprint(seen) })
	if want := []string{"CloneSetUpdated", "ProgressDeadlineExceeded", "CloneSetAvailable"}; !slices.Equal(seen, want) {
		t.Errorf("Progressing reasons went %v, want %v", seen, want)
	}
}

// An inPlaceUpdate hook (the label hold=true) keeps a pod chosen for an
// in-place update in PreparingUpdate; without the label it is updated in place (Updating,
// InPlaceUpdateReady False) until the kubelet runs the new image, then Updated, which waits
// for the label to come back, then Normal. The pod is never replaced. With markPodNotReady
// the pod is out of service (KruisePodReady False) from PreparingUpdate until Updated;
// without, until the update starts.
func testInPlaceUpdateHook(t *testing.T, e *testEnv) {
	k := e.startKubelet(t)
	for _, markPodNotReady := range []bool{false, true} {
		name := "web"
		if markPodNotReady {
			name = "marked"
		}
		t.Run(name, func(t *testing.T) { inPlaceUpdateHook(t, e, k, name, markPodNotReady) })
	}
}

func inPlaceUpdateHook(t *testing.T, e *testEnv, k *framework.Kubelet, name string, markPodNotReady bool) {
	cs := newCloneSet(name, 1)
	cs.Spec.Template.Labels["hold"] = "true"
	rolling(cs).PodUpdatePolicy = appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType
	cs.Spec.Lifecycle = &appsv1beta1.Lifecycle{InPlaceUpdate: &appsv1beta1.LifecycleHook{
		LabelsHandler: map[string]string{"hold": "true"}, MarkPodNotReady: markPodNotReady,
	}}
	e.cloneSets().Create(t, cs)
	settled, pods := e.waitForSettled(t, name)
	pod := pods[0]
	oldRevision := settled.Status.UpdateRevision
	k.KeepImages(pod.Name, true)

	e.setImage(t, name, image2)
	newRevision := e.waitForNewRevision(t, name, oldRevision).Status.UpdateRevision
	inState := func(what string, state appsv1beta1.LifecycleStateType, also func(*corev1.Pod) bool) *corev1.Pod {
		t.Helper()
		got := e.Pods().WaitFor(t, pod.Name, what, func(p *corev1.Pod) bool { return lifecycleState(p) == state && also(p) })
		if got.UID != pod.UID {
			t.Fatalf("pod %s was replaced", pod.Name)
		}
		return got
	}
	inState("PreparingUpdate, held by the hook", appsv1beta1.LifecycleStatePreparingUpdate, func(*corev1.Pod) bool { return true })
	e.settle(t)
	held := inState("still PreparingUpdate, at the old revision", appsv1beta1.LifecycleStatePreparingUpdate, func(p *corev1.Pod) bool {
		return revisionOf(p) == oldRevision && p.Spec.Containers[0].Image == image1
	})
	if ready := conditionTrue(held, corev1.PodReady); ready == markPodNotReady {
		t.Errorf("markPodNotReady %v: held in PreparingUpdate the pod is ready=%v (%s)", markPodNotReady, ready, podDetails(held))
	}
	if markPodNotReady {
		if c := podCondition(held, appsv1beta1.KruisePodReadyConditionType); c == nil || c.Status != corev1.ConditionFalse ||
			!strings.Contains(c.Message, `"key":"preUpdateHook"`) {
			t.Errorf("held in PreparingUpdate with markPodNotReady: KruisePodReady %+v, want False with the preUpdateHook mark", c)
		}
	}

	e.patchPod(t, pod.Name, `{"metadata":{"labels":{"hold":null}}}`)
	updating := inState("Updating: new image and revision, InPlaceUpdateReady False, not ready", appsv1beta1.LifecycleStateUpdating, func(p *corev1.Pod) bool {
		c := podCondition(p, appsv1beta1.InPlaceUpdateReady)
		return revisionOf(p) == newRevision && p.Spec.Containers[0].Image == image2 && c != nil && c.Status == corev1.ConditionFalse &&
			!conditionTrue(p, corev1.PodReady)
	})
	var state struct {
		Revision              string `json:"revision"`
		LastContainerStatuses map[string]struct {
			ImageID string `json:"imageID"`
		} `json:"lastContainerStatuses"`
	}
	if err := json.Unmarshal([]byte(updating.Annotations[appsv1beta1.InPlaceUpdateStateKey]), &state); err != nil {
		t.Errorf("annotation %s: %v", appsv1beta1.InPlaceUpdateStateKey, err)
	} else if state.Revision != newRevision || state.LastContainerStatuses["web"].ImageID != framework.ImageID(image1) {
		t.Errorf("in-place update state %+v, want revision %s and the old image ID %s", state, newRevision, framework.ImageID(image1))
	}
	if c := podCondition(updating, appsv1beta1.InPlaceUpdateReady); c.Reason != appsv1beta1.InPlaceUpdateStartedReason {
		t.Errorf("InPlaceUpdateReady reason %q, want %q", c.Reason, appsv1beta1.InPlaceUpdateStartedReason)
	}
	e.settle(t)
	inState("still Updating while the kubelet runs the old image", appsv1beta1.LifecycleStateUpdating, func(p *corev1.Pod) bool {
		return !conditionTrue(p, corev1.PodReady)
	})

	k.KeepImages(pod.Name, false)
	updated := inState("Updated: the new image runs, InPlaceUpdateReady and KruisePodReady True, ready", appsv1beta1.LifecycleStateUpdated, func(p *corev1.Pod) bool {
		return conditionTrue(p, appsv1beta1.InPlaceUpdateReady) && conditionTrue(p, appsv1beta1.KruisePodReadyConditionType) &&
			conditionTrue(p, corev1.PodReady)
	})
	if s := updated.Status.ContainerStatuses[0]; s.Image != image2 || s.RestartCount != 1 {
		t.Errorf("container status %+v, want image %s restarted once", s, image2)
	}
	e.settle(t)
	inState("still Updated without the hook's label", appsv1beta1.LifecycleStateUpdated, func(*corev1.Pod) bool { return true })

	e.patchPod(t, pod.Name, `{"metadata":{"labels":{"hold":"true"}}}`)
	inState("Normal with the hook's label back", appsv1beta1.LifecycleStateNormal, func(*corev1.Pod) bool { return true })
	e.waitForSettled(t, name)
	want := fmt.Sprintf("successfully update pod %s in-place(revision %s)", pod.Name, newRevision)
	if !slices.ContainsFunc(e.csEvents(t, name, "SuccessfulUpdatePodInPlace"), func(ev corev1.Event) bool { return ev.Message == want }) {
		t.Errorf("no event %q", want)
	}
}

// A preDelete hook (the label hook=true) parks the pod a scale-in chose in
// PreparingDelete; scaling back returns it. With exclude-preparing-delete (the v1beta1
// field, or the v1alpha1 label), a pod named in podsToDelete and parked does not count: a
// scale back creates a new pod, and status.replicas counts both until the hook lets go.
func testPreDeleteHook(t *testing.T, e *testEnv) {
	e.startKubelet(t)
	hook := map[string]string{"hook": "true"}

	t.Run("returned by a scale-up", func(t *testing.T) {
		cs := newCloneSet("plain", 3)
		cs.Spec.Template.Labels["hook"] = "true"
		cs.Spec.Lifecycle = &appsv1beta1.Lifecycle{PreDelete: &appsv1beta1.LifecycleHook{LabelsHandler: hook}}
		cs = e.cloneSets().Create(t, cs)
		_, before := e.waitForSettled(t, "plain")
		e.scale(t, "plain", 2)
		pods := e.waitForPods(t, cs, "one pod in PreparingDelete", func(pods []*corev1.Pod) bool {
			return countPods(pods, isPreparingDelete) == 1
		})
		parked := pods[slices.IndexFunc(pods, isPreparingDelete)].Name
		e.settle(t)
		if got := activePods(e.GetPods(t, nil), cs.UID); !slices.Equal(podNames(got), podNames(before)) {
			t.Errorf("with the pod held by the preDelete hook, pods %v, want %v", podNames(got), podNames(before))
		}
		if s := e.cloneSets().Get(t, "plain").Status; s.Replicas != 3 {
			t.Errorf("status.replicas %d with a pod in PreparingDelete, want 3", s.Replicas)
		}

		e.scale(t, "plain", 3)
		e.Pods().WaitFor(t, parked, "back to Normal", func(p *corev1.Pod) bool { return lifecycleState(p) == appsv1beta1.LifecycleStateNormal })
		_, after := e.waitForSettled(t, "plain")
		if !slices.Equal(podNames(after), podNames(before)) {
			t.Errorf("after scaling back, pods %v, want %v (no new pod)", podNames(after), podNames(before))
		}
	})

	for _, variant := range []struct {
		name  string
		alpha bool
	}{{"excluded by the v1beta1 field", false}, {"excluded by the v1alpha1 label", true}} {
		t.Run(variant.name, func(t *testing.T) {
			name := "beta"
			if variant.alpha {
				name = "alpha"
				cs := newAlpha(name)
				cs.Labels = map[string]string{appsv1alpha1.CloneSetScalingExcludePreparingDeleteKey: "true"}
				cs.Spec.Replicas = ptr.To[int32](3)
				cs.Spec.Template.Labels["hook"] = "true"
				cs.Spec.Lifecycle = &appsv1alpha1.Lifecycle{PreDelete: &appsv1alpha1.LifecycleHook{LabelsHandler: hook}}
				e.alpha.Create(t, cs)
			} else {
				cs := newCloneSet(name, 3)
				cs.Spec.ScaleStrategy.ExcludePreparingDelete = true
				cs.Spec.Template.Labels["hook"] = "true"
				cs.Spec.Lifecycle = &appsv1beta1.Lifecycle{PreDelete: &appsv1beta1.LifecycleHook{LabelsHandler: hook}}
				e.cloneSets().Create(t, cs)
			}
			cs, before := e.waitForSettled(t, name)
			parked := before[0].Name
			e.cloneSets().Update(t, name, func(cs *appsv1beta1.CloneSet) {
				cs.Spec.Replicas = ptr.To[int32](2)
				cs.Spec.ScaleStrategy.PodsToDelete = []string{parked}
			})
			e.Pods().WaitFor(t, parked, "PreparingDelete", isPreparingDelete)
			e.cloneSets().WaitFor(t, name, "status.replicas 3 with the pod parked", func(cs *appsv1beta1.CloneSet) bool {
				return cs.Status.ObservedGeneration == cs.Generation && cs.Status.Replicas == 3
			})

			e.scale(t, name, 3)
			e.waitForPods(t, cs, "a 4th pod", func(pods []*corev1.Pod) bool { return len(pods) == 4 && slices.Contains(podNames(pods), parked) })
			e.cloneSets().WaitFor(t, name, "status.replicas 4 with the pod parked", func(cs *appsv1beta1.CloneSet) bool {
				return cs.Status.ObservedGeneration == cs.Generation && cs.Status.Replicas == 4
			})

			e.patchPod(t, parked, `{"metadata":{"labels":{"hook":null}}}`)
			e.Pods().WaitForEvenAbsent(t, parked, "deleted once the hook let go", func(p *corev1.Pod) bool { return p == nil || p.DeletionTimestamp != nil })
			pods := e.waitForPods(t, cs, parked+" deleted once the hook let go", func(pods []*corev1.Pod) bool {
				return len(pods) == 3 && !slices.Contains(podNames(pods), parked)
			})
			e.cloneSets().WaitFor(t, name, "status.replicas 3", func(cs *appsv1beta1.CloneSet) bool { return cs.Status.Replicas == 3 })
			for _, pod := range before[1:] {
				if !slices.Contains(podNames(pods), pod.Name) {
					t.Errorf("pod %s was deleted too: %s", pod.Name, describePodPtrs(pods))
				}
			}
		})
	}
}

func isPreparingDelete(pod *corev1.Pod) bool {
	return lifecycleState(pod) == appsv1beta1.LifecycleStatePreparingDelete
}
