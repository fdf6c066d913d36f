package kubectlbosun

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/watch"
)

func newStatusCommand(env *environment) *cobra.Command {
	var follow bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "status (TYPE NAME | TYPE/NAME)",
		Short: "Show the status of the rollout",
		Long: `Show the status of the rollout, and by default follow it until it is done: every
new state on a line of its own, as kubectl rollout status prints it. A rollout held by a
partition is done when the pods the partition lets go are updated.`,
		Example: `  kubectl bosun rollout status cloneset/web
  kubectl bosun rollout status daemonset/agent --timeout=5m`,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, t, err := env.setUp(args)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			return followStatus(ctx, env, c, t, follow)
		},
	}
	cmd.Flags().BoolVarP(&follow, "watch", "w", true, "Watch the status of the rollout until it's done.")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "The length of time to wait before ending watch, zero means never. Any other values should contain a corresponding time unit (e.g. 1s, 2m, 3h).")
	return cmd
}

// followStatus prints the rollout's state, and with follow every new one until it is done.
func followStatus(ctx context.Context, env *environment, c *clients, t target, follow bool) error {
	last := ""
	show := func(w workload) bool {
		message, done := w.progress()
		if message != last {
			fmt.Fprintln(env.streams.Out, message)
			last = message
		}
		return done
	}
	for {
		w, err := env.get(ctx, c, t)
		if err != nil {
			return err
		}
		if show(w) || !follow {
			return nil
		}
		done, err := watchUntilDone(ctx, c, t, w.GetResourceVersion(), show)
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return errors.New("timed out waiting for the condition")
		case err != nil:
			return err
		case done:
			return nil
		}
		// The watch ended before the rollout did: read the object again and watch on.
	}
}

// watchUntilDone shows each change of the object from resourceVersion on, until show says
// the rollout is done (true) or the watch ends (false).
func watchUntilDone(ctx context.Context, c *clients, t target, resourceVersion string, show func(workload) bool) (bool, error) {
	w, err := t.kind.watch(ctx, c, t.namespace, t.name, resourceVersion)
	if err != nil {
		return false, fmt.Errorf("watching %s: %w", t, err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case event, ok := <-w.ResultChan():
			if !ok {
				return false, nil
			}
			switch event.Type {
			case watch.Deleted:
				return false, fmt.Errorf("%s was deleted", t)
			case watch.Error:
				return false, nil
			}
			if workload, ok := asWorkload(event.Object); ok && show(workload) {
				return true, nil
			}
		}
	}
}
