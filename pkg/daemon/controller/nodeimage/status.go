package nodeimage

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/nodeimage/nodeimageutil"
)

// buildStatus rebuilds the whole status from the spec, the workers and the statuses of
// done tags. A tag without a worker keeps the status it has. unfinished is true while some
// tag has no completed status of its spec version.
func (c *Controller) buildStatus(nodeImage *appsv1beta1.NodeImage) (*appsv1beta1.NodeImageStatus, bool) {
	status := &appsv1beta1.NodeImageStatus{FirstSyncStatus: nodeImage.Status.FirstSyncStatus.DeepCopy()}
	unfinished := false
	for name, imageSpec := range nodeImage.Spec.Images {
		var tags []appsv1beta1.ImageTagStatus
		for _, tag := range imageSpec.Tags {
			status.Desired++
			var tagStatus *appsv1beta1.ImageTagStatus
			if pool := c.pools[name]; pool != nil && pool.workers[tag.Tag] != nil {
				current := pool.workers[tag.Tag].currentStatus()
				tagStatus = &current
			} else if found := nodeimageutil.FindTagStatus(nodeImage.Status.ImageStatuses[name].Tags, tag.Tag); found != nil {
				tagStatus = found.DeepCopy()
			}
			if tagStatus == nil || tagStatus.Version != tag.Version || tagStatus.CompletionTime == nil {
				unfinished = true
			}
			if tagStatus == nil {
				continue
			}
			nodeimageutil.CountTagPhase(status, tagStatus.Phase)
			tags = append(tags, *tagStatus)
		}
		if len(tags) == 0 {
			continue
		}
		slices.SortFunc(tags, func(a, b appsv1beta1.ImageTagStatus) int { return strings.Compare(a.Tag, b.Tag) })
		if status.ImageStatuses == nil {
			status.ImageStatuses = map[string]appsv1beta1.ImageStatus{}
		}
		status.ImageStatuses[name] = appsv1beta1.ImageStatus{Tags: tags}
	}
	return status, unfinished
}

// writeStatus writes status unless it equals the last one written and no refresh is due.
// limited is true when the write rate limit held the write back.
func (c *Controller) writeStatus(ctx context.Context, nodeImage *appsv1beta1.NodeImage, status *appsv1beta1.NodeImageStatus) (limited bool, err error) {
	w := &c.writer
	if w.last != nil && apiequality.Semantic.DeepEqual(w.last, status) && c.clock.Now().Before(w.refreshAt) {
		return false, nil
	}
	if !w.limiter.AllowN(c.clock.Now(), 1) {
		klog.FromContext(ctx).V(4).Info("NodeImage status write rate-limited")
		return true, nil
	}
	client := c.bosunClient.AppsV1beta1().NodeImages()
	update := nodeImage.DeepCopy()
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		update.Status = *status.DeepCopy()
		_, err := client.UpdateStatus(ctx, update, metav1.UpdateOptions{})
		if err == nil || !apierrors.IsConflict(err) {
			return err
		}
		// Someone else wrote the NodeImage: the status is rebuilt whole, so only the
		// resource version needs refreshing.
		latest, getErr := client.Get(ctx, nodeImage.Name, metav1.GetOptions{})
		if getErr != nil {
			return getErr
		}
		if latest.UID != nodeImage.UID {
			return fmt.Errorf("NodeImage %s was replaced while its status was written", nodeImage.Name)
		}
		update = latest
		return err
	})
	if err != nil {
		return false, fmt.Errorf("writing the status of NodeImage %s: %w", nodeImage.Name, err)
	}
	klog.FromContext(ctx).V(4).Info("NodeImage status written", "desired", status.Desired, "waiting", status.Waiting,
		"pulling", status.Pulling, "succeeded", status.Succeeded, "failed", status.Failed)
	w.observe(status)
	return false, nil
}
