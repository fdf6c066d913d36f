package podreadiness

import (
	"context"
	"fmt"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

// syncPod sets the KruisePodReady condition of the pod key names to True when the pod
// waits for it.
func (c *Controller) syncPod(ctx context.Context, key string) error {
	namespace, name, err := queue.SplitKey(key)
	if err != nil {
		return err
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("pod", klog.KRef(namespace, name)))
	pod, err := c.pods.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading pod %s from the cache: %w", key, err)
	}
	if !awaitsCondition(pod) {
		return nil
	}
	if err := c.setReady(ctx, pod); err != nil {
		return fmt.Errorf("setting condition %s of pod %s: %w", appsv1beta1.KruisePodReadyConditionType, key, err)
	}
	return nil
}

// setReady writes condition KruisePodReady=True into the status of a copy of pod, which
// must not be changed. The write carries the pod's resourceVersion; after a conflict the
// live pod is read and checked again, so that a pod someone else gave the condition
// meanwhile is left as it is.
func (c *Controller) setReady(ctx context.Context, pod *corev1.Pod) error {
	_, err := c.status.Rewrite(ctx, pod, func(current *corev1.Pod) (*corev1.Pod, error) {
		if !awaitsCondition(current) {
			return nil, nil
		}
		kruisepod.SetPodCondition(current, corev1.PodCondition{
			Type:               appsv1beta1.KruisePodReadyConditionType,
			Status:             corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(c.clock.Now()),
		})
		stored, err := c.status.UpdatePodStatus(ctx, current)
		if err == nil {
			klog.FromContext(ctx).V(2).Info("Set the pod's KruisePodReady condition True")
		}
		return stored, err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("setting the pod's KruisePodReady condition: %w", err)
	}
	return nil
}
