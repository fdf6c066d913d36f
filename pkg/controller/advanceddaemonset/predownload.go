package advanceddaemonset

import (
	"context"
	"strconv"

	"k8s.io/klog/v2"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/advanceddaemonset/daemonsetutil"
	"github.com/bosun-dev/bosun/pkg/controller/predownload"
	"github.com/bosun-dev/bosun/pkg/features"
)

// preDownloadEnabled reports whether the controller pre-downloads images.
func (c *Controller) preDownloadEnabled() bool {
	return c.preDownload != nil && c.gates.Enabled(features.PreDownloadImageForDaemonSetUpdate)
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
		return c.preDownload.DeleteJobs(ctx, v.ds)
	}
	return c.createPreDownloadJobs(ctx, v, h)
}

// createPreDownloadJobs creates, once per revision, an ImagePullJob for every container
// whose image the current revision introduces, and labels the revision so that later
// syncs leave it alone. A revision that every pod moves to in one batch, or that has no
// older revision to move from, is labelled ignored instead: its pods would start pulling
// as early as any job.
func (c *Controller) createPreDownloadJobs(ctx context.Context, v *view, h history) error {
	revision := h.current
	if predownload.Handled(revision) {
		return nil
	}
	if len(h.old) == 0 || rollsAllAtOnce(v.ds, v.desired) {
		klog.FromContext(ctx).V(4).Info("Not pre-downloading images: every pod takes the revision at once",
			"controllerRevision", klog.KObj(revision), "desired", v.desired, "oldRevisions", len(h.old))
		return c.preDownload.Ignore(ctx, revision)
	}
	rollout := predownload.Rollout{
		Owner:     eventObject(v.ds),
		Kind:      controllerKind,
		Selector:  v.ds.Spec.Selector,
		Template:  &v.ds.Spec.Template,
		Revision:  revision,
		Hash:      h.hash(),
		HashLabel: appsv1beta1.ControllerRevisionHashLabelKey,
		Settings: predownload.Settings{
			Parallelism:    annotationInt(ctx, v.ds, appsv1beta1.ImagePreDownloadParallelismKey, appsv1beta1.DefaultImagePreDownloadParallelism, 0),
			TimeoutSeconds: annotationInt(ctx, v.ds, appsv1beta1.ImagePreDownloadTimeoutSecondsKey, appsv1beta1.DefaultImagePreDownloadTimeoutSeconds, 1),
		},
	}
	return c.preDownload.CreateJobs(ctx, rollout, predownload.NewImages(ctx, &v.ds.Spec.Template, h.old))
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
