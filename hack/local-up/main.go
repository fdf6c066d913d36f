// Command local-up runs bosun on this machine: a real etcd and kube-apiserver (built by
// hack/build-test-servers.sh), bosun's CRDs, and bosun-controller-manager against them.
// It prints how to point kubectl at the cluster and runs until interrupted; everything it
// started stops with it. `make local-up` runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func main() {
	klog.InitFlags(nil)
	controllers := flag.String("controllers", "*", "value of bosun-controller-manager's --controllers")
	securePort := flag.Int("secure-port", 10267, "port of bosun-controller-manager's health and metrics endpoints")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *controllers, *securePort); err != nil {
		fmt.Fprintln(os.Stderr, "local-up:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, controllers string, securePort int) error {
	logger := klog.FromContext(ctx)
	root, err := framework.RepoRoot()
	if err != nil {
		return err
	}
	out := filepath.Join(root, "_output", "local-up")
	// Each run starts from an empty cluster, like a fresh kind cluster would.
	if err := os.RemoveAll(out); err != nil {
		return fmt.Errorf("clearing %s: %w", out, err)
	}
	// `make local-up` builds the binary first, with the version stamped in.
	manager := filepath.Join(root, "_output", "bin", "bosun-controller-manager")
	if _, err := os.Stat(manager); err != nil {
		return fmt.Errorf("%w (run `make build` first)", err)
	}

	logger.Info("Starting etcd and kube-apiserver", "dir", out)
	cp, err := framework.StartControlPlane(ctx, framework.Options{Dir: out, BosunCRDs: true})
	if err != nil {
		var missing *framework.MissingBinariesError
		if errors.As(err, &missing) {
			return fmt.Errorf("%w (run `make test-servers` first)", err)
		}
		return err
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			logger.Error(err, "Stopping the control plane")
		}
	}()

	process, err := framework.StartProcess(framework.ProcessConfig{
		Path: manager,
		Args: []string{
			"--kubeconfig=" + cp.KubeconfigPath(),
			"--controllers=" + controllers,
			"--bind-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", securePort),
			"--v=2",
		},
		LogPath: filepath.Join(out, "bosun-controller-manager.log"),
	})
	if err != nil {
		return err
	}
	defer process.Stop(framework.DefaultStopGracePeriod)

	kubectl, err := framework.ToolPath("kubectl")
	if err != nil {
		return err
	}
	fmt.Printf(`
bosun is running locally.

  export KUBECONFIG=%s
  export PATH=%s:$PATH
  kubectl get ads,pub,crr,nodeimages,imagepulljobs -A
  curl -sk https://127.0.0.1:%d/healthz?verbose

Logs: %s/*.log
Press Ctrl-C to stop everything.
`, cp.KubeconfigPath(), filepath.Dir(kubectl), securePort, out)

	select {
	case <-ctx.Done():
		logger.Info("Shutting down")
		return nil
	case <-process.Done():
		time.Sleep(100 * time.Millisecond) // let the last log lines land
		return fmt.Errorf("bosun-controller-manager exited with status %d; its log ends:\n%s",
			process.ExitCode(), process.LogTail(30))
	}
}
