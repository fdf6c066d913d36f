package imagepulljob

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/imagepulljob/jobutil"
)

// nodeState is how far one target node is with the job's image.
type nodeState int

const (
	// notSynced: the node's NodeImage lacks the job's tag or its secrets, or the tag must
	// be pulled again; handing it over takes one unit of parallelism.
	notSynced nodeState = iota
	// pulling: the tag is there, without a final status of its current version.
	pulling
	succeeded
	failed
)

// targetNode is one target with its state.
type targetNode struct {
	name  string
	state nodeState
	// stalePolicy: the job alone owns the tag, and its pull policy or image pull policy
	// is not the job's any more; the tag is updated without waiting for parallelism.
	stalePolicy bool
}

// classifyNodes returns the state of every target, in the targets' order.
func classifyNodes(job *appsv1beta1.ImagePullJob, targets []*appsv1beta1.NodeImage, image, tag string, secretRefs []appsv1beta1.ReferenceObject) []targetNode {
	want := jobutil.TagPullPolicy(job, func(int64) int64 { return 0 })
	out := make([]targetNode, 0, len(targets))
	for _, ni := range targets {
		node := targetNode{name: ni.Name, state: notSynced}
		spec, ok := ni.Spec.Images[image]
		tagSpec := findTag(spec.Tags, tag)
		if !ok || tagSpec == nil || !ownsTag(tagSpec, job.UID) || !hasSecrets(spec.PullSecrets, secretRefs) {
			out = append(out, node)
			continue
		}
		node.state = pulling
		if st := tagStatus(ni, image, tag); st != nil && st.Version == tagSpec.Version {
			switch st.Phase {
			case appsv1beta1.ImagePhaseSucceeded:
				node.state = succeeded
			case appsv1beta1.ImagePhaseFailed:
				node.state = failed
			}
		}
		if soleOwner(tagSpec, job.UID) &&
			(jobutil.PolicyDiffers(tagSpec.PullPolicy, want) || tagSpec.ImagePullPolicy != jobutil.ImagePullPolicy(job)) {
			// A failed pull is retried under the new policy; other pulls only carry it.
			if node.state == failed {
				node.state = notSynced
			} else {
				node.stalePolicy = true
			}
		}
		out = append(out, node)
	}
	return out
}

// computeStatus counts the nodes into the job's status and decides whether the job
// completes now.
func computeStatus(job *appsv1beta1.ImagePullJob, nodes []targetNode, now time.Time) appsv1beta1.ImagePullJobStatus {
	status := appsv1beta1.ImagePullJobStatus{Desired: int32(len(nodes))}
	if job.Status.StartTime != nil {
		status.StartTime = job.Status.StartTime.DeepCopy()
	} else {
		status.StartTime = &metav1.Time{Time: now}
	}
	var unfinished []string
	var pullingCount int32
	for _, node := range nodes {
		switch node.state {
		case succeeded:
			status.Succeeded++
		case failed:
			status.Failed++
			status.FailedNodes = append(status.FailedNodes, node.name)
		case pulling:
			pullingCount++
			unfinished = append(unfinished, node.name)
		default:
			unfinished = append(unfinished, node.name)
		}
	}
	always := !jobutil.IsNever(job)
	if deadline := job.Spec.CompletionPolicy.ActiveDeadlineSeconds; always && deadline != nil && len(unfinished) > 0 &&
		!now.Before(status.StartTime.Add(time.Duration(*deadline)*time.Second)) {
		status.CompletionTime = &metav1.Time{Time: now}
		status.Failed += int32(len(unfinished))
		status.FailedNodes = append(status.FailedNodes, unfinished...)
		status.Message = jobutil.MessageDeadlineExceeded
	} else {
		status.Active = pullingCount
		if always && len(unfinished) == 0 {
			status.CompletionTime = &metav1.Time{Time: now}
			status.Message = jobutil.MessageCompleted
		} else {
			status.Message = jobutil.ProgressMessage(status.Desired, status.Succeeded, status.Failed)
		}
	}
	slices.Sort(status.FailedNodes)
	return status
}

// updateStatus writes status when it differs from the job's.
func (c *Controller) updateStatus(ctx context.Context, key string, job *appsv1beta1.ImagePullJob, status appsv1beta1.ImagePullJobStatus) error {
	if semanticEqual(job.Status, status) {
		return nil
	}
	updated := job.DeepCopy()
	updated.Status = status
	result, err := c.bosunClient.AppsV1beta1().ImagePullJobs(job.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("updating the status of ImagePullJob %s: %w", key, err)
	}
	klog.FromContext(ctx).V(2).Info("Updated the ImagePullJob's status", "desired", status.Desired, "active", status.Active,
		"succeeded", status.Succeeded, "failed", status.Failed, "message", status.Message)
	c.jobVersions.Expect(key, result)
	return nil
}

// findTag returns the entry of tag in tags, nil when there is none.
func findTag(tags []appsv1beta1.ImageTagSpec, tag string) *appsv1beta1.ImageTagSpec {
	for i := range tags {
		if tags[i].Tag == tag {
			return &tags[i]
		}
	}
	return nil
}

// tagStatus returns the status the node reports for the tag, nil when there is none.
func tagStatus(ni *appsv1beta1.NodeImage, image, tag string) *appsv1beta1.ImageTagStatus {
	status, ok := ni.Status.ImageStatuses[image]
	if !ok {
		return nil
	}
	for i := range status.Tags {
		if status.Tags[i].Tag == tag {
			return &status.Tags[i]
		}
	}
	return nil
}

// hasSecrets reports whether have holds every reference of want.
func hasSecrets(have, want []appsv1beta1.ReferenceObject) bool {
	for _, ref := range want {
		if !slices.Contains(have, ref) {
			return false
		}
	}
	return true
}
