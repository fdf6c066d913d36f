// Command local-up runs bosun's local cluster on this machine (package test/e2e/cluster): a
// control plane with bosun-controller-manager beside upstream kube-controller-manager (only
// the controllers bosun does not replace), and one real node (containerd, runc, the CNI
// bridge, the kubelet, bosun-daemon), with a loopback registry holding locally built images.
// It prints how to use the cluster and runs until interrupted; Ctrl-C stops everything and
// removes what it set up outside _output/local-up. `make local-up` runs it as root.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/test/e2e/cluster"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

func main() {
	klog.InitFlags(nil)
	var opts cluster.Options
	flag.StringVar(&opts.Controllers, "controllers", "*", "bosun-controller-manager's --controllers")
	flag.StringVar(&opts.UpstreamControllers, "upstream-controllers", cluster.DefaultUpstreamControllers,
		"upstream kube-controller-manager's --controllers")
	flag.StringVar(&opts.NodeName, "node-name", cluster.DefaultNodeName, "name of the node")
	flag.BoolVar(&opts.InCluster, "in-cluster", false, "install bosun inside the cluster from its images and Helm chart (in bosun-system), as in a managed cluster, instead of running its binaries on the host; upstream kube-controller-manager then runs all its controllers and the node runs kube-proxy")
	flag.Parse()
	if opts.InCluster {
		opts.UpstreamControllers = "" // all of them, unless -upstream-controllers says otherwise
		flag.Visit(func(f *flag.Flag) {
			if f.Name == "upstream-controllers" {
				opts.UpstreamControllers = f.Value.String()
			}
		})
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, opts); err != nil {
		fmt.Fprintln(os.Stderr, "local-up:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, opts cluster.Options) error {
	logger := klog.FromContext(ctx)
	root, err := framework.RepoRoot()
	if err != nil {
		return err
	}
	opts.Dir = filepath.Join(root, "_output", "local-up")
	c, err := cluster.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		logger.Info("Stopping the local cluster")
		if err := c.Stop(); err != nil {
			logger.Error(err, "Cleaning up")
		}
	}()

	kubectl, err := framework.ToolPath("kubectl")
	if err != nil {
		return err
	}
	fmt.Printf(`
bosun's local cluster is running: one node (%[1]s), bosun-controller-manager and
bosun-daemon beside upstream's control plane.

%[2]s
Try it (docs/try-it.md has the tour):

  export KUBECONFIG=%[3]s
  export PATH=%[4]s:$PATH
  kubectl get nodes -o wide
  kubectl create deployment web --image=%[5]s --replicas=3
  kubectl rollout status deployment/web
  kubectl get pods -o wide

Images (built from test/images): %[6]s, %[7]s (also v2, v3),
and the same behind a password at %[8]s.
Logs: %[9]s/*.log
Press Ctrl-C to stop everything.
`, c.NodeName(), c.Describe(), c.KubeconfigPath(), filepath.Dir(kubectl),
		cluster.WebserverImage("v1"), cluster.PauseImage, cluster.WebserverImage("v1"),
		cluster.PrivateWebserverImage("v1"), c.LogDir())

	select {
	case <-ctx.Done():
		return nil
	case <-c.Failed():
		return c.Err()
	}
}
