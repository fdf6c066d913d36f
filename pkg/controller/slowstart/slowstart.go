// Package slowstart issues a burst of identical API calls in doubling batches, so that a
// call that is bound to fail (quota exhausted, admission webhook rejecting, namespace
// terminating) fails once or a few times instead of count times.
//
// Batch sizes are initial, 2×initial, 4×initial, … capped by what remains: with
// SlowStartInitialBatchSize and 500 calls the batches are 1, 2, 4, 8, 16, 32, 64, 128 and 245.
// Calls within a batch run concurrently; a batch with any failure ends the run.
//
// The caller accounts for calls that did not succeed: skipped = count - successes (failed
// calls plus calls never started). Controllers call CreationObserved once per skipped
// child so that their expectations only wait for writes that actually happened, and log
// the skipped count at verbosity 2. The caller's fn decides which errors count as failures
// (for example, a create rejected because the namespace is terminating can be reported as
// success to avoid a retry storm).
package slowstart

import "sync"

// SlowStartInitialBatchSize is the size of the first batch controllers use.
const SlowStartInitialBatchSize = 1

// Batch calls fn count times in batches that double in size, starting at initial (values
// below 1 are treated as 1). It returns the number of successful calls and, if a batch had
// failures, one error from that batch; no later batch is started after a failing one.
func Batch(count, initial int, fn func() error) (successes int, err error) {
	initial = max(initial, 1)
	remaining := count
	for size := min(remaining, initial); size > 0; size = min(2*size, remaining) {
		errs := make(chan error, size)
		var wg sync.WaitGroup
		for range size {
			wg.Go(func() {
				if err := fn(); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		successes += size - len(errs)
		if len(errs) > 0 {
			return successes, <-errs
		}
		remaining -= size
	}
	return successes, nil
}
