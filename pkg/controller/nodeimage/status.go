package nodeimage

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/nodeimage/nodeimageutil"
)

// tagFailure is a tag the manager marked Failed, for the events recorded once the status
// is written.
type tagFailure struct {
	image   string
	tag     appsv1beta1.ImageTagSpec
	message string
}

// syncStatus writes the status computeStatus derives when it differs from the current
// one, re-reading the NodeImage on conflicts (the agent writes the status too), then
// records a PullImageFailed warning per failure it wrote. It returns the earliest time a
// timeout falls due.
func (c *Controller) syncStatus(ctx context.Context, cached *appsv1beta1.NodeImage) (time.Time, error) {
	var failures []tagFailure
	var next time.Time
	var written *appsv1beta1.NodeImage
	current := cached
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if current == nil {
			fresh, err := c.bosunClient.AppsV1beta1().NodeImages().Get(ctx, cached.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			current = fresh
		}
		var status appsv1beta1.NodeImageStatus
		status, failures, next = computeStatus(current, c.clock.Now(), c.responseTimeout)
		if apiequality.Semantic.DeepEqual(status, current.Status) {
			written = nil
			return nil
		}
		updated := current.DeepCopy()
		updated.Status = status
		var err error
		written, err = c.bosunClient.AppsV1beta1().NodeImages().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if err != nil {
			current = nil
		}
		return err
	})
	if apierrors.IsNotFound(err) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("updating the status of NodeImage %s: %w", cached.Name, err)
	}
	if written == nil {
		return next, nil
	}
	klog.FromContext(ctx).V(4).Info("Updated the status of the NodeImage", "nodeImage", klog.KObj(written), "failed", len(failures))
	for _, f := range failures {
		c.recordFailure(written, f)
	}
	return next, nil
}

// recordFailure records a PullImageFailed warning on the NodeImage and on every owner of
// the tag.
func (c *Controller) recordFailure(ni *appsv1beta1.NodeImage, f tagFailure) {
	message := fmt.Sprintf("Image %s:%s failed to pull on node %s: %s", f.image, f.tag.Tag, ni.Name, f.message)
	c.recorder.Event(ni, corev1.EventTypeWarning, PullImageFailedReason, message)
	for i := range f.tag.OwnerReferences {
		c.recorder.Event(&f.tag.OwnerReferences[i], corev1.EventTypeWarning, PullImageFailedReason, message)
	}
}

// computeStatus returns the status ni should have at now: the tag statuses of the spec's
// tags (in spec order), with the tags the agent has not answered within responseTimeout,
// and those past their deadline, marked Failed; the counts recomputed over them. It also
// returns the failures it marked and the earliest time another one falls due.
func computeStatus(ni *appsv1beta1.NodeImage, now time.Time, responseTimeout time.Duration) (appsv1beta1.NodeImageStatus, []tagFailure, time.Time) {
	status := appsv1beta1.NodeImageStatus{FirstSyncStatus: ni.Status.FirstSyncStatus.DeepCopy()}
	var failures []tagFailure
	var next time.Time
	nowTime := metav1.NewTime(now)
	for _, image := range slices.Sorted(maps.Keys(ni.Spec.Images)) {
		reported := ni.Status.ImageStatuses[image].Tags
		var tags []appsv1beta1.ImageTagStatus
		for _, tag := range ni.Spec.Images[image].Tags {
			status.Desired++
			var tagStatus *appsv1beta1.ImageTagStatus
			if found := nodeimageutil.FindTagStatus(reported, tag.Tag); found != nil {
				tagStatus = found.DeepCopy()
			}
			if tag.CreatedAt != nil {
				current := tagStatus != nil && tagStatus.Version == tag.Version
				var due time.Time
				var message string
				switch {
				case !current:
					due, message = tag.CreatedAt.Add(responseTimeout), NotRespondedMessage
				case !finished(tagStatus.Phase) && tag.PullPolicy != nil && tag.PullPolicy.ActiveDeadlineSeconds != nil:
					deadline := time.Duration(*tag.PullPolicy.ActiveDeadlineSeconds) * time.Second
					due, message = tag.CreatedAt.Add(deadline+responseTimeout), DeadlineExceededMessage
				}
				if !due.IsZero() {
					if now.Before(due) {
						next = earliest(next, due)
					} else {
						if tagStatus == nil || !current {
							tagStatus = &appsv1beta1.ImageTagStatus{Tag: tag.Tag, Version: tag.Version}
						}
						tagStatus.Phase = appsv1beta1.ImagePhaseFailed
						tagStatus.CompletionTime = nowTime.DeepCopy()
						tagStatus.Message = message
						failures = append(failures, tagFailure{image: image, tag: tag, message: message})
					}
				}
			}
			if tagStatus == nil {
				continue
			}
			nodeimageutil.CountTagPhase(&status, tagStatus.Phase)
			tags = append(tags, *tagStatus)
		}
		// An image the agent reported without tags keeps its entry: dropping it would only
		// have the agent write it back.
		if _, reportedImage := ni.Status.ImageStatuses[image]; len(tags) > 0 || reportedImage {
			if status.ImageStatuses == nil {
				status.ImageStatuses = map[string]appsv1beta1.ImageStatus{}
			}
			status.ImageStatuses[image] = appsv1beta1.ImageStatus{Tags: tags}
		}
	}
	// Waiting is the agent's to count (it alone knows which pulls wait for a slot); the
	// manager keeps the number it reported.
	status.Waiting = ni.Status.Waiting
	return status, failures, next
}

// finished reports whether a pull in phase is over.
func finished(phase appsv1beta1.ImagePullPhase) bool {
	return phase == appsv1beta1.ImagePhaseSucceeded || phase == appsv1beta1.ImagePhaseFailed
}
