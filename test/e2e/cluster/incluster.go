package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// InClusterNamespace is the namespace the in-cluster install (Options.InCluster) puts bosun in:
// config/default's and the chart's default.
const InClusterNamespace = "bosun-system"

// Names of what the in-cluster install runs.
const (
	InClusterManager = "bosun-controller-manager"
	InClusterDaemon  = "bosun-daemon"
	// inClusterImageTag tags the images pushed for the install; the chart is given their
	// digests too, so that a node that kept an older image under the tag cannot run it.
	inClusterImageTag = "e2e"
	// inClusterStartTimeout bounds Start with Options.InCluster: building the images is most
	// of it, minutes on a machine whose build cache is cold.
	inClusterStartTimeout = 15 * time.Minute
)

// InCluster reports whether bosun runs inside the cluster (Options.InCluster).
func (c *Cluster) InCluster() bool { return c.opts.InCluster }

// installBosun installs bosun the way an operator of a cluster whose control plane they
// cannot touch does: `make images` pushes bosun's images to the cluster's registry, the Helm
// chart is rendered with them (`helm template`) and applied, and the install must become
// ready: both manager replicas (one of them leading), bosun-daemon on the node.
func (c *Cluster) installBosun(ctx context.Context) error {
	images, err := pushBosunImages(ctx)
	if err != nil {
		return err
	}
	values := map[string]any{
		"featureGates": c.opts.ManagerFeatureGates,
		"manager":      map[string]any{"image": images[InClusterManager]},
		"daemon": map[string]any{
			"image": images[InClusterDaemon],
			// The node's runtime socket is <cluster dir>/run/containerd/containerd.sock.
			"socketLocation": filepath.Dir(filepath.Dir(c.containerd.socket)),
		},
	}
	valuesYAML, err := yaml.Marshal(values)
	if err != nil {
		return err
	}
	dir := filepath.Join(c.dir, "bosun-install")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	valuesPath := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(valuesPath, valuesYAML, 0o644); err != nil {
		return err
	}
	helm, err := framework.ToolPath("helm")
	if err != nil {
		return fmt.Errorf("%w (run `make test-servers` first)", err)
	}
	render := exec.CommandContext(ctx, helm, "template", "bosun", filepath.Join(repoRoot(), "config", "helm", "bosun"), "--values", valuesPath)
	manifests, err := render.Output()
	if err != nil {
		return fmt.Errorf("helm template: %w\n%s", err, stderrOf(err))
	}
	manifestsPath := filepath.Join(dir, "bosun.yaml")
	if err := os.WriteFile(manifestsPath, manifests, 0o644); err != nil {
		return err
	}
	if err := c.kubectl(ctx, "apply", "--server-side", "--field-manager=bosun-e2e-install", "-f", manifestsPath); err != nil {
		return err
	}
	return c.waitForInstall(ctx)
}

// pushBosunImages runs `make images`' command against the open registry and returns the
// chart's image values (repository, and tag@digest) by binary.
func pushBosunImages(ctx context.Context) (map[string]map[string]string, error) {
	cmd := exec.CommandContext(ctx, "go", "run", "./hack/images",
		"-registry="+RegistryHost+"/bosun", "-tag="+inClusterImageTag, "-version=v0.0.0-e2e")
	cmd.Dir = repoRoot()
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("building and pushing bosun's images (go run ./hack/images): %w\n%s", err, stderrOf(err))
	}
	images := map[string]map[string]string{}
	for _, ref := range strings.Fields(string(out)) {
		// <registry>/bosun/<binary>:<tag>@sha256:<hex>
		name, digest, ok := strings.Cut(ref, "@")
		repository, tag, ok2 := strings.Cut(name, ":"+inClusterImageTag)
		if !ok || !ok2 || tag != "" {
			return nil, fmt.Errorf("hack/images printed %q, want <repository>:%s@<digest>", ref, inClusterImageTag)
		}
		images[filepath.Base(repository)] = map[string]string{"repository": repository, "tag": inClusterImageTag + "@" + digest}
	}
	for _, binary := range []string{InClusterManager, InClusterDaemon} {
		if images[binary] == nil {
			return nil, fmt.Errorf("hack/images pushed no image of %s; it printed:\n%s", binary, out)
		}
	}
	return images, nil
}

// waitForInstall returns once every manager replica is available and one holds the Lease,
// and bosun-daemon is available on the node.
func (c *Cluster) waitForInstall(ctx context.Context) error {
	client, err := c.Clientset()
	if err != nil {
		return err
	}
	var state string
	err = framework.WaitFor(ctx, 5*time.Minute, "bosun's in-cluster install to be ready", func(ctx context.Context) (bool, error) {
		if err := c.Err(); err != nil {
			return false, err
		}
		manager, err := client.AppsV1().Deployments(InClusterNamespace).Get(ctx, InClusterManager, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		daemon, err := client.AppsV1().DaemonSets(InClusterNamespace).Get(ctx, InClusterDaemon, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		holder := ""
		lease, err := client.CoordinationV1().Leases(InClusterNamespace).Get(ctx, InClusterManager, metav1.GetOptions{})
		switch {
		case err == nil && lease.Spec.HolderIdentity != nil:
			holder = *lease.Spec.HolderIdentity
		case err != nil && !errors.IsNotFound(err):
			return false, err
		}
		want := int32(1)
		if manager.Spec.Replicas != nil {
			want = *manager.Spec.Replicas
		}
		state = fmt.Sprintf("manager %d of %d replicas available, Lease held by %q; bosun-daemon %d of %d available",
			manager.Status.AvailableReplicas, want, holder, daemon.Status.NumberAvailable, daemon.Status.DesiredNumberScheduled)
		return manager.Status.AvailableReplicas == want && manager.Status.UpdatedReplicas == want && holder != "" &&
			daemon.Status.DesiredNumberScheduled > 0 && daemon.Status.NumberAvailable == daemon.Status.DesiredNumberScheduled, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last seen: %s)", err, state)
	}
	return nil
}

// stderrOf is the standard error an exec.Cmd's Output kept in its error.
func stderrOf(err error) string {
	if exitErr, ok := err.(*exec.ExitError); ok {
		return string(exitErr.Stderr)
	}
	return ""
}
