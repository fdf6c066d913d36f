package imagepulljob

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/imagepulljob/jobutil"
)

// fanOutWrites bounds the NodeImage writes one sync of a job makes at a time. Each write is
// a round trip through the API server and both NodeImage webhooks (about 20 ms on a small
// machine); made one after another they, not the pulls, set the pace of a job over hundreds
// of nodes. The NodeImages are distinct, so the writes never conflict with one another.
const fanOutWrites = 16

// fanOut hands the job's tag to as many not-synced nodes as the parallelism leaves room
// for, chosen in the targets' order, and carries a changed pull policy to the tags the job
// alone owns. The NodeImages are written concurrently (at most fanOutWrites at a time); a
// failed write does not stop the others, and the error names every NodeImage that failed.
func (c *Controller) fanOut(ctx context.Context, key string, job *appsv1beta1.ImagePullJob, nodes []targetNode,
	active int32, image, tag string, secretRefs []appsv1beta1.ReferenceObject) error {
	parallelism, err := jobutil.Parallelism(job.Spec.Parallelism)
	if err != nil {
		// Admission refuses such values; treat one written without it as the default.
		parallelism = appsv1beta1.DefaultImagePullJobParallelism
	}
	budget := parallelism - int(active)
	var names []string
	for _, node := range nodes {
		switch {
		case node.state == notSynced && budget > 0:
			budget--
			names = append(names, node.name)
		case node.stalePolicy:
			names = append(names, node.name)
		}
	}
	errs := make([]error, len(names))
	slots := make(chan struct{}, fanOutWrites)
	var wg sync.WaitGroup
	for i, name := range names {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() {
				<-slots
				wg.Done()
			}()
			errs[i] = c.syncNodeImage(ctx, key, job, name, image, tag, secretRefs)
		}()
	}
	wg.Wait()
	return utilerrors.NewAggregate(errs)
}

// syncNodeImage writes the job's tag, owner reference and secrets into one NodeImage,
// reading it again and reapplying the change when another writer got there first, so that
// concurrent jobs never undo each other's tags.
func (c *Controller) syncNodeImage(ctx context.Context, key string, job *appsv1beta1.ImagePullJob, name, image, tag string,
	secretRefs []appsv1beta1.ReferenceObject) error {
	client := c.bosunClient.AppsV1beta1().NodeImages()
	first := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var (
			current *appsv1beta1.NodeImage
			err     error
		)
		if first {
			first = false
			current, err = c.nodeImages.Get(name)
		} else {
			current, err = client.Get(ctx, name, metav1.GetOptions{})
		}
		if err != nil {
			return err
		}
		updated := current.DeepCopy()
		if !c.applyJob(updated, job, image, tag, secretRefs) {
			return nil
		}
		result, err := client.Update(ctx, updated, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		klog.FromContext(ctx).V(2).Info("Updated the job's tag on a NodeImage", "nodeImage", name, "image", image, "tag", tag)
		c.nodeImageVersions.Expect(key, result)
		return nil
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("adding the tag %s:%s of ImagePullJob %s to NodeImage %s: %w", image, tag, key, name, err)
	}
	return nil
}

// applyJob changes ni so that the job owns the tag with the job's policy and secrets, and
// reports whether anything changed.
//
//   - An absent tag is added with a version above that of any status the node still
//     reports for it, so that an old result does not count as this pull's.
//   - A tag others own gets the job as one more owner and a new version: the job's pull
//     must really happen (the others' may have failed, or used other credentials).
//   - A tag the job alone owns takes the job's current policy; its version is raised only
//     when its last pull failed, since then the new policy may succeed.
func (c *Controller) applyJob(ni *appsv1beta1.NodeImage, job *appsv1beta1.ImagePullJob, image, tag string,
	secretRefs []appsv1beta1.ReferenceObject) bool {
	before := ni.Spec.DeepCopy()
	if ni.Spec.Images == nil {
		ni.Spec.Images = map[string]appsv1beta1.ImageSpec{}
	}
	spec := ni.Spec.Images[image]
	if job.Spec.SandboxConfig != nil {
		spec.SandboxConfig = job.Spec.SandboxConfig.DeepCopy()
	}
	now := metav1.NewTime(c.clock.Now())
	pullPolicy := jobutil.ImagePullPolicy(job)
	want := jobutil.TagPullPolicy(job, c.randInt63n)
	status := tagStatus(ni, image, tag)
	switch t := findTag(spec.Tags, tag); {
	case t == nil:
		var version int64
		if status != nil {
			version = status.Version + 1
		}
		spec.Tags = append(spec.Tags, appsv1beta1.ImageTagSpec{
			Tag:             tag,
			Version:         version,
			OwnerReferences: []corev1.ObjectReference{jobutil.OwnerReference(job)},
			CreatedAt:       &now,
			ImagePullPolicy: pullPolicy,
			PullPolicy:      want,
		})
	case !ownsTag(t, job.UID):
		t.Version++
		t.OwnerReferences = append(t.OwnerReferences, jobutil.OwnerReference(job))
		t.CreatedAt = &now
		t.ImagePullPolicy = pullPolicy
		if t.PullPolicy == nil {
			t.PullPolicy = want
		}
	case soleOwner(t, job.UID) && (jobutil.PolicyDiffers(t.PullPolicy, want) || t.ImagePullPolicy != pullPolicy):
		if t.PullPolicy != nil && t.PullPolicy.TTLSecondsAfterFinished != nil {
			want.TTLSecondsAfterFinished = ptr.To(*t.PullPolicy.TTLSecondsAfterFinished)
		}
		t.PullPolicy = want
		t.ImagePullPolicy = pullPolicy
		if status != nil && status.Version == t.Version && status.Phase == appsv1beta1.ImagePhaseFailed {
			t.Version++
			t.CreatedAt = &now
		}
	}
	for _, ref := range secretRefs {
		if !slices.Contains(spec.PullSecrets, ref) {
			spec.PullSecrets = append(spec.PullSecrets, ref)
		}
	}
	slices.SortStableFunc(spec.Tags, func(a, b appsv1beta1.ImageTagSpec) int { return strings.Compare(a.Tag, b.Tag) })
	ni.Spec.Images[image] = spec
	return !semanticEqual(before, &ni.Spec)
}
