package imagelistpulljob

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/controller/slowstart"
)

// The events on a list job; the reasons are upstream's for a controller's children, the
// messages OpenKruise's.
const (
	eventSuccessfulCreate = "SuccessfulCreate"
	eventSuccessfulDelete = "SuccessfulDelete"
	eventFailedCreate     = "FailedCreate"
	eventFailedDelete     = "FailedDelete"
)

// manageChildren creates the children the plan asks for, as many as the max-active-images
// limit allows, and deletes the ones it removes. The expectations it sets keep later syncs
// from doing so again until the informer shows these writes.
func (c *Controller) manageChildren(ctx context.Context, key string, listJob *appsv1beta1.ImageListPullJob, plan childPlan, hash string) error {
	logger := klog.FromContext(ctx)
	create := plan.create
	limit, limited, err := maxActiveImages(listJob)
	if err != nil {
		// Admission refuses such values; one written while the webhook was away limits
		// nothing.
		logger.Info("Ignoring an invalid annotation", "annotation", MaxActiveImagesAnnotation, "err", err)
	}
	if limited {
		if allowed := max(limit-running(plan.current), 0); len(create) > allowed {
			logger.V(4).Info("Holding images back under the limit of running children", "limit", limit, "waiting", len(create)-allowed)
			create = create[:allowed]
		}
	}
	if len(create) == 0 && len(plan.remove) == 0 {
		return nil
	}

	// Set before the writes: an informer event can arrive before the call that caused it
	// returns.
	if len(plan.remove) > 0 {
		keys := make([]string, len(plan.remove))
		for i, child := range plan.remove {
			keys[i] = queue.KeyForRef(child.Namespace, child.Name)
		}
		c.expectations.ExpectDeletions(ctx, key, keys)
		if len(create) > 0 {
			c.expectations.Counters().Raise(ctx, key, len(create), 0)
		}
	} else {
		c.expectations.ExpectCreations(ctx, key, len(create))
	}
	createErr := c.createChildren(ctx, key, listJob, create, hash)
	deleteErr := c.deleteChildren(ctx, key, listJob, plan.remove)
	return errors.Join(createErr, deleteErr)
}

// maxActiveImages returns the list job's limit of running children, and whether it has
// one.
func maxActiveImages(listJob *appsv1beta1.ImageListPullJob) (int, bool, error) {
	value, ok := listJob.Annotations[MaxActiveImagesAnnotation]
	if !ok {
		return 0, false, nil
	}
	n, err := ParseMaxActiveImages(value)
	if err != nil {
		return 0, false, err
	}
	return n, true, nil
}

// ParseMaxActiveImages parses a value of MaxActiveImagesAnnotation: a positive decimal
// integer.
func ParseMaxActiveImages(value string) (int, error) {
	n, err := strconv.ParseInt(value, 10, 32)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s must be a positive integer, not %q", MaxActiveImagesAnnotation, value)
	}
	return int(n), nil
}

// running counts the current children that have not completed yet.
func running(current map[string]*appsv1beta1.ImagePullJob) int {
	n := 0
	for _, child := range current {
		if !started(child) || !completed(child) {
			n++
		}
	}
	return n
}

// createChildren creates one child per image in slow-start batches: a failing create (a
// quota, a webhook) stops the run after a few calls instead of one per image.
func (c *Controller) createChildren(ctx context.Context, key string, listJob *appsv1beta1.ImageListPullJob, images []string, hash string) error {
	if len(images) == 0 {
		return nil
	}
	logger := klog.FromContext(ctx)
	logger.V(2).Info("Creating ImagePullJobs", "count", len(images))
	var next, created atomic.Int32
	succeeded, err := slowstart.Batch(len(images), slowstart.SlowStartInitialBatchSize, func() error {
		image := images[next.Add(1)-1]
		return c.createChild(ctx, key, listJob, image, hash, &created)
	})
	// No informer event will come for the children that were not created.
	if notCreated := len(images) - succeeded; notCreated > 0 {
		logger.V(2).Info("Child creation stopped at a failure; no longer expecting the rest", "notCreated", notCreated)
		for range notCreated {
			c.expectations.CreationObserved(ctx, key)
		}
	}
	if n := created.Load(); n > 0 {
		c.recorder.Eventf(listJob, corev1.EventTypeNormal, eventSuccessfulCreate, "Create %d ImagePullJob", n)
	}
	if err != nil {
		c.recorder.Eventf(listJob, corev1.EventTypeWarning, eventFailedCreate, "Error creating: %v", err)
		return err
	}
	return nil
}

// createChild creates the child pulling image and counts it in created.
func (c *Controller) createChild(ctx context.Context, key string, listJob *appsv1beta1.ImageListPullJob, image, hash string, created *atomic.Int32) error {
	child := newChild(listJob, image, hash)
	_, err := c.bosunClient.AppsV1beta1().ImagePullJobs(child.Namespace).Create(ctx, child, metav1.CreateOptions{})
	switch {
	case err == nil:
		created.Add(1)
		klog.FromContext(ctx).V(4).Info("Created a child", "imagePullJob", klog.KObj(child), "image", image)
		return nil
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// The namespace goes with everything in it; retrying would only add load. No
		// informer event will come for this child.
		c.expectations.CreationObserved(ctx, key)
		return nil
	case apierrors.IsAlreadyExists(err):
		return c.createInTakenName(ctx, listJob, child, created)
	}
	return fmt.Errorf("creating ImagePullJob %s/%s for image %s: %w", child.Namespace, child.Name, image, err)
}

// createInTakenName handles a child whose name another object holds. That is usually the
// child itself, created by an earlier sync whose write the cache does not show yet (its
// informer event will count as this creation). An earlier child of the same template that
// is still being deleted (the template changed and changed back) frees the name when it
// goes. Anything else (an object the list job does not control, or an image whose 32-bit
// hash equals another's) gets a child named by the API server.
func (c *Controller) createInTakenName(ctx context.Context, listJob *appsv1beta1.ImageListPullJob, child *appsv1beta1.ImagePullJob, created *atomic.Int32) error {
	existing, err := c.bosunClient.AppsV1beta1().ImagePullJobs(child.Namespace).Get(ctx, child.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading ImagePullJob %s/%s, whose name the child for image %s needs: %w", child.Namespace, child.Name, child.Spec.Image, err)
	}
	ref := metav1.GetControllerOfNoCopy(existing)
	if ref != nil && ref.UID == listJob.UID && existing.Spec.Image == child.Spec.Image {
		if existing.DeletionTimestamp != nil {
			return fmt.Errorf("ImagePullJob %s/%s, an earlier child for image %s, is still being deleted; its name is free once it is gone",
				existing.Namespace, existing.Name, child.Spec.Image)
		}
		return nil
	}
	child.GenerateName = listJob.Name + "-"
	taken := child.Name
	child.Name = ""
	result, err := c.bosunClient.AppsV1beta1().ImagePullJobs(child.Namespace).Create(ctx, child, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating an ImagePullJob for image %s under a generated name (%s is taken): %w", child.Spec.Image, taken, err)
	}
	created.Add(1)
	klog.FromContext(ctx).V(2).Info("Created a child under a generated name; its own name is taken", "imagePullJob", klog.KObj(result), "taken", taken, "image", child.Spec.Image)
	return nil
}

// newChild returns the child pulling image: the list job's template with the image, the
// hash label and a controller reference to the list job.
func newChild(listJob *appsv1beta1.ImageListPullJob, image, hash string) *appsv1beta1.ImagePullJob {
	return &appsv1beta1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       listJob.Namespace,
			Name:            childName(listJob.Name, image, hash),
			Labels:          map[string]string{hashLabel: hash},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(listJob, controllerKind)},
		},
		Spec: appsv1beta1.ImagePullJobSpec{
			Image:                image,
			ImagePullJobTemplate: *listJob.Spec.ImagePullJobTemplate.DeepCopy(),
		},
	}
}

// deleteChildren deletes children, all at once.
func (c *Controller) deleteChildren(ctx context.Context, key string, listJob *appsv1beta1.ImageListPullJob, children []*appsv1beta1.ImagePullJob) error {
	if len(children) == 0 {
		return nil
	}
	klog.FromContext(ctx).V(2).Info("Deleting ImagePullJobs", "count", len(children))
	errs := make([]error, len(children))
	var wg sync.WaitGroup
	for i, child := range children {
		wg.Go(func() { errs[i] = c.deleteChild(ctx, key, listJob, child) })
	}
	wg.Wait()
	deleted := 0
	for _, err := range errs {
		if err == nil {
			deleted++
		}
	}
	if deleted > 0 {
		c.recorder.Eventf(listJob, corev1.EventTypeNormal, eventSuccessfulDelete, "Delete %d ImagePullJob", deleted)
	}
	return errors.Join(errs...)
}

// deleteChild deletes one child, the one the cache showed (UID precondition).
func (c *Controller) deleteChild(ctx context.Context, key string, listJob *appsv1beta1.ImageListPullJob, child *appsv1beta1.ImagePullJob) error {
	uid := child.UID
	err := c.bosunClient.AppsV1beta1().ImagePullJobs(child.Namespace).Delete(ctx, child.Name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &uid},
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
	})
	if err == nil {
		klog.FromContext(ctx).V(4).Info("Deleted a child", "imagePullJob", klog.KObj(child), "image", child.Spec.Image)
		return nil
	}
	// A delete that did not happen brings no informer event; one for a child already gone
	// may have come before.
	c.expectations.DeletionObserved(ctx, key, queue.KeyForRef(child.Namespace, child.Name))
	if apierrors.IsNotFound(err) {
		return nil
	}
	c.recorder.Eventf(listJob, corev1.EventTypeWarning, eventFailedDelete, "Error deleting: %v", err)
	return fmt.Errorf("deleting ImagePullJob %s/%s: %w", child.Namespace, child.Name, err)
}
