package podutil

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/bosun-dev/bosun/pkg/controller/informers"
)

const (
	// PodControllerIndex indexes pods by PodControllerIndexKey: owned pods by their
	// controller reference, orphans by namespace. Controllers use it instead of listing a
	// whole namespace on every sync.
	PodControllerIndex = "podController"
)

// PodControllerIndexKey returns "<ns>/<kind>/<name>/<uid>" for a controller reference, and
// "<ns>" (the key of the namespace's orphans) when ref is nil.
func PodControllerIndexKey(namespace string, ref *metav1.OwnerReference) string {
	if ref == nil {
		return namespace
	}
	return namespace + "/" + ref.Kind + "/" + ref.Name + "/" + string(ref.UID)
}

// AddPodControllerIndex adds PodControllerIndex to a pod informer. Adding it again is a
// no-op, so every controller sharing the informer can call it.
func AddPodControllerIndex(informer cache.SharedIndexInformer) error {
	err := informers.AddIndex(informer, PodControllerIndex, func(obj any) ([]string, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, nil
		}
		return []string{PodControllerIndexKey(pod.Namespace, metav1.GetControllerOfNoCopy(pod))}, nil
	})
	if err != nil {
		return fmt.Errorf("indexing pods: %w", err)
	}
	return nil
}

// PodsForOwner returns the pods indexed under owner's controller key (owner is of kind
// ownerKind) and, when includeOrphans is set, the orphans of owner's namespace, which the
// caller may want to adopt. indexer must carry PodControllerIndex.
func PodsForOwner(indexer cache.Indexer, owner metav1.Object, ownerKind string, includeOrphans bool) ([]*corev1.Pod, error) {
	keys := []string{PodControllerIndexKey(owner.GetNamespace(), &metav1.OwnerReference{
		Kind: ownerKind, Name: owner.GetName(), UID: owner.GetUID(),
	})}
	if includeOrphans {
		keys = append(keys, PodControllerIndexKey(owner.GetNamespace(), nil))
	}
	var pods []*corev1.Pod
	for _, key := range keys {
		objs, err := indexer.ByIndex(PodControllerIndex, key)
		if err != nil {
			return nil, fmt.Errorf("listing pods of %s %s/%s from index: %w", ownerKind, owner.GetNamespace(), owner.GetName(), err)
		}
		for _, obj := range objs {
			if pod, ok := obj.(*corev1.Pod); ok {
				pods = append(pods, pod)
			}
		}
	}
	return pods, nil
}
