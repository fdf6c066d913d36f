// Package e2e is bosun's end-to-end suite: its cases run workloads on a real node (the
// kubelet, containerd, runc) of the local cluster in package cluster, with bosun's
// controllers and node agent doing their real work. See README.md.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/test/e2e/cluster"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

const (
	// runEnv turns the suite on (`make test-e2e` sets it).
	runEnv = "BOSUN_E2E"
	// clusterDirEnv points the suite at a cluster already running (`make local-up`'s
	// directory, _output/local-up) instead of starting its own.
	clusterDirEnv = "BOSUN_E2E_CLUSTER_DIR"
	// inClusterEnv makes the suite start a cluster with bosun installed inside it from its
	// images and Helm chart (cluster.Options.InCluster); `make test-e2e` runs the cases that
	// tell such an install works on one.
	inClusterEnv = "BOSUN_E2E_IN_CLUSTER"
)

// suite is the cluster every case runs on, nil when the suite is skipped; skipReason
// then says why.
var (
	suite      *cluster.Cluster
	skipReason string
)

func TestMain(m *testing.M) {
	klog.InitFlags(nil)
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	switch {
	case os.Getenv(runEnv) == "" && os.Getenv(clusterDirEnv) == "":
		skipReason = fmt.Sprintf("end-to-end tests run with %s=1 (`make test-e2e`) or %s=<dir of a running local cluster>", runEnv, clusterDirEnv)
	case os.Getenv(clusterDirEnv) != "":
		c, err := cluster.Attach(os.Getenv(clusterDirEnv))
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		suite = c
	default:
		if err := cluster.CheckHost(); err != nil {
			skipReason = "end-to-end tests need a real node: " + err.Error()
			break
		}
		root, err := framework.RepoRoot()
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		ctx := klog.NewContext(context.Background(), klog.Background())
		began := time.Now()
		opts := cluster.Options{Dir: filepath.Join(root, "_output", "e2e")}
		if os.Getenv(inClusterEnv) == "1" {
			opts = cluster.Options{Dir: filepath.Join(root, "_output", "e2e-in-cluster"), InCluster: true}
		}
		c, err := cluster.Start(ctx, opts)
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e: starting the local cluster:", err)
			return 1
		}
		fmt.Printf("e2e: local cluster up in %v; logs in %s\n", time.Since(began).Round(time.Second), c.LogDir())
		suite = c
		defer func() {
			if err := c.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "e2e: stopping the local cluster:", err)
			}
		}()
	}
	if suite == nil {
		fmt.Println("e2e: SKIP:", skipReason)
	}
	return m.Run()
}
