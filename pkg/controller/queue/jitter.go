package queue

import (
	"math/rand/v2"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// NewJittered returns a rate-limited queue named name whose items are retried after base,
// the delay doubling per failure up to a cap between maxDelay and maxDelay+capJitter. The
// cap is drawn once, when the queue is made: the node agents of a cluster meet the same
// failures at the same moment (an API server restart, a registry outage), and caps that
// differ from process to process keep them from retrying in step. Unlike New it has no
// overall token bucket: an agent works on its own node's few objects only.
func NewJittered[T comparable](name string, base, maxDelay, capJitter time.Duration) workqueue.TypedRateLimitingInterface[T] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		jitteredRateLimiter[T](base, maxDelay, capJitter),
		workqueue.TypedRateLimitingQueueConfig[T]{Name: name},
	)
}

// jitteredRateLimiter is NewJittered's per-item exponential backoff, its cap drawn in
// [maxDelay, maxDelay+capJitter); a capJitter of 0 or less leaves the cap at maxDelay.
func jitteredRateLimiter[T comparable](base, maxDelay, capJitter time.Duration) workqueue.TypedRateLimiter[T] {
	limit := maxDelay
	if capJitter > 0 {
		limit += rand.N(capJitter)
	}
	return workqueue.NewTypedItemExponentialFailureRateLimiter[T](base, limit)
}
