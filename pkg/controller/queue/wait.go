package queue

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// Reasons IsNormalWait gives; the worker loop logs them under the "reason" key.
const (
	// WaitRequeued: the sync returned ErrRequeue (alone or wrapped).
	WaitRequeued = "Requeued"
	// WaitConflict: a write was refused because the object changed since the copy it was
	// computed from ("the object has been modified"), usually because the informer had not
	// yet delivered the controller's own previous write. The next sync starts from a newer
	// copy.
	WaitConflict = "Conflict"
	// WaitCacheBehind: an informer cache has not yet observed a write the controller made
	// itself (a CacheBehindError).
	WaitCacheBehind = "CacheBehind"
)

// PersistentWaitRequeues is how many failures in a row an item may have before a conflict
// or a lagging cache is logged as an error after all. The per-item backoff has then waited
// about five seconds in total (BaseRetryDelay × (2^10 − 1)), far longer than an informer
// normally lags; a wait that outlasts it is a fight between writers or a stuck watch, and
// operators should see it.
const PersistentWaitRequeues = 10

// CacheBehindError is what a sync returns when an informer cache has not yet observed a
// write the controller itself made: acting on the cache would undo that write (create a pod
// twice, write an older status), so the sync waits for the cache instead. The worker loop
// treats it as a normal wait (see IsNormalWait).
type CacheBehindError struct {
	// Resource names the cached resource, for example "pods" or "replicasets.apps".
	Resource string
	// Observed is the resourceVersion the cache has reached, Written the one of the
	// controller's own write.
	Observed, Written string
}

func (e *CacheBehindError) Error() string {
	return fmt.Sprintf("the %s cache is at resourceVersion %s, behind this controller's own write at %s; waiting for it to catch up",
		e.Resource, e.Observed, e.Written)
}

// IsNormalWait reports whether err, returned by a SyncFunc, is a normal wait rather than a
// failure, and why (one of the Wait* reasons). The item still has to be synced again, with
// the same rate limiting as a failure, but nothing is wrong: the controller's cache is
// behind its own writes, or it asked to look again later.
//
//   - ErrRequeue anywhere in err's chain makes it a wait (WaitRequeued): the controller
//     said so explicitly.
//   - Otherwise every error err carries must be a conflict (apierrors.IsConflict) or a
//     CacheBehindError, however deeply wrapped with fmt.Errorf's %w, errors.Join or a
//     utilerrors.Aggregate. One real failure among them makes err a failure.
func IsNormalWait(err error) (reason string, ok bool) {
	if err == nil {
		return "", false
	}
	if errors.Is(err, ErrRequeue) {
		return WaitRequeued, true
	}
	return waitReason(err)
}

// waitReason classifies err and everything it wraps; see IsNormalWait.
func waitReason(err error) (string, bool) {
	switch e := err.(type) {
	case nil:
		return "", false
	case *CacheBehindError:
		return WaitCacheBehind, true
	case apierrors.APIStatus:
		// An API error is a leaf: its reason decides.
		if apierrors.IsConflict(err) {
			return WaitConflict, true
		}
		return "", false
	case utilerrors.Aggregate:
		return allWaits(e.Errors())
	case interface{ Unwrap() []error }:
		return allWaits(e.Unwrap())
	case interface{ Unwrap() error }:
		return waitReason(e.Unwrap())
	}
	return "", false
}

// allWaits reports whether every one of errs is a wait, with the first one's reason. An
// empty list is no wait: there is nothing to wait for.
func allWaits(errs []error) (string, bool) {
	first := ""
	for _, err := range errs {
		reason, ok := waitReason(err)
		if !ok {
			return "", false
		}
		if first == "" {
			first = reason
		}
	}
	return first, first != ""
}
