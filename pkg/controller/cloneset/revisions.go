package cloneset

import (
	"bytes"
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/cloneset/clonesetutil"
)

// maxRevisionCollisions bounds the names tried for one new revision. Each clash bumps the
// collision count, which changes the name; a long run of clashes means something other than
// chance, and the next sync tries on from the count reached.
const maxRevisionCollisions = 100

// defaultRevisionHistoryLimit is the number of old revisions kept when the CloneSet does
// not say.
const defaultRevisionHistoryLimit = 10

// listRevisions returns the revisions of cs's namespace that its selector matches and that
// it controls, or that nobody controls, oldest first. Like OpenKruise, the controller uses
// orphaned revisions of its selector as its own history without adopting them.
func (c *Controller) listRevisions(cs *appsv1beta1.CloneSet, selector labels.Selector) ([]*appsv1.ControllerRevision, error) {
	all, err := c.revisions.ControllerRevisions(cs.Namespace).List(selector)
	if err != nil {
		return nil, fmt.Errorf("listing ControllerRevisions of CloneSet %s: %w", klog.KObj(cs), err)
	}
	var revisions []*appsv1.ControllerRevision
	for _, revision := range all {
		if ref := metav1.GetControllerOfNoCopy(revision); ref == nil || ref.UID == cs.UID {
			revisions = append(revisions, revision)
		}
	}
	clonesetutil.SortRevisions(revisions)
	return revisions, nil
}

// activeRevisions sets v's update revision, the one recording the CloneSet's template,
// creating it when none does, and its current revision, the one status.currentRevision
// names (the update revision when none does):
//   - the newest revision records the template: it is the update revision;
//   - an older one does (a rollback): it becomes the newest by getting the next revision
//     number, and the hash of the CloneSet's volume claim templates;
//   - none does: a new revision is created, named after its data and the collision count.
func (c *Controller) activeRevisions(ctx context.Context, v *view) error {
	v.collisionCount = ptr.Deref(v.cs.Status.CollisionCount, 0)
	candidate, err := clonesetutil.NewRevision(v.cs, clonesetutil.NextRevisionNumber(v.revisions), v.collisionCount)
	if err != nil {
		return err
	}
	var equal []*appsv1.ControllerRevision
	for _, revision := range v.revisions {
		if clonesetutil.EqualRevisions(revision, candidate) {
			equal = append(equal, revision)
		}
	}
	switch {
	case len(equal) > 0 && clonesetutil.EqualRevisions(v.revisions[len(v.revisions)-1], equal[len(equal)-1]):
		v.update = v.revisions[len(v.revisions)-1]
	case len(equal) > 0:
		if v.update, err = c.renumberRevision(ctx, equal[len(equal)-1], candidate); err != nil {
			return err
		}
	default:
		if v.update, err = c.createRevision(ctx, v, candidate); err != nil {
			return err
		}
	}
	for _, revision := range v.revisions {
		if revision.Name == v.cs.Status.CurrentRevision {
			v.current = revision
			break
		}
	}
	if v.current == nil {
		v.current = v.update
	}
	return nil
}

// renumberRevision gives revision, an older record of the CloneSet's template, the number
// of candidate, which makes it the newest, and candidate's volume-claim-template hash when
// its own is missing or differs. A conflict is retried on the live revision.
func (c *Controller) renumberRevision(ctx context.Context, revision, candidate *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	const vctKey = appsv1beta1.CloneSetVolumeClaimTemplateHashAnnotationKey
	updated := revision.DeepCopy()
	if want, ok := candidate.Annotations[vctKey]; ok {
		if got, has := updated.Annotations[vctKey]; !has || got != want {
			if updated.Annotations == nil {
				updated.Annotations = map[string]string{}
			}
			updated.Annotations[vctKey] = want
		}
	}
	client := c.kubeClient.AppsV1().ControllerRevisions(revision.Namespace)
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if updated.Revision == candidate.Revision {
			return nil
		}
		updated.Revision = candidate.Revision
		written, err := client.Update(ctx, updated, metav1.UpdateOptions{})
		if err == nil {
			updated = written
			return nil
		}
		if live, getErr := client.Get(ctx, updated.Name, metav1.GetOptions{}); getErr == nil {
			updated = live
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("renumbering ControllerRevision %s: %w", klog.KObj(revision), err)
	}
	klog.FromContext(ctx).V(2).Info("Rolled back to an earlier revision", "controllerRevision", klog.KObj(updated), "revision", updated.Revision)
	return updated, nil
}

// createRevision creates candidate under the name its data and the collision count give.
// A revision of that name with other data is a hash collision: the count goes up, which
// changes the name, and the next name is tried. Its labels keep the hash of the count it
// was built with, as OpenKruise's do. One with the same data is the revision wanted,
// created by an earlier sync the cache does not show yet.
func (c *Controller) createRevision(ctx context.Context, v *view, candidate *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	client := c.kubeClient.AppsV1().ControllerRevisions(candidate.Namespace)
	for range maxRevisionCollisions {
		revision := candidate.DeepCopy()
		revision.Name = clonesetutil.RevisionNameFor(v.cs.Name, candidate.Data.Raw, v.collisionCount)
		created, err := client.Create(ctx, revision, metav1.CreateOptions{})
		if err == nil {
			klog.FromContext(ctx).V(2).Info("Created ControllerRevision", "controllerRevision", klog.KObj(created), "revision", created.Revision)
			return created, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating ControllerRevision %s: %w", klog.KObj(revision), err)
		}
		existing, err := client.Get(ctx, revision.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading ControllerRevision %s after a name clash: %w", klog.KObj(revision), err)
		}
		if bytes.Equal(existing.Data.Raw, revision.Data.Raw) {
			return existing, nil
		}
		v.collisionCount++
		klog.FromContext(ctx).V(2).Info("ControllerRevision name taken by other data; raising the collision count",
			"controllerRevision", klog.KObj(revision), "collisionCount", v.collisionCount)
	}
	return nil, fmt.Errorf("no free ControllerRevision name for CloneSet %s after %d collisions", klog.KObj(v.cs), maxRevisionCollisions)
}

// truncateHistory deletes the oldest revisions beyond revisionHistoryLimit among those
// that are neither the current nor the update revision and that no active pod is at.
func (c *Controller) truncateHistory(ctx context.Context, v *view) error {
	var dead []*appsv1.ControllerRevision
	for _, revision := range v.revisions {
		if revision.Name == v.current.Name || revision.Name == v.update.Name {
			continue
		}
		live := false
		for _, pod := range v.pods {
			if clonesetutil.AtRevision(pod, revision.Name) {
				live = true
				break
			}
		}
		if !live {
			dead = append(dead, revision)
		}
	}
	limit := defaultRevisionHistoryLimit
	if v.cs.Spec.RevisionHistoryLimit != nil {
		limit = int(*v.cs.Spec.RevisionHistoryLimit)
	}
	if len(dead) <= limit {
		return nil
	}
	for _, revision := range dead[:len(dead)-limit] {
		klog.FromContext(ctx).V(2).Info("Deleting old ControllerRevision", "controllerRevision", klog.KObj(revision), "revision", revision.Revision)
		err := c.kubeClient.AppsV1().ControllerRevisions(revision.Namespace).Delete(ctx, revision.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting ControllerRevision %s: %w", klog.KObj(revision), err)
		}
	}
	return nil
}
