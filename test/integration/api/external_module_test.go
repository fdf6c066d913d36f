package api

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bosunclient "github.com/bosun-dev/client-go/clientset/versioned"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// TestExternalModuleListsDaemonSets builds docs/examples/list-daemonsets — a module of its
// own that requires github.com/bosun-dev/client-go the way any other project would — and
// runs it against the API server.
func TestExternalModuleListsDaemonSets(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	ns := framework.CreateTestNamespace(t, cp.Clientset(t)).Name
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	client := bosunclient.NewForConfigOrDie(cp.Config())
	for _, name := range []string{"node-exporter", "log-agent"} {
		if _, err := client.AppsV1alpha1().DaemonSets(ns).Create(ctx, newDaemonSet(ns, name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	binary := filepath.Join(t.TempDir(), "list-daemonsets")
	build := exec.CommandContext(ctx, "go", "build", "-o", binary, ".")
	build.Dir = filepath.Join(root, "docs", "examples", "list-daemonsets")
	// The example is its own module with its own go.sum; it must not inherit the main
	// module's -mod=vendor.
	build.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the example module: %v\n%s", err, out)
	}

	run := exec.CommandContext(ctx, binary, "--kubeconfig", cp.KubeconfigPath(), "--namespace", ns)
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("running the example: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a header and 2 DaemonSets, got:\n%s", stdout.String())
	}
	for i, name := range []string{"log-agent", "node-exporter"} {
		fields := strings.Fields(lines[i+1])
		if len(fields) < 3 || fields[0] != ns || fields[1] != name || fields[2] != "RollingUpdate" {
			t.Errorf("line %d = %q, want namespace %s, name %s, strategy RollingUpdate", i+1, lines[i+1], ns, name)
		}
	}
}
