package clonesetutil

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/podutil"
)

// LifecycleState returns the lifecycle state a pod's label records, "" when none.
func LifecycleState(pod *corev1.Pod) appsv1beta1.LifecycleStateType {
	return appsv1beta1.LifecycleStateType(pod.Labels[appsv1beta1.LifecycleStateKey])
}

// IsUpdateReady reports whether pod runs, has been ready for minReadySeconds at now, and
// is not in the middle of an in-place update (its InPlaceUpdateReady condition, if any, is
// True).
func IsUpdateReady(pod *corev1.Pod, minReadySeconds int32, now metav1.Time) bool {
	if pod.Status.Phase != corev1.PodRunning || !podutil.IsPodAvailable(pod, minReadySeconds, now) {
		return false
	}
	cond := kruisepod.PodCondition(pod, appsv1beta1.InPlaceUpdateReady)
	return cond == nil || cond.Status == corev1.ConditionTrue
}

// IsAvailable reports whether pod counts as available to its CloneSet: its lifecycle state
// is Normal (or it has none) and it is IsUpdateReady. With minReadySeconds 0 it is what the
// controller calls ready when it limits the deletion of ready pods.
func IsAvailable(pod *corev1.Pod, minReadySeconds int32, now metav1.Time) bool {
	if state := LifecycleState(pod); state != "" && state != appsv1beta1.LifecycleStateNormal {
		return false
	}
	return IsUpdateReady(pod, minReadySeconds, now)
}

// hooks returns the CloneSet's hooks; every one may be nil.
func hooks(cs *appsv1beta1.CloneSet) (preDelete, inPlaceUpdate, preNormal *appsv1beta1.LifecycleHook) {
	if cs.Spec.Lifecycle == nil {
		return nil, nil, nil
	}
	return cs.Spec.Lifecycle.PreDelete, cs.Spec.Lifecycle.InPlaceUpdate, cs.Spec.Lifecycle.PreNormal
}

// PreDeleteHook, InPlaceUpdateHook and PreNormalHook return the CloneSet's hooks, nil when
// unset.
func PreDeleteHook(cs *appsv1beta1.CloneSet) *appsv1beta1.LifecycleHook {
	h, _, _ := hooks(cs)
	return h
}

func InPlaceUpdateHook(cs *appsv1beta1.CloneSet) *appsv1beta1.LifecycleHook {
	_, h, _ := hooks(cs)
	return h
}

func PreNormalHook(cs *appsv1beta1.CloneSet) *appsv1beta1.LifecycleHook {
	_, _, h := hooks(cs)
	return h
}

// MarksPodNotReady reports whether one of the hooks that take pods out of service
// (preDelete, inPlaceUpdate) asks for markPodNotReady.
func MarksPodNotReady(cs *appsv1beta1.CloneSet) bool {
	preDelete, inPlaceUpdate, _ := hooks(cs)
	return (preDelete != nil && preDelete.MarkPodNotReady) || (inPlaceUpdate != nil && inPlaceUpdate.MarkPodNotReady)
}

// NextLifecycleState returns the state the update step moves pod to on its own, "" for
// none:
//   - PreparingNormal → Normal once the pod is scheduled, or, with a preNormal hook, once
//     the pod carries all of the hook's labels and finalizers;
//   - PreparingUpdate → (see afterUpdate) once the pod is at the update revision, which a
//     rollback brings;
//   - Updating → (see afterUpdate) once its in-place update has completed
//     (inPlaceCompleted);
//   - Updated → Normal without an inPlaceUpdate hook, or once the pod carries all of its
//     labels and finalizers again.
func NextLifecycleState(cs *appsv1beta1.CloneSet, pod *corev1.Pod, atUpdateRevision, inPlaceCompleted bool) appsv1beta1.LifecycleStateType {
	_, inPlaceUpdate, preNormal := hooks(cs)
	switch LifecycleState(pod) {
	case appsv1beta1.LifecycleStatePreparingNormal:
		ready := pod.Spec.NodeName != ""
		if preNormal != nil {
			ready = kruisepod.IsAllHooked(preNormal, pod)
		}
		if ready {
			return appsv1beta1.LifecycleStateNormal
		}
	case appsv1beta1.LifecycleStatePreparingUpdate:
		if atUpdateRevision {
			return afterUpdate(cs, pod)
		}
	case appsv1beta1.LifecycleStateUpdating:
		if inPlaceCompleted {
			return afterUpdate(cs, pod)
		}
	case appsv1beta1.LifecycleStateUpdated:
		if inPlaceUpdate == nil || kruisepod.IsAllHooked(inPlaceUpdate, pod) {
			return appsv1beta1.LifecycleStateNormal
		}
	}
	return ""
}

// afterUpdate is where a pod goes once its update is done: Updated, which waits for the
// owner of the inPlaceUpdate hook to put its labels and finalizers back, when the CloneSet
// has a lifecycle and the pod does not carry all of them (a missing hook counts as not
// carried); Normal otherwise.
func afterUpdate(cs *appsv1beta1.CloneSet, pod *corev1.Pod) appsv1beta1.LifecycleStateType {
	if cs.Spec.Lifecycle != nil && !kruisepod.IsAllHooked(cs.Spec.Lifecycle.InPlaceUpdate, pod) {
		return appsv1beta1.LifecycleStateUpdated
	}
	return appsv1beta1.LifecycleStateNormal
}
