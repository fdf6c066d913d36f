// Package queue holds bosun's workqueue defaults: the rate limiter every controller uses,
// a constructor for named rate-limited queues (the name becomes the "name" label of the
// workqueue_* metrics), the worker loop, and the helpers that turn informer objects,
// including deletion tombstones, into queue keys.
//
// Informer handlers only enqueue keys; workers do all the work:
// Get → sync → Forget (success) | AddRateLimited (error) → Done.
package queue
