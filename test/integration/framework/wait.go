package framework

import (
	"context"
	"fmt"
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
