package expectations

import (
	"cmp"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// Action is what a controller did to a child it expects to see: created or deleted it.
type Action string

const (
	Create Action = "create"
	Delete Action = "delete"
)

// Expected is one child a NameStore still waits for.
type Expected struct {
	Action Action
	// Resource is the child's resource, for example "pods" or "persistentvolumeclaims".
	Resource string
	Name     string
}

// NameStore remembers, per controller key, which children (by resource and name) a
// controller has created or deleted but not yet seen through its informers. It is Store's
// idea for controllers that choose their children's names themselves (the CloneSet's pods
// and claims): an observation counts only for the name that was expected, so that an event
// about another child, or a second event about the same one, can neither meet nor spoil an
// expectation.
//
// Unlike Store it never expires an expectation by itself: Satisfied says how long the oldest
// one has waited, and the controller decides what a long wait means (it may read the
// outstanding children live and Forget them).
type NameStore struct {
	clock clock.PassiveClock

	mu    sync.Mutex
	byKey map[string]*nameRecord
}

type nameRecord struct {
	pending sets.Set[Expected]
	// since is when the record last went from nothing pending to something pending.
	since time.Time
}

// NewNameStore returns an empty store reading the time from clk.
func NewNameStore(clk clock.PassiveClock) *NameStore {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &NameStore{clock: clk, byKey: map[string]*nameRecord{}}
}

// Expect records that the controller of key is about to act on the child resource/name.
// Call it before the write: the informer may show the result before the call returns.
func (s *NameStore) Expect(key string, action Action, resource, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.byKey[key]
	if r == nil {
		r = &nameRecord{pending: sets.New[Expected](), since: s.clock.Now()}
		s.byKey[key] = r
	}
	r.pending.Insert(Expected{Action: action, Resource: resource, Name: name})
}

// Observe records that the informer showed the result of action on resource/name, or that
// the write failed and never will be shown. Children nobody expects are ignored.
func (s *NameStore) Observe(key string, action Action, resource, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.byKey[key]
	if r == nil {
		return
	}
	r.pending.Delete(Expected{Action: action, Resource: resource, Name: name})
	if r.pending.Len() == 0 {
		delete(s.byKey, key)
	}
}

// Satisfied reports whether nothing is pending for key and, when something is, how long the
// oldest expectation has waited.
func (s *NameStore) Satisfied(key string) (bool, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.byKey[key]
	if r == nil {
		return true, 0
	}
	return false, s.clock.Since(r.since)
}

// Pending returns what key still waits for, sorted by action, resource and name.
func (s *NameStore) Pending(key string) []Expected {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.byKey[key]
	if r == nil {
		return nil
	}
	return slices.SortedFunc(maps.Keys(r.pending), func(a, b Expected) int {
		return cmp.Or(cmp.Compare(a.Action, b.Action), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Name, b.Name))
	})
}

// Forget drops everything key waits for.
func (s *NameStore) Forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byKey, key)
}
