// Package queuetest helps controller unit tests see what handlers and syncs put in a work
// queue without running workers or waiting for delays.
package queuetest

import (
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/bosun-dev/bosun/pkg/controller/options"
)

// Delayed is one AddAfter call.
type Delayed struct {
	Key   string
	Delay time.Duration
}

// Recorder wraps a controller's queue and records the keys added at once and after a
// delay instead of queueing them; every other call goes to the wrapped queue.
type Recorder struct {
	workqueue.TypedRateLimitingInterface[string]

	mu      sync.Mutex
	added   []string
	delayed []Delayed
}

// NewRecorder returns a Recorder over queue.
func NewRecorder(queue workqueue.TypedRateLimitingInterface[string]) *Recorder {
	return &Recorder{TypedRateLimitingInterface: queue}
}

// Wrapping returns a Recorder and the option under which a controller's NewController wraps
// the work queue it builds in it; the Recorder is over that queue once NewController has
// run.
func Wrapping() (*Recorder, options.Option) {
	r := &Recorder{}
	return r, options.WithQueueWrapper(func(queue workqueue.TypedRateLimitingInterface[string]) workqueue.TypedRateLimitingInterface[string] {
		r.TypedRateLimitingInterface = queue
		return r
	})
}

// Add records key.
func (r *Recorder) Add(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.added = append(r.added, key)
}

// AddAfter records key with its delay.
func (r *Recorder) AddAfter(key string, delay time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delayed = append(r.delayed, Delayed{Key: key, Delay: delay})
}

// AddedKeys returns the keys added without delay, sorted and de-duplicated.
func (r *Recorder) AddedKeys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := slices.Clone(r.added)
	slices.Sort(keys)
	return slices.Compact(keys)
}

// Delayed returns the AddAfter calls in the order they were made.
func (r *Recorder) Delayed() []Delayed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.delayed)
}

// Reset forgets everything recorded so far.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.added, r.delayed = nil, nil
}
