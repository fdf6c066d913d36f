package replicaset

import (
	"cmp"
	"errors"
	"slices"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

// The resources whose caches the read-your-writes guard compares against.
var (
	podsResource        = schema.GroupResource{Resource: "pods"}
	replicaSetsResource = schema.GroupResource{Group: appsv1.GroupName, Resource: "replicasets"}
)

// lastSyncedFunc returns the resourceVersion an informer store has caught up to.
type lastSyncedFunc func() string

// writeTracker is the read-your-writes guard (feature StaleControllerConsistencyReplicaSet,
// kubernetes issues #129795 and #130767). Expectations time out after five minutes; an
// informer lagging longer than that would make the controller act on a cache that does not
// yet show its own pods and create them again. The tracker remembers, per ReplicaSet, the
// newest resourceVersion of the controller's own writes to pods and to the ReplicaSet
// itself, and holds syncs of that ReplicaSet back until both caches have reached them.
//
// resourceVersions are etcd revisions, global to the cluster, so an informer store whose
// last-synced version is at least the written one has seen the write.
//
// A nil *writeTracker (gate off) accepts every call and never blocks.
type writeTracker struct {
	lastSynced map[schema.GroupResource]lastSyncedFunc

	mu      sync.Mutex
	records map[string]*ownWrites // by ReplicaSet key
}

// ownWrites is what one ReplicaSet (identified by UID, so that a re-created ReplicaSet of
// the same name starts afresh) has written: the newest resourceVersion per resource.
type ownWrites struct {
	uid     types.UID
	written map[schema.GroupResource]string
}

func newWriteTracker(podsSynced, replicaSetsSynced lastSyncedFunc) *writeTracker {
	return &writeTracker{
		lastSynced: map[schema.GroupResource]lastSyncedFunc{
			podsResource:        podsSynced,
			replicaSetsResource: replicaSetsSynced,
		},
		records: map[string]*ownWrites{},
	}
}

// podWritten is the pod control write hook: it records a pod created or patched on behalf
// of the ReplicaSet named by controllerRef.
func (t *writeTracker) podWritten(pod *corev1.Pod, controllerRef *metav1.OwnerReference) {
	if t == nil || controllerRef == nil || controllerRef.Kind != controllerKind.Kind {
		return
	}
	if gv, err := schema.ParseGroupVersion(controllerRef.APIVersion); err != nil || gv.Group != controllerKind.Group {
		return
	}
	t.wrote(queue.KeyForRef(pod.Namespace, controllerRef.Name), controllerRef.UID, podsResource, pod.ResourceVersion)
}

// replicaSetWritten records a status write, with rs as returned by the API server.
func (t *writeTracker) replicaSetWritten(rs *appsv1.ReplicaSet) {
	if t == nil {
		return
	}
	t.wrote(queue.KeyForRef(rs.Namespace, rs.Name), rs.UID, replicaSetsResource, rs.ResourceVersion)
}

func (t *writeTracker) wrote(key string, uid types.UID, resource schema.GroupResource, resourceVersion string) {
	if resourceVersion == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	record := t.records[key]
	if record == nil || record.uid != uid {
		record = &ownWrites{uid: uid, written: map[schema.GroupResource]string{}}
		t.records[key] = record
	}
	if previous, ok := record.written[resource]; ok {
		// Concurrent creates return out of order; keep the newest.
		if order, err := compareResourceVersions(resourceVersion, previous); err == nil && order <= 0 {
			return
		}
	}
	record.written[resource] = resourceVersion
}

// ensureObserved returns a *queue.CacheBehindError if a cache has not yet observed one of
// key's recorded writes: the worker loop requeues the ReplicaSet without logging an error. Writes that have been observed are forgotten, and so are versions that cannot be
// compared: the guard must never block a ReplicaSet forever.
func (t *writeTracker) ensureObserved(key string) error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	record := t.records[key]
	if record == nil {
		return nil
	}
	// A fixed order keeps the reported resource stable when both lag.
	resources := make([]schema.GroupResource, 0, len(record.written))
	for resource := range record.written {
		resources = append(resources, resource)
	}
	slices.SortFunc(resources, func(a, b schema.GroupResource) int {
		return cmp.Compare(a.String(), b.String())
	})
	for _, resource := range resources {
		written := record.written[resource]
		read := ""
		if lastSynced := t.lastSynced[resource]; lastSynced != nil {
			read = lastSynced()
		}
		order, err := compareResourceVersions(read, written)
		if err == nil && order < 0 {
			staleSyncSkips.WithLabelValues(resource.Group, resource.Resource).Inc()
			return &queue.CacheBehindError{Resource: resource.String(), Observed: read, Written: written}
		}
		delete(record.written, resource)
	}
	delete(t.records, key)
	return nil
}

// forget drops what was recorded for key (the ReplicaSet is gone).
func (t *writeTracker) forget(key string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.records, key)
}

var errUncomparable = errors.New("resource version is not a positive decimal integer")

// compareResourceVersions compares two resourceVersions as the API server issues them
// (decimal integers without leading zeros) and returns -1, 0 or 1. Anything else (empty,
// "0", opaque values of other storage backends) is an error: clients must not otherwise
// interpret resourceVersions.
func compareResourceVersions(a, b string) (int, error) {
	if !isPlainResourceVersion(a) || !isPlainResourceVersion(b) {
		return 0, errUncomparable
	}
	// Without leading zeros a longer number is a larger one.
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1, nil
		}
		return 1, nil
	}
	return cmp.Compare(a, b), nil
}

func isPlainResourceVersion(rv string) bool {
	if rv == "" || rv[0] == '0' {
		return false
	}
	for _, r := range rv {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
