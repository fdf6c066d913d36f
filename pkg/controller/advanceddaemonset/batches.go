package advanceddaemonset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
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
// its state. The write retries on conflict against the live pod, unless a batch was made
// there meanwhile.
func (c *Controller) updateNextBatch(ctx context.Context, v *view, pod *corev1.Pod, state *kruisepod.InPlaceUpdateState) error {
	key, err := queue.KeyFor(v.ds)
	if err != nil {
		return err
	}
	current := pod
	var written *corev1.Pod
	err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		live, err := kruisepod.ReadInPlaceUpdateState(current)
		if err != nil {
			return err
		}
		if live == nil || !live.NextBatchPending() || len(live.ContainerBatchesRecord) != len(state.ContainerBatchesRecord) {
			return nil
		}
		updated, err := kruisepod.ApplyNextBatch(current, live, v.now)
		if err != nil {
			return err
		}
		written, err = c.kubeClient.CoreV1().Pods(updated.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
		if err == nil {
			return nil
		}
		return c.refetchOnConflict(ctx, err, &current)
	})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("updating the next batch of containers of pod %s in place: %w", klog.KObj(pod), err)
	}
	if written != nil {
		c.podUpdates.Expect(key, written)
		klog.FromContext(ctx).V(2).Info("Updated the next batch of containers in place", "pod", klog.KObj(pod), "batch", len(state.ContainerBatchesRecord)+1)
	}
	return nil
}
