package advanceddaemonset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/advanceddaemonset/daemonsetutil"
	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/features"
)

// Event reasons of image pre-download, recorded on the DaemonSet. They are OpenKruise's,
// and so is their type: a failed create is Normal too, since the rollout goes on without
// the job.
const (
	CreatedImagePullJobReason      = "CreatedImagePullJob"
	FailedCreateImagePullJobReason = "FailedCreateImagePullJob"
)

const (
	// preDownloadBackoffLimit is the number of retries of each node's pull: the pods pull
	// the image anyway when they start, so a pre-download is not worth many attempts.
	preDownloadBackoffLimit int32 = 1
	// preDownloadTTLSecondsAfterFinished keeps a finished job around long enough to be
	// looked at, then lets the ImagePullJob controller delete it, should the rollout never
	// complete.
	preDownloadTTLSecondsAfterFinished int32 = 600
	// revisionLabelTrue is the value of the bookkeeping labels on revisions; only their
	// presence is read.
	revisionLabelTrue = "true"
)

// preDownloadEnabled reports whether the controller pre-downloads images.
func (c *Controller) preDownloadEnabled() bool {
	return c.imagePullJobs != nil && c.gates.Enabled(features.PreDownloadImageForDaemonSetUpdate)
}

// preDownloadImages has the nodes about to be rolled pull the current revision's new
// images ahead of their pods, and removes the DaemonSet's ImagePullJobs once no pod waits
// for its update any more. It judges the rollout by the status the last sync wrote, so a
// rollout is seen complete one sync after its last pod was updated.
func (c *Controller) preDownloadImages(ctx context.Context, v *view, h history) error {
	if !c.preDownloadEnabled() {
		return nil
	}
	status := v.ds.Status
	if status.UpdatedNumberScheduled == status.DesiredNumberScheduled && status.UpdateRevision == v.hash {
		return c.deletePreDownloadJobs(ctx, v.ds)
	}
	return c.createPreDownloadJobs(ctx, v, h)
}

// createPreDownloadJobs creates, once per revision, an ImagePullJob for every container
// whose image the current revision introduces, and labels the revision so that later
// syncs leave it alone. A revision that every pod moves to in one batch, or that has no
// older revision to move from, is labelled ignored instead: its pods would start pulling
// as early as any job.
func (c *Controller) createPreDownloadJobs(ctx context.Context, v *view, h history) error {
	logger := klog.FromContext(ctx)
	revision := h.current
	if _, done := revision.Labels[appsv1beta1.ImagePreDownloadCreatedKey]; done {
		return nil
	}
	if _, ignored := revision.Labels[appsv1beta1.ImagePreDownloadIgnoredKey]; ignored {
		return nil
	}
	if len(h.old) == 0 || rollsAllAtOnce(v.ds, v.desired) {
		logger.V(4).Info("Not pre-downloading images: every pod takes the revision at once",
			"controllerRevision", klog.KObj(revision), "desired", v.desired, "oldRevisions", len(h.old))
		return c.labelRevision(ctx, revision, appsv1beta1.ImagePreDownloadIgnoredKey)
	}

	images := newImages(ctx, &v.ds.Spec.Template, h.old)
	var failed []error
	for _, container := range images {
		job := c.preDownloadJob(ctx, v.ds, revision, container)
		_, err := c.bosunClient.AppsV1beta1().ImagePullJobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
			// An earlier sync created it and stopped before labelling the revision.
			logger.V(4).Info("Pre-download ImagePullJob exists already", "imagePullJob", klog.KObj(job))
		case err != nil:
			c.recorder.Eventf(eventObject(v.ds), corev1.EventTypeNormal, FailedCreateImagePullJobReason,
				"failed to create ImagePullJob %s: %v", job.Name, err)
			failed = append(failed, fmt.Errorf("creating ImagePullJob %s: %w", klog.KObj(job), err))
		default:
			logger.V(2).Info("Created pre-download ImagePullJob", "imagePullJob", klog.KObj(job), "image", job.Spec.Image)
			c.recorder.Eventf(eventObject(v.ds), corev1.EventTypeNormal, CreatedImagePullJobReason,
				"created ImagePullJob %s for image: %s", job.Name, job.Spec.Image)
		}
	}
	if len(failed) > 0 {
		// The revision stays unlabelled, so the next sync tries the missing jobs again.
		return errors.Join(failed...)
	}
	return c.labelRevision(ctx, revision, appsv1beta1.ImagePreDownloadCreatedKey)
}

// rollsAllAtOnce reports whether a rollout of ds replaces every pod in its first batch:
// no partition holds pods back and maxUnavailable covers every node.
func rollsAllAtOnce(ds *appsv1beta1.DaemonSet, desired int) bool {
	partition, err := daemonsetutil.Partition(ds, desired)
	if err != nil || partition > 0 {
		// An unreadable partition holds every pod back, as the rollout reads it.
		return false
	}
	_, maxUnavailable, err := daemonsetutil.SurgeAndUnavailable(ds, desired)
	return err == nil && maxUnavailable >= desired
}

// containerImage is a container of the current template whose image needs pulling.
type containerImage struct {
	container, image string
}

// newImages returns, in template order, the containers of template whose image no
// container of the same name in an old revision had: the images some node is sure to
// lack. An old revision whose data cannot be read is passed over.
func newImages(ctx context.Context, template *corev1.PodTemplateSpec, old []*appsv1.ControllerRevision) []containerImage {
	known := map[containerImage]bool{}
	for _, revision := range old {
		oldTemplate, err := kruisepod.TemplateFromRevisionData(revision.Data.Raw)
		if err != nil {
			klog.FromContext(ctx).Info("Cannot read an old revision's template; its images count as absent",
				"controllerRevision", klog.KObj(revision), "err", err)
			continue
		}
		for _, container := range oldTemplate.Spec.Containers {
			known[containerImage{container.Name, container.Image}] = true
		}
	}
	var images []containerImage
	for _, container := range template.Spec.Containers {
		if ci := (containerImage{container.Name, container.Image}); !known[ci] {
			images = append(images, ci)
		}
	}
	return images
}

// preDownloadJob returns the ImagePullJob that pulls ci's image on the nodes of ds's pods
// not yet on revision. It is named after the revision and the container, so that a
// repeated create finds the job an earlier sync made.
func (c *Controller) preDownloadJob(ctx context.Context, ds *appsv1beta1.DaemonSet, revision *appsv1.ControllerRevision, ci containerImage) *appsv1beta1.ImagePullJob {
	hash := revision.Labels[appsv1beta1.ControllerRevisionHashLabelKey]
	selector := ds.Spec.Selector.DeepCopy()
	// Older revisions may carry the revision's name rather than its hash in the label.
	selector.MatchExpressions = append(selector.MatchExpressions, metav1.LabelSelectorRequirement{
		Key:      appsv1beta1.ControllerRevisionHashLabelKey,
		Operator: metav1.LabelSelectorOpNotIn,
		Values:   []string{revision.Name, hash},
	})
	// Objects a DaemonSet owns carry its template labels, so that its selector matches them.
	jobLabels := maps.Clone(ds.Spec.Template.Labels)
	if jobLabels == nil {
		jobLabels = map[string]string{}
	}
	jobLabels[appsv1beta1.ControllerRevisionHashLabelKey] = hash
	var pullSecrets []string
	for _, secret := range ds.Spec.Template.Spec.ImagePullSecrets {
		pullSecrets = append(pullSecrets, secret.Name)
	}
	parallelism := annotationInt(ctx, ds, appsv1beta1.ImagePreDownloadParallelismKey, appsv1beta1.DefaultImagePreDownloadParallelism, 0)
	timeout := annotationInt(ctx, ds, appsv1beta1.ImagePreDownloadTimeoutSecondsKey, appsv1beta1.DefaultImagePreDownloadTimeoutSeconds, 1)
	return &appsv1beta1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{
			Name:            revision.Name + "-" + ci.container,
			Namespace:       ds.Namespace,
			Labels:          jobLabels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, controllerKind)},
		},
		Spec: appsv1beta1.ImagePullJobSpec{
			Image: ci.image,
			ImagePullJobTemplate: appsv1beta1.ImagePullJobTemplate{
				PullSecrets: pullSecrets,
				PodSelector: &appsv1beta1.ImagePullJobPodSelector{LabelSelector: *selector},
				Parallelism: ptr.To(intstr.FromInt32(parallelism)),
				PullPolicy: &appsv1beta1.PullPolicy{
					TimeoutSeconds: ptr.To(timeout),
					BackoffLimit:   ptr.To(preDownloadBackoffLimit),
				},
				CompletionPolicy: appsv1beta1.CompletionPolicy{
					Type:                    appsv1beta1.Always,
					TTLSecondsAfterFinished: ptr.To(preDownloadTTLSecondsAfterFinished),
				},
			},
		},
	}
}

// annotationInt reads ds's annotation key as an integer of at least minimum, and returns
// fallback when it is absent or is not one: a typo must not stop the rollout.
func annotationInt(ctx context.Context, ds *appsv1beta1.DaemonSet, key string, fallback, minimum int32) int32 {
	value, ok := ds.Annotations[key]
	if !ok {
		return fallback
	}
	n, err := strconv.ParseInt(value, 10, 32)
	if err != nil || int32(n) < minimum {
		klog.FromContext(ctx).V(2).Info("Ignoring an invalid pre-download annotation", "annotation", key, "value", value, "using", fallback)
		return fallback
	}
	return int32(n)
}

// labelRevision sets the bookkeeping label key on revision. A merge patch needs no
// resource version, so a revision the cache shows late cannot make it conflict.
func (c *Controller) labelRevision(ctx context.Context, revision *appsv1.ControllerRevision, key string) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{key: revisionLabelTrue}}})
	if err != nil {
		return err
	}
	if _, err := c.kubeClient.AppsV1().ControllerRevisions(revision.Namespace).Patch(ctx, revision.Name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("labelling ControllerRevision %s with %s: %w", klog.KObj(revision), key, err)
	}
	klog.FromContext(ctx).V(2).Info("Labelled ControllerRevision for image pre-download", "controllerRevision", klog.KObj(revision), "label", key)
	return nil
}

// deletePreDownloadJobs deletes the ImagePullJobs ds controls: with every pod updated
// there is nothing left to pull ahead of.
func (c *Controller) deletePreDownloadJobs(ctx context.Context, ds *appsv1beta1.DaemonSet) error {
	jobs, err := c.imagePullJobs.ImagePullJobs(ds.Namespace).List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing ImagePullJobs: %w", err)
	}
	var errs []error
	for _, job := range jobs {
		if job.DeletionTimestamp != nil || !metav1.IsControlledBy(job, ds) {
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
