package expectations

import (
	"cmp"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	// unanswered are the pending writes whose requests got no answer: they may have been
	// carried out or not, which only the API server can tell.
	unanswered sets.Set[Expected]
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
		r = &nameRecord{pending: sets.New[Expected](), unanswered: sets.New[Expected](), since: s.clock.Now()}
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
	e := Expected{Action: action, Resource: resource, Name: name}
	r.pending.Delete(e)
	r.unanswered.Delete(e)
	if r.pending.Len() == 0 {
		delete(s.byKey, key)
	}
}

// Unanswered records that the write of an expectation got no answer (the connection
// broke, or the server timed out): it stays pending, since the write may have been carried
// out and the informer may yet show it, until the controller reads the child live and
// either Observes it (not there) or Confirms it (there, to be waited for). Writes nobody
// expects are ignored.
func (s *NameStore) Unanswered(key string, action Action, resource, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := Expected{Action: action, Resource: resource, Name: name}
	if r := s.byKey[key]; r != nil && r.pending.Has(e) {
		r.unanswered.Insert(e)
	}
}

// Confirm records that an unanswered write was carried out: its expectation waits for
// the informer as any other.
func (s *NameStore) Confirm(key string, e Expected) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.byKey[key]; r != nil {
		r.unanswered.Delete(e)
	}
}

// PendingUnanswered returns the pending expectations of key whose writes got no answer,
// sorted as Pending sorts.
func (s *NameStore) PendingUnanswered(key string) []Expected {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.byKey[key]
	if r == nil {
		return nil
	}
	return sortedExpected(r.unanswered)
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
	return sortedExpected(r.pending)
}

func sortedExpected(set sets.Set[Expected]) []Expected {
	return slices.SortedFunc(maps.Keys(set), func(a, b Expected) int {
		return cmp.Or(cmp.Compare(a.Action, b.Action), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Name, b.Name))
	})
}

// Forget drops everything key waits for.
func (s *NameStore) Forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byKey, key)
}

// AnswerLost reports whether a write that failed with err may have been carried out all
// the same: it got no answer from the API server (a broken connection: kube-apiserver
// logs and commits a write before its answer leaves, and a crash in between loses only
// the answer) or a server error, which a timeout after the commit is too. A refusal (a
// status below 500) was not carried out.
func AnswerLost(err error) bool {
	if err == nil {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	return status.Status().Code >= 500
}
