package framework

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// PollInterval is how often WaitFor checks its condition.
const PollInterval = 100 * time.Millisecond

// WaitFor checks condition every PollInterval, first right away, until it returns true,
// returns an error, timeout passes or ctx ends. what describes the awaited state for
// the timeout error ("3 ready replicas of web").
func WaitFor(ctx context.Context, timeout time.Duration, what string, condition func(ctx context.Context) (bool, error)) error {
	if err := wait.PollUntilContextTimeout(ctx, PollInterval, timeout, true, condition); err != nil {
		if wait.Interrupted(err) {
			return fmt.Errorf("timed out after %v waiting for %s", timeout, what)
		}
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// Await polls condition every PollInterval, first right away, until it returns true, and
// fails the test once e.WaitTimeout has passed or e.Ctx has ended. An error from condition
// does not end the wait, since the API server may answer a slow request with one; the last
// is reported with the failure. observed (nil: nothing) renders the state condition last
// looked at, for the failure message; it is only called then. what names the awaited state
// ("3 ready replicas of web").
func (e *Env) Await(t testing.TB, what string, condition func(ctx context.Context) (bool, error), observed func() string) {
	t.Helper()
	e.AwaitWithin(t, e.WaitTimeout, what, condition, observed)
}

// AwaitWithin is Await with its own timeout.
func (e *Env) AwaitWithin(t testing.TB, timeout time.Duration, what string, condition func(ctx context.Context) (bool, error), observed func() string) {
	t.Helper()
	if err := awaitCondition(e.Ctx, timeout, what, condition, observed); err != nil {
		t.Fatal(err)
	}
}

// awaitCondition is Await returning its failure.
func awaitCondition(ctx context.Context, timeout time.Duration, what string, condition func(ctx context.Context) (bool, error), observed func() string) error {
	var lastErr error
	err := WaitFor(ctx, timeout, what, func(ctx context.Context) (bool, error) {
		done, err := condition(ctx)
		if err != nil {
			if ctx.Err() == nil { // not a request the timeout cut off
				lastErr = err
			}
			return false, nil
		}
		return done, nil
	})
	if err == nil {
		return nil
	}
	var b strings.Builder
	b.WriteString(err.Error())
	if observed != nil {
		fmt.Fprintf(&b, "; last seen: %s", observed())
	}
	if lastErr != nil {
		fmt.Fprintf(&b, "; last error: %v", lastErr)
	}
	return errors.New(b.String())
}
