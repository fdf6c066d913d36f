package nodeimage

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/nodeimage/nodeimageutil"
)

// syncNodeImage brings the NodeImage of one node in line (see the package documentation).
func (c *Controller) syncNodeImage(ctx context.Context, name string) error {
	logger := klog.FromContext(ctx).WithValues("node", name)
	ctx = klog.NewContext(ctx, logger)

	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		node = nil
	} else if err != nil {
		return fmt.Errorf("getting Node %s from the cache: %w", name, err)
	}
	ni, err := c.nodeImages.Get(name)
	if apierrors.IsNotFound(err) {
		ni = nil
	} else if err != nil {
		return fmt.Errorf("getting NodeImage %s from the cache: %w", name, err)
	}

	if node == nil || node.DeletionTimestamp != nil {
		return c.deleteOrphan(ctx, ni)
	}
	if ni == nil {
		return c.createWhenReady(ctx, node)
	}

	changed, next, err := c.rewriteSpec(ctx, node, ni)
	if err != nil || changed {
		// The update event of the rewrite brings the node back for the status.
		return err
	}
	statusNext, err := c.syncStatus(ctx, ni)
	if err != nil {
		return err
	}
	next = earliest(next, statusNext)
	if !next.IsZero() {
		c.requeueAfter(name, next.Sub(c.clock.Now()))
	}
	return nil
}

// deleteOrphan deletes the NodeImage of a node that is gone or going, unless it is marked
// as not belonging to a real node.
func (c *Controller) deleteOrphan(ctx context.Context, ni *appsv1beta1.NodeImage) error {
	if ni == nil || ni.DeletionTimestamp != nil {
		return nil
	}
	if _, fake := ni.Labels[appsv1beta1.FakeNodeImageLabelKey]; fake {
		return nil
	}
	c.forgetSecretCheck(ni.Name)
	err := c.bosunClient.AppsV1beta1().NodeImages().Delete(ctx, ni.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &ni.UID},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Gone already, or a new NodeImage under the name: its own events bring it here.
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting NodeImage %s of a node that is gone: %w", ni.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted the NodeImage of a node that is gone", "nodeImage", klog.KObj(ni))
	return nil
}

// createWhenReady creates the node's NodeImage once its Ready condition has been True for
// the creation delay, and otherwise looks at the node again when that time comes. A node
// that is not Ready is left to its next update.
func (c *Controller) createWhenReady(ctx context.Context, node *corev1.Node) error {
	ready := readyCondition(node)
	if ready == nil || ready.Status != corev1.ConditionTrue {
		return nil
	}
	if wait := ready.LastTransitionTime.Add(c.creationDelay).Sub(c.clock.Now()); wait > 0 {
		c.queue.AddAfter(node.Name, wait)
		return nil
	}
	ni := &appsv1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: node.Name, Labels: maps.Clone(node.Labels)}}
	_, err := c.bosunClient.AppsV1beta1().NodeImages().Create(ctx, ni, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating the NodeImage of node %s: %w", node.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Created the NodeImage of a Ready node", "nodeImage", node.Name)
	return nil
}

// rewriteSpec writes the NodeImage's labels and spec when cleanSpec changes them,
// re-reading it on conflicts. It reports whether it wrote, and the earliest time a TTL or
// secret check falls due.
func (c *Controller) rewriteSpec(ctx context.Context, node *corev1.Node, cached *appsv1beta1.NodeImage) (bool, time.Time, error) {
	lookups := &referenceLookups{c: c, jobs: map[types.UID]bool{}, secrets: map[string]bool{}}
	var changed bool
	var next time.Time
	current := cached
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if current == nil {
			fresh, err := c.bosunClient.AppsV1beta1().NodeImages().Get(ctx, cached.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			current = fresh
		}
		updated := current.DeepCopy()
		var err error
		changed, next, err = c.cleanSpec(ctx, node, updated, lookups)
		if err != nil || !changed {
			return err
		}
		if _, err := c.bosunClient.AppsV1beta1().NodeImages().Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			current = nil
			return err
		}
		return nil
	})
	if apierrors.IsNotFound(err) {
		return false, time.Time{}, nil
	}
	if err != nil {
		return false, time.Time{}, fmt.Errorf("rewriting the spec of NodeImage %s: %w", cached.Name, err)
	}
	if lookups.secretsChecked {
		c.recordSecretCheck(cached.Name, lookups.checkedAt)
	}
	if changed {
		klog.FromContext(ctx).V(2).Info("Rewrote the spec of the NodeImage", "nodeImage", klog.KObj(cached))
	} else if hasSecretRefs(cached) {
		next = earliest(next, c.nextSecretCheck(cached.Name))
	}
	return changed, next, nil
}

// cleanSpec changes ni in place as the package documentation describes and reports
// whether it changed anything and the earliest time a TTL expires.
func (c *Controller) cleanSpec(ctx context.Context, node *corev1.Node, ni *appsv1beta1.NodeImage, lookups *referenceLookups) (bool, time.Time, error) {
	changed := false
	if !labelsEqual(ni.Labels, node.Labels) {
		ni.Labels = maps.Clone(node.Labels)
		changed = true
	}
	now := c.clock.Now()
	var next time.Time
	checkSecrets := c.secretCheckDue(ni.Name, now)
	for _, image := range slices.Sorted(maps.Keys(ni.Spec.Images)) {
		spec := ni.Spec.Images[image]
		var tags []appsv1beta1.ImageTagSpec
		for _, tag := range spec.Tags {
			if tag.CreatedAt == nil {
				changed = true
				continue
			}
			owners, err := lookups.liveOwners(ctx, tag.OwnerReferences)
			if err != nil {
				return false, time.Time{}, err
			}
			if len(owners) != len(tag.OwnerReferences) {
				changed = true
				if len(owners) == 0 {
					continue
				}
				tag.OwnerReferences = owners
			}
			if expiry, ok := ttlExpiry(ni, image, tag); ok {
				if !now.Before(expiry) {
					changed = true
					continue
				}
				next = earliest(next, expiry)
			}
			tags = append(tags, tag)
		}
		// tags holds the copies whose owner lists were shortened too, not only the tags
		// that stay: a tag others still own loses a gone job's reference without any tag
		// going.
		spec.Tags = tags
		if checkSecrets && len(spec.PullSecrets) > 0 {
			secrets, err := lookups.existingSecrets(ctx, spec.PullSecrets, now)
			if err != nil {
				return false, time.Time{}, err
			}
			if len(secrets) != len(spec.PullSecrets) {
				spec.PullSecrets = secrets
				changed = true
			}
		}
		if len(spec.Tags) == 0 {
			delete(ni.Spec.Images, image)
			changed = true
			continue
		}
		ni.Spec.Images[image] = spec
	}
	return changed, next, nil
}

// ttlExpiry returns when the tag leaves the spec: ttlSecondsAfterFinished after the
// completion of its current status. ok is false while there is no such time.
func ttlExpiry(ni *appsv1beta1.NodeImage, image string, tag appsv1beta1.ImageTagSpec) (time.Time, bool) {
	if tag.PullPolicy == nil || tag.PullPolicy.TTLSecondsAfterFinished == nil {
		return time.Time{}, false
	}
	status := nodeimageutil.FindTagStatus(ni.Status.ImageStatuses[image].Tags, tag.Tag)
	if status == nil || status.Version != tag.Version || status.CompletionTime == nil {
		return time.Time{}, false
	}
	return status.CompletionTime.Add(time.Duration(*tag.PullPolicy.TTLSecondsAfterFinished) * time.Second), true
}

// referenceLookups answers, once per sync, whether the ImagePullJobs and Secrets a
// NodeImage references still exist.
type referenceLookups struct {
	c *Controller
	// jobs caches by owner UID whether the job exists with that UID.
	jobs map[types.UID]bool
	// secrets caches by namespace/name whether the Secret exists.
	secrets map[string]bool
	// secretsChecked and checkedAt record that Secrets were looked up, and when.
	secretsChecked bool
	checkedAt      time.Time
}

// liveOwners returns the owner references to keep: every reference to something other
// than an ImagePullJob, and those to ImagePullJobs that exist with the referenced UID.
func (l *referenceLookups) liveOwners(ctx context.Context, refs []corev1.ObjectReference) ([]corev1.ObjectReference, error) {
	if len(refs) == 0 || l.c.jobs == nil {
		return refs, nil
	}
	kept := refs[:0:0]
	for _, ref := range refs {
		if !nodeimageutil.IsImagePullJobReference(ref) {
			kept = append(kept, ref)
			continue
		}
		exists, err := l.jobExists(ctx, ref)
		if err != nil {
			return nil, err
		}
		if exists {
			kept = append(kept, ref)
		}
	}
	return kept, nil
}

// jobExists reports whether the referenced ImagePullJob exists with the referenced UID.
// A job the cache does not have (or has under another UID) is looked up on the API
// server: the cache may lag behind the job controller that wrote the reference.
func (l *referenceLookups) jobExists(ctx context.Context, ref corev1.ObjectReference) (bool, error) {
	if exists, known := l.jobs[ref.UID]; known {
		return exists, nil
	}
	exists := false
	job, err := l.c.jobs.ImagePullJobs(ref.Namespace).Get(ref.Name)
	switch {
	case err == nil && job.UID == ref.UID:
		exists = true
	case err == nil || apierrors.IsNotFound(err):
		live, err := l.c.bosunClient.AppsV1beta1().ImagePullJobs(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("getting ImagePullJob %s/%s: %w", ref.Namespace, ref.Name, err)
		}
		exists = err == nil && live.UID == ref.UID
	default:
		return false, fmt.Errorf("getting ImagePullJob %s/%s from the cache: %w", ref.Namespace, ref.Name, err)
	}
	l.jobs[ref.UID] = exists
	return exists, nil
}

// existingSecrets returns the references whose Secret exists, read from the API server.
func (l *referenceLookups) existingSecrets(ctx context.Context, refs []appsv1beta1.ReferenceObject, now time.Time) ([]appsv1beta1.ReferenceObject, error) {
	l.secretsChecked, l.checkedAt = true, now
	kept := refs[:0:0]
	for _, ref := range refs {
		key := ref.Namespace + "/" + ref.Name
		exists, known := l.secrets[key]
		if !known {
			_, err := l.c.client.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("getting pull secret %s: %w", key, err)
			}
			exists = err == nil
			l.secrets[key] = exists
		}
		if exists {
			kept = append(kept, ref)
		}
	}
	return kept, nil
}

// secretCheckDue reports whether the NodeImage's secret references are to be looked up.
func (c *Controller) secretCheckDue(name string, now time.Time) bool {
	c.secretsMu.Lock()
	defer c.secretsMu.Unlock()
	last, ok := c.secretsChecked[name]
	return !ok || !now.Before(last.Add(secretCheckInterval))
}

// nextSecretCheck returns when the NodeImage's secret references are next looked up.
func (c *Controller) nextSecretCheck(name string) time.Time {
	c.secretsMu.Lock()
	defer c.secretsMu.Unlock()
	return c.secretsChecked[name].Add(secretCheckInterval)
}

func (c *Controller) recordSecretCheck(name string, at time.Time) {
	c.secretsMu.Lock()
	defer c.secretsMu.Unlock()
	c.secretsChecked[name] = at
}

func (c *Controller) forgetSecretCheck(name string) {
	c.secretsMu.Lock()
	defer c.secretsMu.Unlock()
	delete(c.secretsChecked, name)
}

func hasSecretRefs(ni *appsv1beta1.NodeImage) bool {
	for _, image := range ni.Spec.Images {
		if len(image.PullSecrets) > 0 {
			return true
		}
	}
	return false
}

// ownsAnyTag reports whether the ImagePullJob with uid owns some tag of ni, through a
// reference of any version.
func ownsAnyTag(ni *appsv1beta1.NodeImage, uid types.UID) bool {
	for _, image := range ni.Spec.Images {
		for _, tag := range image.Tags {
			for _, ref := range tag.OwnerReferences {
				if nodeimageutil.RefersToImagePullJob(ref, uid) {
					return true
				}
			}
		}
	}
	return false
}

// earliest returns the earlier of two times, a zero time counting as none.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	default:
		return b
	}
}
