// Command kubectl-bosun is the kubectl plugin for bosun's workloads: installed on the PATH,
// it answers `kubectl bosun rollout status|history|undo|pause|resume|restart` for CloneSets and
// Advanced DaemonSets. See docs/kubectl-plugin.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/bosun-dev/bosun/pkg/kubectlbosun"
)

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	cmd := kubectlbosun.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
