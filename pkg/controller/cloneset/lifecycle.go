package cloneset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/podcontrol"
)

// setLifecycleState moves pod to lifecycle state, and reports whether it wrote the state.
// With markNotReady the hook's not-ready mark follows the state first, whether or not the
// state changes: entering PreparingDelete or PreparingUpdate adds the preDelete or
// preUpdate mark to the pod's KruisePodReady condition, entering Updated removes the
// preUpdate mark (pods without the KruisePodReady readiness gate are not marked: the kubelet
// would ignore the condition). With hook its labels and finalizers are put (back) on the
// pod together with the state. Every write is expected before the CloneSet is synced again.
func (c *Controller) setLifecycleState(ctx context.Context, v *view, pod *corev1.Pod, state appsv1beta1.LifecycleStateType,
	markNotReady bool, hook *appsv1beta1.LifecycleHook) (bool, error) {
	if markNotReady {
		if err := c.followNotReadyMark(ctx, v, pod, state); err != nil {
			return false, err
		}
	}
	if pod.Labels[appsv1beta1.LifecycleStateKey] == string(state) {
		return false, nil
	}
	body := kruisepod.LifecycleStatePatch(state, v.now.Time, hook)
	patched, err := c.kubeClient.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("moving pod %s to lifecycle state %s: %w", klog.KObj(pod), state, err)
	}
	klog.FromContext(ctx).V(3).Info("Moved pod to a lifecycle state", "pod", klog.KObj(pod), "state", state)
	c.podUpdates.Expect(v.key, patched)
	return true, nil
}

// followNotReadyMark adds or removes the lifecycle's not-ready mark for state.
func (c *Controller) followNotReadyMark(ctx context.Context, v *view, pod *corev1.Pod, state appsv1beta1.LifecycleStateType) error {
	if !kruisepod.HasReadinessGate(pod, appsv1beta1.KruisePodReadyConditionType) {
		return nil
	}
	updater := podcontrol.StatusUpdater{Client: c.kubeClient}
	var (
		written *corev1.Pod
		err     error
	)
	switch state {
	case appsv1beta1.LifecycleStatePreparingDelete:
		written, err = kruisepod.MarkPodNotReady(ctx, updater, pod, kruisepod.PreDeleteMark, v.now)
	case appsv1beta1.LifecycleStatePreparingUpdate:
		written, err = kruisepod.MarkPodNotReady(ctx, updater, pod, kruisepod.PreUpdateMark, v.now)
	case appsv1beta1.LifecycleStateUpdated:
		written, err = kruisepod.UnmarkPodNotReady(ctx, updater, pod, kruisepod.PreUpdateMark, v.now)
	default:
		return nil
	}
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("marking pod %s for lifecycle state %s: %w", klog.KObj(pod), state, err)
	}
	if written != nil {
		c.podUpdates.Expect(v.key, written)
	}
	return nil
}
