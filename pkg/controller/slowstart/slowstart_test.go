package slowstart

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// batchRecorder counts calls and fails the failOn-th one.
type batchRecorder struct {
	calls  atomic.Int32
	failOn int32 // 1-based call number that fails; 0 = never
}

var errInjected = errors.New("injected failure")

func (r *batchRecorder) fn() error {
	n := r.calls.Add(1)
	if n == r.failOn {
		return errInjected
	}
	return nil
}

func TestBatch(t *testing.T) {
	tests := []struct {
		name          string
		count         int
		initial       int
		failOn        int32
		wantCalls     int32
		wantSuccesses int
		wantErr       error
	}{
		{name: "fifth call fails: batches 1,2,4 then stop", count: 10, initial: 1, failOn: 5, wantCalls: 7, wantSuccesses: 6, wantErr: errInjected},
		{name: "first call fails", count: 10, initial: 1, failOn: 1, wantCalls: 1, wantSuccesses: 0, wantErr: errInjected},
		{name: "no failure", count: 10, initial: 1, wantCalls: 10, wantSuccesses: 10},
		{name: "zero count", count: 0, initial: 1, wantCalls: 0, wantSuccesses: 0},
		{name: "initial larger than count", count: 3, initial: 5, wantCalls: 3, wantSuccesses: 3},
		{name: "initial below one is treated as one", count: 3, initial: 0, wantCalls: 3, wantSuccesses: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &batchRecorder{failOn: tc.failOn}
			got, err := Batch(tc.count, tc.initial, r.fn)
			if got != tc.wantSuccesses || !errors.Is(err, tc.wantErr) {
				t.Errorf("Batch = (%d, %v), want (%d, %v)", got, err, tc.wantSuccesses, tc.wantErr)
			}
			if c := r.calls.Load(); c != tc.wantCalls {
				t.Errorf("calls = %d, want %d", c, tc.wantCalls)
			}
		})
	}
}

// TestBatchSizes checks the batch boundaries: every call of the i-th expected batch blocks
// until want[i] calls have started, which only completes if Batch really runs that many
// concurrently; a batch bigger than expected would block its extra calls in the next
// expected batch, which Batch never fills because it waits for the current one.
func TestBatchSizes(t *testing.T) {
	tests := []struct {
		count int
		want  []int
	}{
		{count: 10, want: []int{1, 2, 4, 3}},
		{count: 500, want: []int{1, 2, 4, 8, 16, 32, 64, 128, 245}},
	}
	for _, tc := range tests {
		var (
			mu      sync.Mutex
			sizes   []int
			started int
			expect  int
			release chan struct{}
		)
		// Batch sizes are not visible to fn, so replay them: the i-th batch must have
		// want[i] concurrent calls; the last call of a batch releases the others.
		next := 0
		fn := func() error {
			mu.Lock()
			if started == expect { // first call of a new batch
				expect = started + tc.want[next]
				sizes = append(sizes, tc.want[next])
				next++
				release = make(chan struct{})
			}
			started++
			ch := release
			if started == expect {
				close(ch)
			}
			mu.Unlock()
			select {
			case <-ch:
			case <-time.After(30 * time.Second):
				// A deadlock watchdog, not a speed assertion.
				t.Errorf("count %d: batch %v never filled; Batch runs different batch sizes", tc.count, sizes)
			}
			return nil
		}
		got, err := Batch(tc.count, SlowStartInitialBatchSize, fn)
		if err != nil || got != tc.count {
			t.Fatalf("count %d: Batch = (%d, %v)", tc.count, got, err)
		}
		if !slices.Equal(sizes, tc.want) {
			t.Errorf("count %d: batch sizes %v, want %v", tc.count, sizes, tc.want)
		}
	}
}
