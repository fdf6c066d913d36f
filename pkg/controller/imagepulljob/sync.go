package imagepulljob

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/imagepulljob/jobutil"
	"github.com/bosun-dev/bosun/pkg/controller/imageref"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

// syncJob brings one job a step further: finalize it when it is deleted or completed
// (then delete it once its time to live passed), otherwise keep its secret copies, count
// its nodes, hand its tag to as many more nodes as its parallelism allows, and write its
// status.
func (c *Controller) syncJob(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx).WithValues("imagePullJob", key)
	ctx = klog.NewContext(ctx, logger)
	namespace, name, err := queue.SplitKey(key)
	if err != nil {
		return err
	}
	// Acting on caches that do not show this controller's last writes yet would add a tag
	// to a second node, copy a secret twice or write a status from stale counts. Read
	// before the caches are: a write shown in between would meet its expectation and
	// leave this sync with the copy from before it.
	for _, store := range []interface {
		Pending(key string) (time.Duration, bool)
	}{c.jobVersions, c.secretVersions, c.nodeImageVersions} {
		if _, pending := store.Pending(key); pending {
			logger.V(4).Info("Waiting for the informers to show this controller's writes")
			c.queue.AddAfter(key, ExpectationRequeue)
			return nil
		}
	}

	job, err := c.jobs.ImagePullJobs(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.forget(key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading ImagePullJob %s from the cache: %w", key, err)
	}

	if job.DeletionTimestamp != nil {
		return c.finalize(ctx, key, job)
	}
	if job.Status.CompletionTime != nil {
		if err := c.finalize(ctx, key, job); err != nil {
			return err
		}
		return c.deleteAfterTTL(ctx, job)
	}
	if job, err = c.ensureFinalizer(ctx, key, job); err != nil {
		return err
	}

	name, tag, err := imageref.NameAndTag(job.Spec.Image)
	if err != nil {
		// Admission refuses such images; one written while the webhook was away can only
		// wait for the user to fix it.
		logger.Info("ImagePullJob has an invalid image; waiting for it to be fixed", "image", job.Spec.Image, "err", err)
		return nil
	}
	targets, err := c.targets(job)
	if err != nil {
		return err
	}
	secretRefs, err := c.syncSecrets(ctx, key, job)
	if err != nil {
		return err
	}
	now := c.clock.Now()
	nodes := classifyNodes(job, targets, name, tag, secretRefs)
	status := computeStatus(job, nodes, now)

	if status.CompletionTime == nil {
		if err := c.fanOut(ctx, key, job, nodes, status.Active, name, tag, secretRefs); err != nil {
			return err
		}
	}
	if err := c.updateStatus(ctx, key, job, status); err != nil {
		return err
	}
	if status.CompletionTime == nil && !jobutil.IsNever(job) && job.Spec.CompletionPolicy.ActiveDeadlineSeconds != nil {
		deadline := status.StartTime.Add(time.Duration(*job.Spec.CompletionPolicy.ActiveDeadlineSeconds) * time.Second)
		c.queue.AddAfter(key, max(deadline.Sub(now), minDeadlineRequeue))
	}
	return nil
}

// forget drops what the controller remembers of a job that is gone.
func (c *Controller) forget(key string) {
	c.jobVersions.Forget(key)
	c.secretVersions.Forget(key)
	c.nodeImageVersions.Forget(key)
}

// finalize releases the job's secret copies, then removes its deletion protection.
func (c *Controller) finalize(ctx context.Context, key string, job *appsv1beta1.ImagePullJob) error {
	if err := c.releaseSecrets(ctx, key, job); err != nil {
		return err
	}
	i := slices.Index(job.Finalizers, appsv1beta1.ImagePullJobProtectionFinalizer)
	if i < 0 {
		return nil
	}
	updated := job.DeepCopy()
	updated.Finalizers = slices.Delete(updated.Finalizers, i, i+1)
	result, err := c.bosunClient.AppsV1beta1().ImagePullJobs(job.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("removing finalizer %s from ImagePullJob %s: %w", appsv1beta1.ImagePullJobProtectionFinalizer, key, err)
	}
	klog.FromContext(ctx).V(2).Info("Removed the deletion protection finalizer")
	c.jobVersions.Expect(key, result)
	return nil
}

// ensureFinalizer adds the deletion protection to a running job that lacks it (one
// created while the webhook was not called), so that its secret copies are released when
// it is deleted.
func (c *Controller) ensureFinalizer(ctx context.Context, key string, job *appsv1beta1.ImagePullJob) (*appsv1beta1.ImagePullJob, error) {
	if slices.Contains(job.Finalizers, appsv1beta1.ImagePullJobProtectionFinalizer) {
		return job, nil
	}
	updated := job.DeepCopy()
	updated.Finalizers = append(updated.Finalizers, appsv1beta1.ImagePullJobProtectionFinalizer)
	result, err := c.bosunClient.AppsV1beta1().ImagePullJobs(job.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("adding finalizer %s to ImagePullJob %s: %w", appsv1beta1.ImagePullJobProtectionFinalizer, key, err)
	}
	c.jobVersions.Expect(key, result)
	return result, nil
}

// deleteAfterTTL deletes a completed job once ttlSecondsAfterFinished has passed since its
// completion, or looks at it again then. A job an ImageListPullJob controls is left to its
// owner, whatever its own time to live says.
func (c *Controller) deleteAfterTTL(ctx context.Context, job *appsv1beta1.ImagePullJob) error {
	ttl := job.Spec.CompletionPolicy.TTLSecondsAfterFinished
	if ttl == nil {
		return nil
	}
	if controlledByListJob(job) {
		// The owner would create the job again, its image would be pulled once more, and
		// the owner might never see all its images complete. The job goes with its owner.
		klog.FromContext(ctx).V(4).Info("Keeping the completed ImagePullJob past its ttlSecondsAfterFinished: an ImageListPullJob controls it")
		return nil
	}
	left := job.Status.CompletionTime.Add(time.Duration(*ttl) * time.Second).Sub(c.clock.Now())
	if left > 0 {
		c.queue.AddAfter(queue.KeyForRef(job.Namespace, job.Name), left)
		return nil
	}
	uid := job.UID
	err := c.bosunClient.AppsV1beta1().ImagePullJobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting ImagePullJob %s/%s after its ttlSecondsAfterFinished: %w", job.Namespace, job.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted the ImagePullJob, its ttlSecondsAfterFinished passed")
	return nil
}

// controlledByListJob reports whether the job's controller is an apps.kruise.io
// ImageListPullJob, of any version.
func controlledByListJob(job *appsv1beta1.ImagePullJob) bool {
	ref := metav1.GetControllerOfNoCopy(job)
	if ref == nil || ref.Kind != listJobKind {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == appsv1beta1.SchemeGroupVersion.Group
}
