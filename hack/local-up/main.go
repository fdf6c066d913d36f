// Command local-up runs bosun on this machine: a real etcd and kube-apiserver (built by
// hack/build-test-servers.sh), bosun's CRDs, bosun-controller-manager, and upstream
// kube-controller-manager for the controllers bosun does not replace, the way an operator
// runs the two side by side (`--controllers=*,-replicaset,-deployment,-garbagecollector`
// upstream).
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
	upstream := flag.String("upstream-controllers", "*,-replicaset,-deployment,-garbagecollector",
		"value of upstream kube-controller-manager's --controllers; empty runs no upstream controllers")
	upstreamPort := flag.Int("upstream-secure-port", 10257, "port of upstream kube-controller-manager's health endpoints")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *controllers, *securePort, *upstream, *upstreamPort); err != nil {
		fmt.Fprintln(os.Stderr, "local-up:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, controllers string, securePort int, upstreamControllers string, upstreamPort int) error {
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
	exited := anyDone(process)

	if upstreamControllers != "" {
		// The namespace and service-account controllers and the rest of a cluster's control
		// loops still come from upstream; the garbage collector is bosun's.
		upstream, err := startUpstreamControllerManager(cp, upstreamControllers, upstreamPort, out)
		if err != nil {
			return err
		}
		defer upstream.Stop(framework.DefaultStopGracePeriod)
		exited = anyDone(process, upstream)
	}

	kubectl, err := framework.ToolPath("kubectl")
	if err != nil {
		return err
	}
	fmt.Printf(`
bosun is running locally.

  export KUBECONFIG=%s
  export PATH=%s:$PATH
  kubectl get ads,pub,crr,nodeimages,imagepulljobs -A
  kubectl create deployment web --image=registry.k8s.io/pause:3.10 --replicas=3
  kubectl get deployments,replicasets,pods   # pods stay Pending: the cluster has no node yet
  curl -sk https://127.0.0.1:%d/healthz?verbose

Logs: %s/*.log
Press Ctrl-C to stop everything.
`, cp.KubeconfigPath(), filepath.Dir(kubectl), securePort, out)

	select {
	case <-ctx.Done():
		logger.Info("Shutting down")
		return nil
	case p := <-exited:
		time.Sleep(100 * time.Millisecond) // let the last log lines land
		return fmt.Errorf("%s exited with status %d; its log ends:\n%s", p.Name(), p.ExitCode(), p.LogTail(30))
	}
}

// startUpstreamControllerManager runs kube-controller-manager (built by
// hack/build-test-servers.sh) with controllers, as the admin user.
func startUpstreamControllerManager(cp *framework.ControlPlane, controllers string, port int, out string) (*framework.Process, error) {
	path, err := framework.ToolPath("kube-controller-manager")
	if err != nil {
		return nil, err
	}
	return framework.StartProcess(framework.ProcessConfig{
		Path: path,
		Args: []string{
			"--kubeconfig=" + cp.KubeconfigPath(),
			"--authentication-kubeconfig=" + cp.KubeconfigPath(),
			"--authorization-kubeconfig=" + cp.KubeconfigPath(),
			"--controllers=" + controllers,
			"--service-account-private-key-file=" + filepath.Join(cp.Dir(), "service-account.key"),
			"--bind-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", port),
			"--v=1",
		},
		LogPath: filepath.Join(out, "kube-controller-manager.log"),
	})
}

// anyDone returns a channel that yields the first of processes to exit.
func anyDone(processes ...*framework.Process) <-chan *framework.Process {
	first := make(chan *framework.Process, len(processes))
	for _, p := range processes {
		go func() {
			<-p.Done()
			first <- p
		}()
	}
	return first
}
