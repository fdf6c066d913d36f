package expectations

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// ExpectationsTimeout is how long a record is honoured after it was set. After that
// Satisfied reports true even if observations are missing, so that a lost informer event
// cannot wedge an owner forever.
const ExpectationsTimeout = 5 * time.Minute

// record holds the outstanding creations and deletions for one controller key.
// The counters are updated atomically so that concurrent informer handlers can lower them
// while holding only the store's read lock.
type record struct {
	add       atomic.Int64
	del       atomic.Int64
	timestamp time.Time // immutable after construction; a reset replaces the record
}

func (r *record) fulfilled() bool {
	return r.add.Load() <= 0 && r.del.Load() <= 0
}

// Store is a concurrency-safe map from controller key to expectation record.
// The zero value is not usable; construct it with New or NewWithClock.
type Store struct {
	clock clock.PassiveClock

	// mu guards the map. Counter updates of an existing record happen under the read
	// lock, so that Set (write lock) can never replace a record while a Lower on the old
	// one is in flight and silently lose that update.
	mu      sync.RWMutex
	records map[string]*record
}

// New returns an empty Store that uses the real clock.
func New() *Store {
	return NewWithClock(clock.RealClock{})
}

// NewWithClock returns an empty Store that reads time from clk; tests pass a fake clock to
// exercise ExpectationsTimeout without sleeping.
func NewWithClock(clk clock.PassiveClock) *Store {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Store{clock: clk, records: map[string]*record{}}
}

// Satisfied reports whether the controller may act on key: true when there is no record,
// when every counter is <= 0, or when the record is older than ExpectationsTimeout.
// (Upstream also answers true when its store lookup fails; this in-memory map cannot fail.)
func (s *Store) Satisfied(ctx context.Context, key string) bool {
	logger := klog.FromContext(ctx)
	s.mu.RLock()
	r, ok := s.records[key]
	s.mu.RUnlock()
	switch {
	case !ok:
		// No record: either nothing was ever expected, or the owner is new. Sync.
		return true
	case r.fulfilled():
		logger.V(4).Info("Controller expectations fulfilled", "key", key, "add", r.add.Load(), "del", r.del.Load())
		return true
	case s.clock.Since(r.timestamp) > ExpectationsTimeout:
		logger.V(4).Info("Controller expectations expired", "key", key, "add", r.add.Load(), "del", r.del.Load())
		return true
	default:
		logger.V(4).Info("Controller still waiting on expectations", "key", key, "add", r.add.Load(), "del", r.del.Load())
		return false
	}
}

// Set replaces any record for key with new counters and a fresh timestamp.
func (s *Store) Set(ctx context.Context, key string, add, del int) {
	r := &record{timestamp: s.clock.Now()}
	r.add.Store(int64(add))
	r.del.Store(int64(del))
	s.mu.Lock()
	s.records[key] = r
	s.mu.Unlock()
	klog.FromContext(ctx).V(4).Info("Setting expectations", "key", key, "add", add, "del", del)
}

// ExpectCreations records that n creations are about to be issued for key.
func (s *Store) ExpectCreations(ctx context.Context, key string, n int) {
	s.Set(ctx, key, n, 0)
}

// ExpectDeletions records that n deletions are about to be issued for key.
func (s *Store) ExpectDeletions(ctx context.Context, key string, n int) {
	s.Set(ctx, key, 0, n)
}

// Lower subtracts add and del from the existing record for key. Without a record it does
// nothing: an observation must never create an expectation.
func (s *Store) Lower(ctx context.Context, key string, add, del int) {
	s.adjust(ctx, key, -int64(add), -int64(del), "Lowered expectations")
}

// Raise adds add and del to the existing record for key. Without a record it does nothing.
func (s *Store) Raise(ctx context.Context, key string, add, del int) {
	s.adjust(ctx, key, int64(add), int64(del), "Raised expectations")
}

func (s *Store) adjust(ctx context.Context, key string, add, del int64, msg string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.records[key]
	if !ok {
		return
	}
	newAdd := r.add.Add(add)
	newDel := r.del.Add(del)
	klog.FromContext(ctx).V(4).Info(msg, "key", key, "add", newAdd, "del", newDel)
}

// CreationObserved records that one expected creation for key was seen (or will never
// happen because the write failed or was skipped).
func (s *Store) CreationObserved(ctx context.Context, key string) {
	s.Lower(ctx, key, 1, 0)
}

// DeletionObserved records that one expected deletion for key was seen (or will never
// happen because the write failed).
func (s *Store) DeletionObserved(ctx context.Context, key string) {
	s.Lower(ctx, key, 0, 1)
}

// Delete drops the record for key; call it when the owner goes away.
func (s *Store) Delete(ctx context.Context, key string) {
	s.mu.Lock()
	delete(s.records, key)
	s.mu.Unlock()
	klog.FromContext(ctx).V(4).Info("Deleted expectations", "key", key)
}

// Get returns the outstanding counters for key and whether a record exists.
func (s *Store) Get(key string) (add, del int64, exists bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.records[key]
	if !ok {
		return 0, 0, false
	}
	return r.add.Load(), r.del.Load(), true
}
