package advanceddaemonset

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/podcontrol"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

// dueBatchState returns the in-place update state of pod when the next batch of its
// containers (by launch priority, see kruisepod's batches) is due, nil otherwise. Pods
// whose InPlaceUpdateReady condition is True, as it is outside in-place updates, are
// passed over without reading their state.
func dueBatchState(pod *corev1.Pod) *kruisepod.InPlaceUpdateState {
	if pod.DeletionTimestamp != nil || !kruisepod.HasReadinessGate(pod, appsv1beta1.InPlaceUpdateReady) {
		return nil
	}
	if cond := kruisepod.PodCondition(pod, appsv1beta1.InPlaceUpdateReady); cond != nil && cond.Status == corev1.ConditionTrue {
		return nil
	}
	state, err := kruisepod.ReadInPlaceUpdateState(pod)
	if err != nil || state == nil || !kruisepod.NextBatchDue(pod, state) {
		return nil
	}
	return state
}

// updateNextBatch makes the next batch of pod's in-place update, due by the cached pod and
// its state, and expects the pod it wrote.
func (c *Controller) updateNextBatch(ctx context.Context, v *view, pod *corev1.Pod, state *kruisepod.InPlaceUpdateState) error {
	key, err := queue.KeyFor(v.ds)
	if err != nil {
		return err
	}
	written, err := kruisepod.UpdateNextBatch(ctx, podcontrol.StatusUpdater{Client: c.kubeClient}, pod, len(state.ContainerBatchesRecord), v.now)
	if written != nil {
		c.podUpdates.Expect(key, written)
		klog.FromContext(ctx).V(2).Info("Updated the next batch of containers in place", "pod", klog.KObj(pod), "batch", len(state.ContainerBatchesRecord)+1)
	}
	return err
}
