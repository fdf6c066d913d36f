package imagelistpulljob

import (
	"context"
	"fmt"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

// failedImageMessage is the message of an image that failed on some node, OpenKruise's;
// %s is the child's name.
const failedImageMessage = "Please check for details which nodes failed by 'kubectl get ImagePullJob %s'."

// computeStatus counts the current children that have started into the list job's status,
// and decides whether the list job completes now.
func computeStatus(listJob *appsv1beta1.ImageListPullJob, current map[string]*appsv1beta1.ImagePullJob, now time.Time) appsv1beta1.ImageListPullJobStatus {
	status := appsv1beta1.ImageListPullJobStatus{Desired: int32(len(listJob.Spec.Images))}
	if listJob.Status.StartTime != nil {
		status.StartTime = listJob.Status.StartTime.DeepCopy()
	} else {
		status.StartTime = &metav1.Time{Time: now}
	}
	counted := sets.New[string]()
	for _, image := range listJob.Spec.Images {
		child, ok := current[image]
		if !ok || counted.Has(image) || !started(child) {
			continue
		}
		counted.Insert(image)
		if child.Status.Active > 0 {
			status.Active++
		}
		if completed(child) {
			status.Completed++
		}
		if child.Status.Desired == child.Status.Succeeded {
			status.Succeeded++
		}
		if child.Status.Failed > 0 {
			status.FailedImageStatuses = append(status.FailedImageStatuses, appsv1beta1.FailedImageStatus{
				ImagePullJob: child.Name,
				Name:         image,
				Message:      fmt.Sprintf(failedImageMessage, child.Name),
			})
		}
	}
	if listJob.Spec.CompletionPolicy.Type != appsv1beta1.Never && status.Completed == status.Desired {
		status.CompletionTime = &metav1.Time{Time: now}
	}
	return status
}

// started reports whether the child's controller has handled it: before, its counts mean
// nothing.
func started(child *appsv1beta1.ImagePullJob) bool {
	return child.Status.StartTime != nil
}

// completed reports whether every node of the child finished, successfully or not.
func completed(child *appsv1beta1.ImagePullJob) bool {
	return child.Status.Desired == child.Status.Succeeded+child.Status.Failed
}

// updateStatus writes status through /status when it differs from the list job's,
// re-reading the list job on conflicts.
func (c *Controller) updateStatus(ctx context.Context, listJob *appsv1beta1.ImageListPullJob, status appsv1beta1.ImageListPullJobStatus) error {
	client := c.bosunClient.AppsV1beta1().ImageListPullJobs(listJob.Namespace)
	current := listJob
	wrote := false
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if current == nil {
			live, err := client.Get(ctx, listJob.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if live.UID != listJob.UID {
				return fmt.Errorf("ImageListPullJob %s/%s was replaced (UID %s, not %s)", listJob.Namespace, listJob.Name, live.UID, listJob.UID)
			}
			current = live
		}
		if apiequality.Semantic.DeepEqual(current.Status, status) {
			return nil
		}
		updated := current.DeepCopy()
		updated.Status = status
		current = nil
		if _, err := client.UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return err
		}
		wrote = true
		return nil
	})
	if err != nil {
		return fmt.Errorf("updating the status of ImageListPullJob %s/%s: %w", listJob.Namespace, listJob.Name, err)
	}
	if wrote {
		logger := klog.FromContext(ctx)
		if status.CompletionTime != nil {
			// A nil *metav1.Time cannot be printed: its String method dereferences it.
			logger = logger.WithValues("completionTime", status.CompletionTime)
		}
		logger.V(2).Info("Updated the ImageListPullJob's status", "desired", status.Desired, "active", status.Active,
			"completed", status.Completed, "succeeded", status.Succeeded, "failedImages", len(status.FailedImageStatuses))
	}
	return nil
}
