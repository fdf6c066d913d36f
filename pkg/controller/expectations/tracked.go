package expectations

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
)

// TrackedStore wraps a Store and additionally remembers which pods (by "namespace/name"
// pod key) each controller expects to delete.
//
// A pod being deleted gracefully produces two informer events: an update setting
// deletionTimestamp and, later, the final delete. Either may arrive first and either may
// repeat (relists). Counting each of them would lower the counter twice for one pod;
// tracking the pod keys makes every pod count exactly once. Upstream calls this
// "UID tracking" although it stores pod keys, as does this type.
//
// Creations are tracked by count only.
type TrackedStore struct {
	store *Store

	// mu serialises every change that touches both the key set and the counters, so that
	// the two never disagree.
	mu      sync.Mutex
	podKeys map[string]sets.Set[string]
}

// NewTracked wraps store. The TrackedStore must be the only writer of deletion
// expectations for the keys it manages.
func NewTracked(store *Store) *TrackedStore {
	return &TrackedStore{store: store, podKeys: map[string]sets.Set[string]{}}
}

// Counters returns the Store t wraps, for callers that adjust its counters directly.
// Creations are counted there alone; a deletion count changed there bypasses the pod keys
// t tracks.
func (t *TrackedStore) Counters() *Store {
	return t.store
}

// Satisfied reports whether the controller may act on key; see Store.Satisfied.
func (t *TrackedStore) Satisfied(ctx context.Context, key string) bool {
	return t.store.Satisfied(ctx, key)
}

// Get returns the outstanding counters for key; see Store.Get.
func (t *TrackedStore) Get(key string) (add, del int64, exists bool) {
	return t.store.Get(key)
}

// ExpectCreations records that n creations are about to be issued for key.
func (t *TrackedStore) ExpectCreations(ctx context.Context, key string, n int) {
	t.store.ExpectCreations(ctx, key, n)
}

// CreationObserved records one observed (or abandoned) creation for key.
func (t *TrackedStore) CreationObserved(ctx context.Context, key string) {
	t.store.CreationObserved(ctx, key)
}

// ExpectDeletions records that the pods named by podKeys are about to be deleted for key.
// Duplicate pod keys count once.
func (t *TrackedStore) ExpectDeletions(ctx context.Context, key string, podKeys []string) {
	expected := sets.New(podKeys...)
	t.mu.Lock()
	defer t.mu.Unlock()
	if existing := t.podKeys[key]; existing.Len() != 0 {
		// Should not happen when callers honour Satisfied; log it so a broken caller is visible.
		klog.FromContext(ctx).Error(nil, "Clobbering existing delete keys", "key", key, "keys", sets.List(existing))
	}
	t.podKeys[key] = expected
	t.store.ExpectDeletions(ctx, key, expected.Len())
}

// DeletionObserved records that the pod podKey was seen deleted (or being deleted). It
// lowers the deletion counter only the first time a pod that is still expected is
// reported; repeats and unexpected pods are ignored.
func (t *TrackedStore) DeletionObserved(ctx context.Context, key, podKey string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := t.podKeys[key]
	if !keys.Has(podKey) {
		return
	}
	keys.Delete(podKey)
	klog.FromContext(ctx).V(4).Info("Pod deletion observed", "key", key, "pod", podKey)
	t.store.DeletionObserved(ctx, key)
}

// PendingDeletions returns the sorted pod keys still expected to be deleted for key.
func (t *TrackedStore) PendingDeletions(key string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return sets.List(t.podKeys[key])
}

// Delete drops both the pod-key set and the counters of key.
func (t *TrackedStore) Delete(ctx context.Context, key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.store.Delete(ctx, key)
	delete(t.podKeys, key)
}
