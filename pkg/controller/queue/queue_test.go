package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

func TestDefaultRateLimiterPerItemBackoff(t *testing.T) {
	rl := DefaultRateLimiter[string]()
	want := []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond}
	for i, w := range want {
		if got := rl.When("a"); got != w {
			t.Errorf("failure %d: delay %v, want %v", i+1, got, w)
		}
	}
	if got := rl.NumRequeues("a"); got != len(want) {
		t.Errorf("NumRequeues = %d, want %d", got, len(want))
	}
	rl.Forget("a")
	if got := rl.When("a"); got != BaseRetryDelay {
		t.Errorf("after Forget: delay %v, want %v", got, BaseRetryDelay)
	}
	// The cap: 5ms × 2^n exceeds 1000s from n = 18 on. Use a fresh limiter so the token
	// bucket (100 burst) is not what bounds the delay here.
	rl = DefaultRateLimiter[string]()
	var got time.Duration
	for range 40 {
		got = rl.When("b")
	}
	if got != MaxRetryDelay {
		t.Errorf("after 40 failures: delay %v, want cap %v", got, MaxRetryDelay)
	}
}

func TestDefaultRateLimiterOverallBucket(t *testing.T) {
	rl := DefaultRateLimiter[int]()
	// The first OverallRetryBurst distinct items ride on the burst: only per-item backoff.
	for i := range OverallRetryBurst {
		if got := rl.When(i); got != BaseRetryDelay {
			t.Fatalf("item %d within burst: delay %v, want %v", i, got, BaseRetryDelay)
		}
	}
	// The next item must wait for a token: up to 1/10 s at 10 qps (less whatever refilled
	// since the burst was taken), more than its own 5ms backoff.
	got := rl.When(OverallRetryBurst)
	if got <= BaseRetryDelay || got > 100*time.Millisecond {
		t.Fatalf("item past the burst: delay %v, want about 100ms from the token bucket", got)
	}
}

func TestRunWorkersRetriesUntilSuccessAndStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A queue with no backoff keeps the test fast; the loop logic is what is under test.
	q := workqueue.NewTypedRateLimitingQueue[string](workqueue.NewTypedItemExponentialFailureRateLimiter[string](0, 0))

	var mu sync.Mutex
	attempts := map[string]int{}
	done := make(chan struct{})
	syncItem := func(_ context.Context, item string) error {
		mu.Lock()
		defer mu.Unlock()
		attempts[item]++
		if item == "flaky" && attempts[item] < 3 {
			return errors.New("transient")
		}
		if attempts["ok"] == 1 && attempts["flaky"] == 3 {
			close(done)
		}
		return nil
	}
	q.Add("ok")
	q.Add("flaky")

	returned := make(chan struct{})
	go func() {
		RunWorkers(ctx, q, 2, syncItem)
		close(returned)
	}()
	<-done
	cancel()
	<-returned

	if !q.ShuttingDown() {
		t.Error("RunWorkers must shut the queue down when its context ends")
	}
	mu.Lock()
	defer mu.Unlock()
	if attempts["ok"] != 1 || attempts["flaky"] != 3 {
		t.Errorf("attempts = %v, want ok:1 flaky:3", attempts)
	}
	if n := q.NumRequeues("flaky"); n != 0 {
		t.Errorf("a synced item must be forgotten; NumRequeues = %d", n)
	}
}

func TestRunWorkersStopsWhenQueueShutsDown(t *testing.T) {
	q := New[string]("test_shutdown")
	returned := make(chan struct{})
	go func() {
		// The test's context ends only after the test: until then, nothing but the
		// queue's shutdown can stop the workers.
		RunWorkers(t.Context(), q, 3, func(context.Context, string) error { return nil })
		close(returned)
	}()
	q.ShutDown()
	// Workers that restart instead of stopping would keep RunWorkers running for good; a
	// few restart periods is ample time for it to return.
	select {
	case <-returned:
	case <-time.After(5 * WorkerRestartPeriod):
		t.Fatalf("RunWorkers still running %v after its queue shut down", 5*WorkerRestartPeriod)
	}
}

func TestProcessNextItemRequeuesOnErrRequeue(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue[string](workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Hour, time.Hour))
	defer q.ShutDown()
	tests := []struct {
		name string
		err  error
		want int // NumRequeues after one pass
	}{
		{name: "success forgets", err: nil, want: 0},
		{name: "plain error requeues", err: errors.New("boom"), want: 1},
		{name: "ErrRequeue requeues", err: ErrRequeue, want: 1},
		{name: "wrapped ErrRequeue requeues", err: fmt.Errorf("%w: owner not observed yet", ErrRequeue), want: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q.Add(tc.name)
			ProcessNextItem(context.Background(), q, func(context.Context, string) error { return tc.err })
			if got := q.NumRequeues(tc.name); got != tc.want {
				t.Errorf("NumRequeues = %d, want %d", got, tc.want)
			}
		})
	}
}
