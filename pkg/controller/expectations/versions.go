package expectations

import (
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// VersionStore remembers, per controller key, the resource version each child had after
// the controller updated it. Until the informer shows those versions the cache still holds
// the children as they were, and acting on them would update or delete them a second time.
// The create/delete counters of Store count objects and cannot say this.
//
// An update event can reach the informer before the writer has recorded what it expects
// (the write's response and the watch race), so Pending also asks the cache directly:
// an expectation the cache already meets is dropped there, never left to time out. That
// is why a sync calls Pending before it reads the objects from the cache, never after: an
// update shown in between would meet the expectation while the sync holds the copy from
// before it.
//
// Expectations expire after ExpectationsTimeout, as Store's do, unless the store was made
// with another timeout.
type VersionStore struct {
	clock   clock.PassiveClock
	cached  CachedVersion
	timeout time.Duration

	mu    sync.Mutex
	byKey map[string]map[types.UID]expectedVersion
}

type expectedVersion struct {
	namespace, name string
	resourceVersion string
	since           time.Time
}

// CachedVersion returns the UID and resource version of the object the informer's cache
// holds under namespace and name, and false when it holds none.
type CachedVersion func(namespace, name string) (uid types.UID, resourceVersion string, found bool)

// NewVersionStore returns an empty store reading the time from clk and the cache's
// current versions through cached (nil: only Observed meets expectations).
func NewVersionStore(clk clock.PassiveClock, cached CachedVersion) *VersionStore {
	return NewVersionStoreWithTimeout(clk, cached, ExpectationsTimeout)
}

// NewVersionStoreWithTimeout is NewVersionStore with expectations that expire after
// timeout, for a writer that had better act on a stale copy than wait minutes for an event
// that may have been lost.
func NewVersionStoreWithTimeout(clk clock.PassiveClock, cached CachedVersion, timeout time.Duration) *VersionStore {
	return &VersionStore{clock: clk, cached: cached, timeout: timeout, byKey: map[string]map[types.UID]expectedVersion{}}
}

// Expect records that obj, as the API server returned it after a write, is yet to be
// observed by the informer.
func (s *VersionStore) Expect(key string, obj metav1.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byKey[key] == nil {
		s.byKey[key] = map[types.UID]expectedVersion{}
	}
	s.byKey[key][obj.GetUID()] = expectedVersion{
		namespace: obj.GetNamespace(), name: obj.GetName(),
		resourceVersion: obj.GetResourceVersion(), since: s.clock.Now(),
	}
}

// Observed records that the informer shows obj; its expectation is met when obj's version
// is at least the expected one.
func (s *VersionStore) Observed(key string, obj metav1.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	expected, ok := s.byKey[key][obj.GetUID()]
	if ok && !OlderResourceVersion(obj.GetResourceVersion(), expected.resourceVersion) {
		delete(s.byKey[key], obj.GetUID())
	}
}

// Gone drops the expectation of a child that is being deleted.
func (s *VersionStore) Gone(key string, obj metav1.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byKey[key], obj.GetUID())
}

// Pending returns how long the oldest unmet expectation of key may still hold a sync back,
// and false when none does. Expectations the cache meets are dropped, as are those whose
// object the cache no longer holds (deleted, or replaced under the same name). Expectations
// older than the store's timeout are dropped too: waiting longer would stall the owner.
func (s *VersionStore) Pending(key string) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var (
		wait  time.Duration
		found bool
	)
	now := s.clock.Now()
	for uid, expected := range s.byKey[key] {
		left := s.timeout - now.Sub(expected.since)
		if left <= 0 || s.metByCache(uid, expected) {
			delete(s.byKey[key], uid)
			continue
		}
		if !found || left < wait {
			wait, found = left, true
		}
	}
	return wait, found
}

// metByCache reports whether the cache shows the expected version of uid, or a sign that
// it never will: no object under that name, or one with another UID.
func (s *VersionStore) metByCache(uid types.UID, expected expectedVersion) bool {
	if s.cached == nil {
		return false
	}
	cachedUID, resourceVersion, found := s.cached(expected.namespace, expected.name)
	return !found || cachedUID != uid || !OlderResourceVersion(resourceVersion, expected.resourceVersion)
}

// Forget drops every expectation of key.
func (s *VersionStore) Forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byKey, key)
}

// OlderResourceVersion reports whether resource version a is older than b. Resource
// versions are opaque, but every Kubernetes API server issues increasing integers; anything
// else is only compared for equality.
func OlderResourceVersion(a, b string) bool {
	an, errA := strconv.ParseUint(a, 10, 64)
	bn, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return a != b
	}
	return an < bn
}
