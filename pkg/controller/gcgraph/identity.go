package gcgraph

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Identity names an object: its coordinates (apiVersion, kind, name, uid) and namespace,
// which is empty for cluster-scoped objects.
type Identity struct {
	APIVersion string
	Kind       string
	Name       string
	UID        types.UID
	Namespace  string
}

// IdentityFromRef returns the identity an ownerReference names, in namespace (owner
// references carry no namespace; callers pass the dependent's namespace for namespaced
// owners and "" for cluster-scoped ones).
func IdentityFromRef(ref metav1.OwnerReference, namespace string) Identity {
	return Identity{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID, Namespace: namespace}
}

// String renders "[apiVersion/kind, namespace: ns, name: name, uid: uid]", the form used
// in the collector's events and logs.
func (id Identity) String() string {
	return fmt.Sprintf("[%s/%s, namespace: %s, name: %s, uid: %s]", id.APIVersion, id.Kind, id.Namespace, id.Name, id.UID)
}

// MatchesRef reports whether ref names this identity's coordinates: same apiVersion, kind,
// name and uid. The controller, blockOwnerDeletion and namespace are not compared.
func (id Identity) MatchesRef(ref metav1.OwnerReference) bool {
	return ref.UID == id.UID && ref.Name == id.Name && ref.Kind == id.Kind && ref.APIVersion == id.APIVersion
}

// Less orders identities by kind, apiVersion, namespace, name, then uid. Kind and
// apiVersion come first so that the order is coherent between kinds regardless of scope.
func (id Identity) Less(other Identity) bool {
	switch {
	case id.Kind != other.Kind:
		return id.Kind < other.Kind
	case id.APIVersion != other.APIVersion:
		return id.APIVersion < other.APIVersion
	case id.Namespace != other.Namespace:
		return id.Namespace < other.Namespace
	case id.Name != other.Name:
		return id.Name < other.Name
	default:
		return id.UID < other.UID
	}
}

// IsBlocking reports whether ref has blockOwnerDeletion: true.
func IsBlocking(ref metav1.OwnerReference) bool {
	return ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion
}

// InvalidNamespaceMessage is the message of the OwnerRefInvalidNamespace event recorded on
// a dependent in namespace whose ref names an owner that does not exist there.
func InvalidNamespaceMessage(ref metav1.OwnerReference, namespace string) string {
	return fmt.Sprintf("ownerRef %s does not exist in namespace %q", IdentityFromRef(ref, namespace), namespace)
}
