package refmanager

import (
	"context"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
)

// ResolveControllerRef returns the owner that a child's controller reference ref points
// to, looked up with get (a lister's Get). It reports false when ref is not of kind, when
// no such object exists, and when the object of that name has another UID: the owner was
// deleted and re-created under the same name, so it is not the owner the child means.
func ResolveControllerRef[T metav1.Object](ref *metav1.OwnerReference, kind string, get func(name string) (T, error)) (T, bool) {
	var none T
	if ref == nil || ref.Kind != kind {
		return none, false
	}
	owner, err := get(ref.Name)
	if err != nil || owner.GetUID() != ref.UID {
		return none, false
	}
	return owner, true
}

// SelectingOwners returns the owners whose selector (selectorOf) matches an orphan's
// labels: the owners that may want to adopt it. An orphan without labels matches nothing;
// so do invalid selectors and empty ones, which would select everything and which
// controllers refuse to act on.
func SelectingOwners[T any](owners []T, orphanLabels map[string]string, selectorOf func(T) *metav1.LabelSelector) []T {
	if len(orphanLabels) == 0 {
		return nil
	}
	var matching []T
	for _, owner := range owners {
		selector, err := metav1.LabelSelectorAsSelector(selectorOf(owner))
		if err != nil || selector.Empty() || !selector.Matches(labels.Set(orphanLabels)) {
			continue
		}
		matching = append(matching, owner)
	}
	return matching
}

// AdoptersOf returns the owners whose selector matches orphan (see SelectingOwners). More
// than one is logged: overlapping selectors make owners race for the orphan, the first to
// claim it wins, and only the user can fix that.
func AdoptersOf[T metav1.Object](ctx context.Context, owners []T, orphan metav1.Object, selectorOf func(T) *metav1.LabelSelector) []T {
	adopters := SelectingOwners(owners, orphan.GetLabels(), selectorOf)
	if len(adopters) > 1 {
		klog.FromContext(ctx).Info("Orphan is selected by several owners; the first to claim it wins",
			"orphan", klog.KObj(orphan), "labels", orphan.GetLabels(), "owners", klog.KObjSlice(adopters))
	}
	return adopters
}

// RefChange is what an update of a child object (a pod, a ReplicaSet) means for the
// owners that may care about it.
type RefChange struct {
	// Former is the controller reference the update removed or replaced; nil when the
	// controller stayed the same or there was none.
	Former *metav1.OwnerReference
	// Current is the child's controller reference after the update; nil for an orphan.
	Current *metav1.OwnerReference
	// Adoptable is set for an orphan whose labels or ownership changed: owners whose
	// selector now matches it should look at it.
	Adoptable bool
}

// CompareControllerRefs works out the RefChange of an update from old to cur.
func CompareControllerRefs(old, cur metav1.Object) RefChange {
	before, after := metav1.GetControllerOfNoCopy(old), metav1.GetControllerOfNoCopy(cur)
	change := RefChange{Current: after}
	refChanged := !reflect.DeepEqual(before, after)
	if refChanged {
		change.Former = before
	}
	if after == nil {
		change.Adoptable = refChanged || !reflect.DeepEqual(old.GetLabels(), cur.GetLabels())
	}
	return change
}
