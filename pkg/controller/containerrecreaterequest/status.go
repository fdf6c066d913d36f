package containerrecreaterequest

import (
	"context"
	"fmt"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// completion decides, for an unfinished request and its pod as the sync saw them, whether
// the manager completes the request now: it returns the message to complete it with, or ""
// when the request goes on. The reasons are checked in order: the pod is gone (deleted,
// being deleted or replaced under the same name), no agent picked the request up within
// ResponseTimeout of its creation, its activeDeadlineSeconds passed. While it goes on, next
// is when one of the timers falls due (the deadline, and the response timeout while the
// phase is still empty); zero when there is none.
func completion(cached *crr, pod *corev1.Pod, now time.Time) (message string, next time.Time) {
	if pod == nil || pod.DeletionTimestamp != nil || string(pod.UID) != cached.Labels[appsv1beta1.ContainerRecreateRequestPodUIDKey] {
		return MessagePodGone, time.Time{}
	}
	created := cached.CreationTimestamp.Time
	if cached.Status.Phase == "" {
		responseDue := created.Add(ResponseTimeout)
		if !now.Before(responseDue) {
			return MessageNoResponse, time.Time{}
		}
		next = responseDue
	}
	if d := cached.Spec.ActiveDeadlineSeconds; d != nil {
		deadline := created.Add(time.Duration(*d) * time.Second)
		if !now.Before(deadline) {
			return MessageDeadlineExceeded, time.Time{}
		}
		if next.IsZero() || deadline.Before(next) {
			next = deadline
		}
	}
	return "", next
}

// complete ends the request with message: phase Completed, completionTime now. The update
// event of the write brings the request back, to be finished (see finish).
func (c *Controller) complete(ctx context.Context, cached *crr, message string, now time.Time) error {
	updated := cached.DeepCopy()
	updated.Status.Phase = appsv1beta1.ContainerRecreateRequestCompleted
	completedAt := metav1.NewTime(now)
	updated.Status.CompletionTime = &completedAt
	updated.Status.Message = message
	_, err := c.bosunClient.AppsV1beta1().ContainerRecreateRequests(cached.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("completing ContainerRecreateRequest %s (%s): %w", klog.KObj(cached), message, err)
	}
	klog.FromContext(ctx).V(2).Info("Completed ContainerRecreateRequest", "message", message)
	return nil
}
