package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// kubeProxyUser is kube-proxy's identity; the API server's bootstrap policy binds it to the
// role system:node-proxier.
const kubeProxyUser = "system:kube-proxy"

// kubeProxyConfig runs kube-proxy in iptables mode for the node. The conntrack settings are
// zero, "leave the host's as they are": a shared build machine's are not the test's to change.
const kubeProxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %[1]s
hostnameOverride: %[2]s
clusterCIDR: %[3]s
mode: iptables
healthzBindAddress: 127.0.0.1:%[4]d
metricsBindAddress: 127.0.0.1:%[5]d
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`

// startKubeProxy runs kube-proxy (built by hack/build-test-servers.sh) for the node and returns
// once it has written the Services' rules (its /healthz answers 200 only then).
func (c *Cluster) startKubeProxy(ctx context.Context) error {
	binary, err := framework.ToolPath("kube-proxy")
	if err != nil {
		return fmt.Errorf("%w (run `make test-servers` first)", err)
	}
	ports, err := framework.FreeLoopbackPorts(2)
	if err != nil {
		return err
	}
	kubeconfig, err := c.controlPlane.UserKubeconfig(kubeProxyUser)
	if err != nil {
		return err
	}
	dir := filepath.Join(c.dir, "kube-proxy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	configPath := filepath.Join(dir, "config.yaml")
	config := fmt.Sprintf(kubeProxyConfig, kubeconfig, c.nodeName, podSubnet, ports[0], ports[1])
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		return err
	}
	process, err := framework.StartProcess(framework.ProcessConfig{
		Name:    "kube-proxy",
		Path:    binary,
		Args:    []string{"--config=" + configPath, "--v=2"},
		LogPath: c.logPath("kube-proxy"),
	})
	if err != nil {
		return err
	}
	ready := plainHealthzReady("kube-proxy", ports[0])
	c.components = append(c.components, &component{Process: process, ready: ready})
	return ready(ctx, process)
}

// cleanUpKubeProxy removes the iptables rules kube-proxy wrote: they outlive it, and the
// machine is shared. cleanUp calls it for a cluster directory in which kube-proxy ran.
func cleanUpKubeProxy(ctx context.Context) error {
	binary, err := framework.ToolPath("kube-proxy")
	if err != nil {
		return nil // never built, so it never ran here
	}
	if out, err := exec.CommandContext(ctx, binary, "--cleanup").CombinedOutput(); err != nil {
		return fmt.Errorf("removing kube-proxy's rules (kube-proxy --cleanup): %w\n%s", err, out)
	}
	return nil
}
