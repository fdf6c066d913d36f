package queue

import (
	"testing"
	"time"
)

func TestJitteredRateLimiterDoublesUpToAJitteredCap(t *testing.T) {
	const (
		base      = 500 * time.Millisecond
		maxDelay  = 50 * time.Second
		capJitter = 5 * time.Second
	)
	rl := jitteredRateLimiter[string](base, maxDelay, capJitter)
	for i, want := range []time.Duration{base, 2 * base, 4 * base, 8 * base} {
		if got := rl.When("a"); got != want {
			t.Errorf("failure %d: delay %v, want %v", i+1, got, want)
		}
	}
	var limit time.Duration
	for range 40 {
		limit = rl.When("a")
	}
	if limit < maxDelay || limit >= maxDelay+capJitter {
		t.Fatalf("after 44 failures: delay %v, want a cap in [%v, %v)", limit, maxDelay, maxDelay+capJitter)
	}
	// The cap is drawn once per limiter: every item of the queue meets the same one.
	for range 40 {
		rl.When("b")
	}
	if got := rl.When("b"); got != limit {
		t.Errorf("another item's cap %v, want the queue's %v", got, limit)
	}
	rl.Forget("a")
	if got := rl.When("a"); got != base {
		t.Errorf("after Forget: delay %v, want %v", got, base)
	}
}

// Caps are drawn per queue, so that processes retry out of step.
func TestJitteredRateLimiterCapsDiffer(t *testing.T) {
	capOf := func(capJitter time.Duration) time.Duration {
		rl := jitteredRateLimiter[int](time.Second, time.Minute, capJitter)
		var d time.Duration
		for range 20 {
			d = rl.When(0)
		}
		return d
	}
	caps := map[time.Duration]bool{}
	for range 10 {
		caps[capOf(5*time.Second)] = true
	}
	// Ten draws from five seconds of nanoseconds: equal caps would mean no jitter at all.
	if len(caps) < 2 {
		t.Errorf("ten limiters drew the caps %v, want them to differ", caps)
	}
	if got := capOf(0); got != time.Minute {
		t.Errorf("without jitter the cap is %v, want %v", got, time.Minute)
	}
}

func TestNewJitteredRetriesAfterBase(t *testing.T) {
	q := NewJittered[string]("test_jittered", time.Millisecond, time.Second, time.Second)
	defer q.ShutDown()
	start := time.Now()
	q.AddRateLimited("a")
	if got := q.NumRequeues("a"); got != 1 {
		t.Errorf("NumRequeues = %d, want 1", got)
	}
	item, shutdown := q.Get()
	if shutdown || item != "a" {
		t.Fatalf("Get = %q, %v", item, shutdown)
	}
	q.Done(item)
	if waited := time.Since(start); waited < time.Millisecond {
		t.Errorf("the item came back after %v, before the base delay", waited)
	}
}
