package advanceddaemonset

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/advanceddaemonset/daemonsetutil"
	"github.com/bosun-dev/bosun/pkg/controller/hash"
	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/refmanager"
)

// history is a DaemonSet's ControllerRevisions: current records its template, old the
// others.
type history struct {
	current *appsv1.ControllerRevision
	old     []*appsv1.ControllerRevision
}

// hash returns the current revision's hash, the value of the pods' hash label.
func (h history) hash() string {
	return h.current.Labels[appsv1beta1.ControllerRevisionHashLabelKey]
}

// byHash returns the revision whose hash label is value, or nil.
func (h history) byHash(value string) *appsv1.ControllerRevision {
	for _, revision := range append([]*appsv1.ControllerRevision{h.current}, h.old...) {
		if revision.Labels[appsv1beta1.ControllerRevisionHashLabelKey] == value {
			return revision
		}
	}
	return nil
}

// constructHistory claims ds's revisions and finds, or creates, the one recording its
// template. Duplicates of the current revision are merged into the newest of them (their
// pods relabelled), and a current revision that is older than the newest old one, which
// a rollback brings, gets the next revision number.
func (c *Controller) constructHistory(ctx context.Context, ds *appsv1beta1.DaemonSet, selector labels.Selector, pods []*corev1.Pod) (history, error) {
	owned, err := c.claimRevisions(ctx, ds, selector)
	if err != nil {
		return history{}, err
	}
	data, err := kruisepod.RevisionData(&ds.Spec.Template)
	if err != nil {
		return history{}, err
	}
	var (
		matching []*appsv1.ControllerRevision
		h        history
	)
	for _, revision := range owned {
		current, err := kruisepod.MatchesRevisionData(revision.Data.Raw, &ds.Spec.Template)
		if err != nil {
			return history{}, err
		}
		if current {
			matching = append(matching, revision)
		} else {
			h.old = append(h.old, revision)
		}
	}
	next := nextRevisionNumber(h.old)

	if len(matching) == 0 {
		if h.current, err = c.createRevision(ctx, ds, data, next); err != nil {
			return history{}, err
		}
		return h, nil
	}
	if h.current, err = c.dedupeCurrent(ctx, matching, pods); err != nil {
		return history{}, err
	}
	if h.current.Revision < next {
		// A rollback: the template is an old one again, and must read as the newest.
		renumbered := h.current.DeepCopy()
		renumbered.Revision = next
		klog.FromContext(ctx).V(2).Info("Renumbering the current revision", "controllerRevision", klog.KObj(renumbered), "revision", next)
		if h.current, err = c.kubeClient.AppsV1().ControllerRevisions(ds.Namespace).Update(ctx, renumbered, metav1.UpdateOptions{}); err != nil {
			return history{}, fmt.Errorf("renumbering ControllerRevision %s: %w", klog.KObj(renumbered), err)
		}
	}
	return h, nil
}

// claimRevisions claims the namespace's revisions matching ds's selector, and gives every
// owned one the hash label, which older writers did not always set.
func (c *Controller) claimRevisions(ctx context.Context, ds *appsv1beta1.DaemonSet, selector labels.Selector) ([]*appsv1.ControllerRevision, error) {
	all, err := c.revisions.ControllerRevisions(ds.Namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing ControllerRevisions: %w", err)
	}
	claimer := refmanager.New(ds, controllerKind, selector, c.canAdopt(ds), refmanager.ControllerRevisionPatcher(c.kubeClient))
	owned, err := refmanager.ClaimAll(ctx, claimer, all, nil)
	if err != nil {
		return nil, fmt.Errorf("claiming ControllerRevisions for DaemonSet %s: %w", klog.KObj(ds), err)
	}
	for i, revision := range owned {
		if _, ok := revision.Labels[appsv1beta1.ControllerRevisionHashLabelKey]; ok {
			continue
		}
		labelled := revision.DeepCopy()
		if labelled.Labels == nil {
			labelled.Labels = map[string]string{}
		}
		labelled.Labels[appsv1beta1.ControllerRevisionHashLabelKey] = labelled.Name
		if owned[i], err = c.kubeClient.AppsV1().ControllerRevisions(ds.Namespace).Update(ctx, labelled, metav1.UpdateOptions{}); err != nil {
			return nil, fmt.Errorf("labelling ControllerRevision %s: %w", klog.KObj(labelled), err)
		}
	}
	return owned, nil
}

// nextRevisionNumber returns one more than the highest revision number of revisions.
func nextRevisionNumber(revisions []*appsv1.ControllerRevision) int64 {
	var highest int64
	for _, revision := range revisions {
		highest = max(highest, revision.Revision)
	}
	return highest + 1
}

// revisionAnnotations are the DaemonSet's annotations, which a revision carries as upstream
// DaemonSets' do, except the reserved ones of version conversion: those describe the
// DaemonSet in another API version and mean nothing on a ControllerRevision.
func revisionAnnotations(ds *appsv1beta1.DaemonSet) map[string]string {
	annotations := maps.Clone(ds.Annotations)
	maps.DeleteFunc(annotations, func(key, _ string) bool {
		return strings.HasPrefix(key, appsv1beta1.ConversionAnnotationPrefix)
	})
	return annotations
}

// createRevision creates the revision recording ds's template, named after the
// template's hash salted with status.collisionCount. A revision of that name with other
// data is a hash collision: the collision count is bumped, which changes the name the next
// sync tries.
func (c *Controller) createRevision(ctx context.Context, ds *appsv1beta1.DaemonSet, data []byte, number int64) (*appsv1.ControllerRevision, error) {
	templateHash := hash.ComputeHash(&ds.Spec.Template, ds.Status.CollisionCount)
	revisionLabels := maps.Clone(ds.Spec.Template.Labels)
	if revisionLabels == nil {
		revisionLabels = map[string]string{}
	}
	revisionLabels[appsv1beta1.ControllerRevisionHashLabelKey] = templateHash
	revision := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            ds.Name + "-" + templateHash,
			Namespace:       ds.Namespace,
			Labels:          revisionLabels,
			Annotations:     revisionAnnotations(ds),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, controllerKind)},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: number,
	}
	created, err := c.kubeClient.AppsV1().ControllerRevisions(ds.Namespace).Create(ctx, revision, metav1.CreateOptions{})
	if err == nil {
		klog.FromContext(ctx).V(2).Info("Created ControllerRevision", "controllerRevision", klog.KObj(created), "revision", number)
		return created, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating ControllerRevision %s: %w", klog.KObj(revision), err)
	}
	existing, getErr := c.kubeClient.AppsV1().ControllerRevisions(ds.Namespace).Get(ctx, revision.Name, metav1.GetOptions{})
	if getErr != nil {
		return nil, fmt.Errorf("reading ControllerRevision %s after a name clash: %w", klog.KObj(revision), getErr)
	}
	if same, _ := kruisepod.MatchesRevisionData(existing.Data.Raw, &ds.Spec.Template); same && metav1.IsControlledBy(existing, ds) {
		// Ours, created by an earlier sync the cache does not show yet.
		return existing, nil
	}
	if err := c.bumpCollisionCount(ctx, ds); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("ControllerRevision %s exists with other data; collision count raised to %d", klog.KObj(revision), ptr.Deref(ds.Status.CollisionCount, 0))
}

// bumpCollisionCount raises ds's status.collisionCount by one, on ds and on the server.
func (c *Controller) bumpCollisionCount(ctx context.Context, ds *appsv1beta1.DaemonSet) error {
	ds.Status.CollisionCount = ptr.To(ptr.Deref(ds.Status.CollisionCount, 0) + 1)
	body, err := json.Marshal(map[string]any{"status": map[string]any{"collisionCount": *ds.Status.CollisionCount}})
	if err != nil {
		return err
	}
	if _, err := c.bosunClient.AppsV1beta1().DaemonSets(ds.Namespace).Patch(ctx, ds.Name, types.MergePatchType, body, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("raising the collision count of DaemonSet %s: %w", klog.KObj(ds), err)
	}
	return nil
}

// dedupeCurrent keeps the highest-numbered of several revisions that record the same
// template, moves the pods of the others onto its hash, and deletes the others.
func (c *Controller) dedupeCurrent(ctx context.Context, matching []*appsv1.ControllerRevision, pods []*corev1.Pod) (*appsv1.ControllerRevision, error) {
	keep := slices.MaxFunc(matching, func(a, b *appsv1.ControllerRevision) int { return cmp.Compare(a.Revision, b.Revision) })
	keepHash := keep.Labels[appsv1beta1.ControllerRevisionHashLabelKey]
	for _, duplicate := range matching {
		if duplicate == keep {
			continue
		}
		duplicateHash := duplicate.Labels[appsv1beta1.ControllerRevisionHashLabelKey]
		for _, pod := range pods {
			if pod.Labels[appsv1beta1.ControllerRevisionHashLabelKey] != duplicateHash || duplicateHash == keepHash {
				continue
			}
			body, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{appsv1beta1.ControllerRevisionHashLabelKey: keepHash}}})
			if err != nil {
				return nil, err
			}
			if err := c.podControl.PatchPod(ctx, pod.Namespace, pod.Name, body); err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("relabelling pod %s to revision %s: %w", klog.KObj(pod), keepHash, err)
			}
		}
		klog.FromContext(ctx).V(2).Info("Deleting duplicate ControllerRevision", "controllerRevision", klog.KObj(duplicate), "keeping", klog.KObj(keep))
		err := c.kubeClient.AppsV1().ControllerRevisions(duplicate.Namespace).Delete(ctx, duplicate.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("deleting duplicate ControllerRevision %s: %w", klog.KObj(duplicate), err)
		}
	}
	return keep, nil
}

// cleanupHistory deletes the oldest of old beyond ds's revisionHistoryLimit, never one
// whose hash a pod still carries: that pod may need its revision for an in-place update
// or a rollback.
func (c *Controller) cleanupHistory(ctx context.Context, ds *appsv1beta1.DaemonSet, old []*appsv1.ControllerRevision, pods []*corev1.Pod) error {
	surplus := len(old) - daemonsetutil.RevisionHistoryLimit(ds)
	if surplus <= 0 {
		return nil
	}
	live := sets.New[string]()
	for _, pod := range pods {
		if value, ok := pod.Labels[appsv1beta1.ControllerRevisionHashLabelKey]; ok {
			live.Insert(value)
		}
	}
	oldestFirst := slices.SortedFunc(slices.Values(old), func(a, b *appsv1.ControllerRevision) int { return cmp.Compare(a.Revision, b.Revision) })
	for _, revision := range oldestFirst {
		if surplus == 0 {
			break
		}
		if live.Has(revision.Labels[appsv1beta1.ControllerRevisionHashLabelKey]) {
			continue
		}
		klog.FromContext(ctx).V(2).Info("Deleting old ControllerRevision", "controllerRevision", klog.KObj(revision), "revision", revision.Revision)
		err := c.kubeClient.AppsV1().ControllerRevisions(revision.Namespace).Delete(ctx, revision.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting ControllerRevision %s: %w", klog.KObj(revision), err)
		}
		surplus--
	}
	return nil
}
