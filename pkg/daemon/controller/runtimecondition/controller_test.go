package runtimecondition

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestNewControllerNeedsTheNodeName(t *testing.T) {
	if _, err := NewController("", nil, nil, &fakeSource{}); err == nil {
		t.Error("NewController without a node name succeeded")
	}
}

// Run reports at every change the monitor announces and every resyncPeriod of its clock,
// goes on after a failed report, and returns when its context ends.
func TestRunReportsOnChangesAndEveryMinute(t *testing.T) {
	f := newFixture(t, &fakeSource{changed: make(chan struct{}, 1)})
	reports := make(chan struct{}, 10)
	f.c.syncHandler = func(context.Context) error {
		reports <- struct{}{}
		return errors.New("the API server is away")
	}
	expectReport := func(what string) {
		t.Helper()
		select {
		case <-reports:
		case <-time.After(10 * time.Second):
			t.Fatalf("no report %s", what)
		}
	}
	expectNoReport := func(what string) {
		t.Helper()
		select {
		case <-reports:
			t.Fatalf("a report %s", what)
		case <-time.After(50 * time.Millisecond):
		}
	}

	ctx, cancel := context.WithCancel(f.ctx)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		f.c.Run(ctx)
	}()
	// The ticker is on the fake clock: nothing happens until the monitor or the clock moves.
	for !f.clock.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	expectNoReport("before any change or tick")

	f.source.changed <- struct{}{}
	expectReport("after the runtime changed")
	// The failed report did not stop the loop.
	f.source.changed <- struct{}{}
	expectReport("after a second change")

	f.clock.Step(resyncPeriod - time.Second)
	expectNoReport("before the minute passed")
	f.clock.Step(time.Second)
	expectReport("after a minute")

	cancel()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}
