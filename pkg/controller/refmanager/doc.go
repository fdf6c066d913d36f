// Package refmanager decides which objects a controller owns ("claiming"), adopting
// matching orphans and releasing owned objects that no longer match, by patching their
// controller ownerReference.
//
// A Manager is built per sync for one owner. Adoption first calls the owner's canAdopt
// check, lazily and at most once per Manager: it is a live GET of the owner (see
// RecheckDeletionTimestamp), too expensive to run per object and pointless when nothing
// is adopted. Because the result is remembered, controllers build a fresh Manager on
// every sync.
//
// Claim applies this table in order; the first row that applies decides:
//
//	#  object's controller ref   further condition                       action / result
//	1  another UID              -                                       none; false
//	2  owner's UID              match(obj)                              none; true (even if the owner is being deleted)
//	3  owner's UID              no match, owner being deleted           none; false
//	4  owner's UID              no match                                release (NotFound ignored); false, or false+error
//	5  none                     owner being deleted, or no match        none; false
//	6  none                     object being deleted                    none; false
//	7  none                     owner namespaced, object elsewhere      none; false
//	8  none                     -                                       adopt (NotFound -> false, nil); true, or false+error
//
// Writes go through a Patcher, one per object kind. Built-in kinds use strategic merge
// patches (StrategicMergePatcher): adoption merges the owner's reference by UID and
// carries metadata.uid as a precondition, so that an object deleted and re-created under
// the same name is never adopted by mistake. Custom resources do not support strategic
// merge patches and use MergePatcher, a JSON merge patch carrying metadata.resourceVersion
// and the complete new ownerReferences list.
//
// Beside claiming, the package decides whose key a child's event concerns:
// ResolveControllerRef, SelectingOwners and AdoptersOf, CompareControllerRefs, and
// PodHandlers, the pod event handlers that controllers owning, selecting or naming pods
// share.
package refmanager
