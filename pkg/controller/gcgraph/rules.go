package gcgraph

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// RefChange is an owner reference whose UID stayed but whose content changed.
type RefChange struct {
	Old, New metav1.OwnerReference
}

// Unblocked reports whether the change turned a blocking reference into a non-blocking
// one; the owner may then be waiting for nothing and must be re-checked.
func (c RefChange) Unblocked() bool {
	return IsBlocking(c.Old) && !IsBlocking(c.New)
}

// DiffOwnerRefs compares two ownerReference lists by UID. added and changed follow the
// order of updated, removed the order of old.
func DiffOwnerRefs(old, updated []metav1.OwnerReference) (added, removed []metav1.OwnerReference, changed []RefChange) {
	oldByUID := make(map[types.UID]metav1.OwnerReference, len(old))
	for _, ref := range old {
		oldByUID[ref.UID] = ref
	}
	newUIDs := make(map[types.UID]bool, len(updated))
	for _, ref := range updated {
		newUIDs[ref.UID] = true
		prev, ok := oldByUID[ref.UID]
		switch {
		case !ok:
			added = append(added, ref)
		case !reflect.DeepEqual(prev, ref):
			changed = append(changed, RefChange{Old: prev, New: ref})
		}
	}
	for _, ref := range old {
		if !newUIDs[ref.UID] {
			removed = append(removed, ref)
		}
	}
	return added, removed, changed
}

// PartitionDependents splits dependents by how their reference to owner.UID relates to
// owner's identity: matching dependents name owner's coordinates (and, for a namespaced
// owner, live in its namespace); nonMatching dependents name the UID with other
// coordinates, or live in another namespace than a namespaced owner. A dependent with
// several references to the UID may appear in both.
func PartitionDependents(dependents []*Node, owner Identity) (matching, nonMatching []*Node) {
	ownerNamespaced := owner.Namespace != ""
	for _, dep := range dependents {
		var match, mismatch bool
		if ownerNamespaced && dep.identity.Namespace != owner.Namespace {
			// No reference from another namespace can point at a namespaced owner.
			mismatch = true
		} else {
			for _, ref := range dep.Owners() {
				if ref.UID != owner.UID {
					continue
				}
				if owner.MatchesRef(ref) {
					match = true
				} else {
					mismatch = true
				}
			}
		}
		if match {
			matching = append(matching, dep)
		}
		if mismatch {
			nonMatching = append(nonMatching, dep)
		}
	}
	return matching, nonMatching
}

// AlternateIdentity picks the identity a virtual node should try next after absent was
// verified not to exist: among the identities the dependents' references to absent.UID
// name (coordinates plus the dependent's namespace) other than absent itself, the first
// one ordered after absent by Identity.Less, or else the first one overall. Cycling
// through the alternatives in order guarantees each is tried. ok is false when there is
// no alternative.
//
// When absent is cluster-scoped, an alternative with absent's apiVersion and kind is
// taken as cluster-scoped too (the kind is known to be cluster-scoped).
func AlternateIdentity(dependents []*Node, absent Identity) (alt Identity, ok bool) {
	absentClusterScoped := absent.Namespace == ""
	seen := map[Identity]bool{absent: true}
	var first, firstAfter *Identity
	for _, dep := range dependents {
		for _, ref := range dep.Owners() {
			if ref.UID != absent.UID {
				continue
			}
			if absent.MatchesRef(ref) && (absentClusterScoped || dep.identity.Namespace == absent.Namespace) {
				continue // the identity just verified absent
			}
			candidate := IdentityFromRef(ref, dep.identity.Namespace)
			if absentClusterScoped && candidate.APIVersion == absent.APIVersion && candidate.Kind == absent.Kind {
				candidate.Namespace = ""
			}
			if seen[candidate] {
				continue
			}
			seen[candidate] = true
			if first == nil || candidate.Less(*first) {
				first = &candidate
			}
			if absent.Less(candidate) && (firstAfter == nil || candidate.Less(*firstAfter)) {
				firstAfter = &candidate
			}
		}
	}
	switch {
	case firstAfter != nil:
		return *firstAfter, true
	case first != nil:
		return *first, true
	default:
		return Identity{}, false
	}
}
