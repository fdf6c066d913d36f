package podunavailablebudget

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/podutil"
)

// sharedOwnerIndex indexes pods by the owner references that are not their controller's,
// as "<namespace>/<uid>". A targetRef budget covers the pods its target owns in any way;
// the controller references are found through podutil.PodControllerIndex, and this index
// finds the rest without a pass over the namespace. Almost every pod has only a controller
// reference, so the index stays nearly empty.
const sharedOwnerIndex = "podunavailablebudget/sharedOwner"

// sharedOwnerKey is the sharedOwnerIndex key of the owner with uid in namespace.
func sharedOwnerKey(namespace string, uid types.UID) string {
	return namespace + "/" + string(uid)
}

// indexBySharedOwners is the sharedOwnerIndex function.
func indexBySharedOwners(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	var keys []string
	for _, ref := range pod.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller {
			keys = append(keys, sharedOwnerKey(pod.Namespace, ref.UID))
		}
	}
	return keys, nil
}

// addPodIndexes gives the pod informer the two indexes podsControlledBy reads. The
// controller index is shared with the other controllers of the process; adding it again is
// a no-op.
func addPodIndexes(informer cache.SharedIndexInformer) error {
	if err := podutil.AddPodControllerIndex(informer); err != nil {
		return err
	}
	if err := informers.AddIndex(informer, sharedOwnerIndex, indexBySharedOwners); err != nil {
		return fmt.Errorf("indexing pods: %w", err)
	}
	return nil
}
