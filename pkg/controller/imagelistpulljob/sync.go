package imagelistpulljob

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/expectations"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

// syncListJob brings one list job a step further: delete it once its time to live after
// completion passed, otherwise label it with its template hash, keep one current child per
// image, and write its status.
func (c *Controller) syncListJob(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx).WithValues("imageListPullJob", key)
	ctx = klog.NewContext(ctx, logger)
	namespace, name, err := queue.SplitKey(key)
	if err != nil {
		return err
	}
	listJob, err := c.listJobs.ImageListPullJobs(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.Delete(ctx, key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading ImageListPullJob %s from the cache: %w", key, err)
	}
	if listJob.DeletionTimestamp != nil {
		// The garbage collector takes the children; new ones would only go the same way.
		return nil
	}
	if listJob.Status.CompletionTime != nil {
		return c.deleteAfterTTL(ctx, key, listJob)
	}

	hash := templateHash(&listJob.Spec.ImagePullJobTemplate)
	if listJob, err = c.labelListJob(ctx, listJob, hash); err != nil {
		return err
	}
	children, err := c.children(listJob)
	if err != nil {
		return err
	}
	plan := planChildren(listJob, children, hash)
	relabelErr := c.relabelChildren(ctx, plan.relabel, hash)

	var manageErr error
	if c.expectations.Satisfied(ctx, key) {
		manageErr = c.manageChildren(ctx, key, listJob, plan, hash)
	} else {
		// The informer events of the writes normally bring the list job back; this is for
		// one that was lost, once the expectations have expired.
		c.queue.AddAfter(key, expectations.ExpectationsTimeout)
	}

	statusErr := c.updateStatus(ctx, listJob, computeStatus(listJob, plan.current, c.clock.Now()))
	return errors.Join(relabelErr, manageErr, statusErr)
}

// deleteAfterTTL deletes a completed list job once ttlSecondsAfterFinished has passed since
// its completion, or looks at it again then. Background propagation lets the garbage
// collector delete the children after it.
func (c *Controller) deleteAfterTTL(ctx context.Context, key string, listJob *appsv1beta1.ImageListPullJob) error {
	ttl := listJob.Spec.CompletionPolicy.TTLSecondsAfterFinished
	if ttl == nil {
		return nil
	}
	if left := listJob.Status.CompletionTime.Add(time.Duration(*ttl) * time.Second).Sub(c.clock.Now()); left > 0 {
		c.queue.AddAfter(key, left)
		return nil
	}
	uid := listJob.UID
	err := c.bosunClient.AppsV1beta1().ImageListPullJobs(listJob.Namespace).Delete(ctx, listJob.Name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &uid},
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting ImageListPullJob %s after its ttlSecondsAfterFinished: %w", key, err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted the ImageListPullJob, its ttlSecondsAfterFinished passed")
	return nil
}
