package cloneset

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/cloneset/clonesetutil"
	"github.com/bosun-dev/bosun/pkg/controller/predownload"
	"github.com/bosun-dev/bosun/pkg/features"
)

const (
	// preDownloadMinReplicas is the largest CloneSet whose images are not pulled ahead: its
	// few pods would start pulling about as early as any job.
	preDownloadMinReplicas = 3
)

// preDownloadEnabled reports whether the controller pre-downloads images.
func (c *Controller) preDownloadEnabled() bool {
	return c.preDownload != nil && c.gates.Enabled(features.PreDownloadImageForInPlaceUpdate)
}

// preDownloadImages has the nodes of the pods still on other revisions pull the update
// revision's new images ahead of their in-place update, once minUpdatedReadyPods pods of
// that revision are ready, and removes the CloneSet's ImagePullJobs once the current
// revision is the update revision. It counts the ready pods by the status the last sync
// wrote; a status that names another update revision counts none.
func (c *Controller) preDownloadImages(ctx context.Context, v *view) error {
	if !c.preDownloadEnabled() {
		return nil
	}
	if v.current.Name == v.update.Name {
		return c.preDownload.DeleteJobs(ctx, v.cs)
	}
	revision := v.update
	if predownload.Handled(revision) {
		return nil
	}
	settings := clonesetutil.PreDownload(v.cs)
	updatedReady := v.cs.Status.UpdatedReadyReplicas
	if v.cs.Status.UpdateRevision != revision.Name {
		updatedReady = 0
	}
	logger := klog.FromContext(ctx)
	if updatedReady < settings.MinUpdatedReadyPods {
		logger.V(4).Info("Waiting for more updated pods to be ready before pre-downloading images",
			"controllerRevision", klog.KObj(revision), "updatedReady", updatedReady, "minUpdatedReadyPods", settings.MinUpdatedReadyPods)
		return nil
	}
	useless, err := c.preDownloadUseless(v)
	if err != nil {
		return err
	}
	if useless != "" {
		logger.V(4).Info("Not pre-downloading images", "controllerRevision", klog.KObj(revision), "reason", useless)
		return c.preDownload.Ignore(ctx, revision)
	}
	rollout := predownload.Rollout{
		Owner:     eventObject(v.cs),
		Kind:      controllerKind,
		Selector:  v.cs.Spec.Selector,
		Template:  &v.cs.Spec.Template,
		Revision:  revision,
		Hash:      clonesetutil.ShortHash(revision.Name),
		HashLabel: clonesetutil.RevisionHashLabelKey,
		Settings:  predownload.Settings{Parallelism: settings.Parallelism, TimeoutSeconds: settings.TimeoutSeconds},
	}
	return c.preDownload.CreateJobs(ctx, rollout, predownload.NewImages(ctx, &v.cs.Spec.Template, []*appsv1.ControllerRevision{v.current}))
}

// preDownloadUseless says why pulling the update revision's images ahead would gain
// nothing, or "" when it would gain something: pods are recreated (a new pod is
// scheduled anywhere, so the nodes of the old ones need not be the ones that pull), the
// CloneSet is small, every pod is updated in the first batch, or the update cannot be
// made in place.
func (c *Controller) preDownloadUseless(v *view) (string, error) {
	cs := v.cs
	rolling := cs.Spec.UpdateStrategy.RollingUpdate
	if rolling == nil || rolling.PodUpdatePolicy == appsv1beta1.RecreateCloneSetPodUpdateStrategyType {
		return "pods are recreated", nil
	}
	replicas := int(ptr.Deref(cs.Spec.Replicas, 1))
	if replicas <= preDownloadMinReplicas {
		return fmt.Sprintf("no more than %d replicas", preDownloadMinReplicas), nil
	}
	partition, err := clonesetutil.Partition(rolling.Partition, cs.Spec.Replicas)
	if err != nil {
		return "", fmt.Errorf("reading the partition: %w", err)
	}
	// Rounded down, as OpenKruise rounds it here whatever the surge.
	maxUnavailable, _ := intstr.GetScaledValueFromIntOrPercent(
		intstr.ValueOrDefault(rolling.MaxUnavailable, intstr.FromString(clonesetutil.DefaultMaxUnavailable)), replicas, false)
	if partition == 0 && maxUnavailable >= replicas {
		return "every pod is updated at once", nil
	}
	if c.planRevisionChange(v.current, v.update, rolling.PodUpdatePolicy) == nil {
		return "the update cannot be made in place", nil
	}
	return "", nil
}
