package predownload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	appsv1beta1listers "github.com/bosun-dev/client-go/listers/apps/v1beta1"
)

// Event reasons of image pre-download, recorded on the workload. They are OpenKruise's,
// and so is their type: a failed create is Normal too, since the rollout goes on without
// the job.
const (
	CreatedImagePullJobReason      = "CreatedImagePullJob"
	FailedCreateImagePullJobReason = "FailedCreateImagePullJob"
)

// labelTrue is the value of the bookkeeping labels on revisions; only their presence is
// read.
const labelTrue = "true"

// Handled reports whether revision carries either bookkeeping label: its jobs were
// created, or it was judged not worth pulling ahead. Such a revision is left alone.
func Handled(revision *appsv1.ControllerRevision) bool {
	_, created := revision.Labels[appsv1beta1.ImagePreDownloadCreatedKey]
	_, ignored := revision.Labels[appsv1beta1.ImagePreDownloadIgnoredKey]
	return created || ignored
}

// Control writes a controller's pre-download jobs, their events, and the bookkeeping
// labels of revisions.
type Control struct {
	kubeClient  kubernetes.Interface
	bosunClient bosunclientset.Interface
	recorder    record.EventRecorder
	jobs        appsv1beta1listers.ImagePullJobLister
}

// NewControl returns a Control writing through the controller's clients and recorder, and
// reading ImagePullJobs from jobs, the cache of an ImagePullJob informer.
func NewControl(kubeClient kubernetes.Interface, bosunClient bosunclientset.Interface, recorder record.EventRecorder,
	jobs appsv1beta1listers.ImagePullJobLister) *Control {
	return &Control{kubeClient: kubeClient, bosunClient: bosunClient, recorder: recorder, jobs: jobs}
}

// CreateJobs creates r's job for each of images, then labels r's revision created, so
// that later syncs leave it alone. A job that exists already counts as created: an earlier
// sync made it and stopped before labelling the revision. When a create fails the revision
// stays unlabelled, and the error tells the caller to try again.
func (c *Control) CreateJobs(ctx context.Context, r Rollout, images []ContainerImage) error {
	logger := klog.FromContext(ctx)
	var failed []error
	for _, ci := range images {
		job := newJob(r, ci)
		_, err := c.bosunClient.AppsV1beta1().ImagePullJobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
			logger.V(4).Info("Pre-download ImagePullJob exists already", "imagePullJob", klog.KObj(job))
		case err != nil:
			c.recorder.Eventf(r.Owner, corev1.EventTypeNormal, FailedCreateImagePullJobReason,
				"failed to create ImagePullJob %s: %v", job.Name, err)
			failed = append(failed, fmt.Errorf("creating ImagePullJob %s: %w", klog.KObj(job), err))
		default:
			logger.V(2).Info("Created pre-download ImagePullJob", "imagePullJob", klog.KObj(job), "image", job.Spec.Image)
			c.recorder.Eventf(r.Owner, corev1.EventTypeNormal, CreatedImagePullJobReason,
				"created ImagePullJob %s for image: %s", job.Name, job.Spec.Image)
		}
	}
	if len(failed) > 0 {
		return errors.Join(failed...)
	}
	return c.label(ctx, r.Revision, appsv1beta1.ImagePreDownloadCreatedKey)
}

// Ignore labels revision ignored: its images are not worth pulling ahead, and later syncs
// leave it alone.
func (c *Control) Ignore(ctx context.Context, revision *appsv1.ControllerRevision) error {
	return c.label(ctx, revision, appsv1beta1.ImagePreDownloadIgnoredKey)
}

// label sets the bookkeeping label key on revision. A merge patch needs no resource
// version, so a revision the cache shows late cannot make it conflict.
func (c *Control) label(ctx context.Context, revision *appsv1.ControllerRevision, key string) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{key: labelTrue}}})
	if err != nil {
		return err
	}
	if _, err := c.kubeClient.AppsV1().ControllerRevisions(revision.Namespace).Patch(ctx, revision.Name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("labelling ControllerRevision %s with %s: %w", klog.KObj(revision), key, err)
	}
	klog.FromContext(ctx).V(2).Info("Labelled ControllerRevision for image pre-download", "controllerRevision", klog.KObj(revision), "label", key)
	return nil
}

// DeleteJobs deletes the ImagePullJobs owner controls: with its rollout complete there is
// nothing left to pull ahead of.
func (c *Control) DeleteJobs(ctx context.Context, owner metav1.Object) error {
	jobs, err := c.jobs.ImagePullJobs(owner.GetNamespace()).List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing ImagePullJobs: %w", err)
	}
	var errs []error
	for _, job := range jobs {
		if job.DeletionTimestamp != nil || !metav1.IsControlledBy(job, owner) {
			continue
		}
		klog.FromContext(ctx).V(2).Info("Deleting pre-download ImagePullJob: the rollout is complete", "imagePullJob", klog.KObj(job))
		// The UID precondition spares a job of the same name created since the cache saw it.
		err := c.bosunClient.AppsV1beta1().ImagePullJobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &job.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting ImagePullJob %s: %w", klog.KObj(job), err))
		}
	}
	return errors.Join(errs...)
}
