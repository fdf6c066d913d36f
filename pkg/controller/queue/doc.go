// Package queue holds bosun's workqueue defaults: the rate limiter every controller uses,
// a constructor for named rate-limited queues (the name becomes the "name" label of the
// workqueue_* metrics) and one whose backoff cap is jittered per process (NewJittered, the
// node agent's), the worker loop, and the helpers that turn informer objects,
// including deletion tombstones, into queue keys.
//
// Informer handlers only enqueue keys; workers do all the work:
// Get → sync → Forget (success) | AddRateLimited (error) → Done.
//
// The worker loop is the one place that logs what a sync returned. IsNormalWait tells a
// failure (logged as an error) from a normal wait, which is requeued the same way but
// logged at verbosity 4 with its reason: an optimistic-concurrency conflict, a cache behind
// the controller's own write (CacheBehindError), or ErrRequeue.
package queue
