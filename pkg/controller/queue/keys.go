package queue

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// KeyFor returns the controller key of obj: "namespace/name", or "name" for cluster-scoped
// objects. For a deletion tombstone (cache.DeletedFinalStateUnknown) it returns the key the
// tombstone carries.
func KeyFor(obj any) (string, error) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return "", fmt.Errorf("computing controller key for %T: %w", obj, err)
	}
	return key, nil
}

// KeyForRef returns the controller key of an object named by namespace and name.
func KeyForRef(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// PodKey returns the key of a pod, always "namespace/name".
func PodKey(pod metav1.Object) string {
	return pod.GetNamespace() + "/" + pod.GetName()
}

// SplitKey splits a controller key into namespace (empty for cluster-scoped objects) and
// name.
func SplitKey(key string) (namespace, name string, err error) {
	namespace, name, err = cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return "", "", fmt.Errorf("splitting controller key %q: %w", key, err)
	}
	return namespace, name, nil
}

// FromTombstone returns obj as T, unwrapping a cache.DeletedFinalStateUnknown if needed.
// Delete handlers use it because a missed delete arrives as a tombstone holding the last
// known state of the object.
func FromTombstone[T any](obj any) (T, bool) {
	if t, ok := obj.(T); ok {
		return t, true
	}
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		t, ok := tombstone.Obj.(T)
		return t, ok
	}
	var zero T
	return zero, false
}
