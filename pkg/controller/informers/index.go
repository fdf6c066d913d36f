package informers

import (
	"fmt"

	"k8s.io/client-go/tools/cache"
)

// AddIndex adds the index name, computed by index, to informer unless it has one of that
// name already. Informers are shared by the controllers of a process, and several add the
// same index to one; the first adds it, the others find it. name is also what the error
// names, with the kind the informer caches left to the caller's wrapping.
func AddIndex(informer cache.SharedIndexInformer, name string, index cache.IndexFunc) error {
	if _, exists := informer.GetIndexer().GetIndexers()[name]; exists {
		return nil
	}
	if err := informer.AddIndexers(cache.Indexers{name: index}); err != nil {
		return fmt.Errorf("adding index %q: %w", name, err)
	}
	return nil
}
