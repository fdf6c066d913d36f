package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// The node's pod network: one bridge, no masquerading (nothing leaves this machine).
const (
	bridgeName  = "bosun0"
	networkName = "bosun-local"
	podSubnet   = "10.88.0.0/16"
	// podGateway is the bridge's address, the pods' default gateway (host-local gives the
	// subnet's first address to the gateway).
	podGateway = "10.88.0.1"
	cniBinDir  = "/usr/lib/cni"
)

// containerd is the node's container runtime, with its root, state, socket, registry hosts
// and CNI configuration under the cluster directory.
type containerd struct {
	*framework.Process
	socket string
}

// containerdConfig keeps containerd off every system path: root, state, sockets, the opt
// plugin's directory, runc's container state and network namespace mounts all go under the
// cluster directory.
// restrict_oom_score_adj is needed where the sandbox forbids lowering oom_score_adj (runc
// then fails every pod sandbox); runc stays the runtime, with cgroupfs like the kubelet.
const containerdConfig = `version = 2
root = %[1]q
state = %[2]q

[grpc]
  address = %[3]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[4]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %[9]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[6]q
    conf_dir = %[7]q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %[8]q
`

// cniConfig is the pod network: a bridge whose address is the pods' gateway, host-local
// addresses recorded under the cluster directory.
const cniConfig = `{
  "cniVersion": "1.0.0",
  "name": %[4]q,
  "plugins": [
    {
      "type": "bridge",
      "bridge": %[1]q,
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %[2]q}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": %[3]q
      }
    }
  ]
}
`

// registryHostsFile points containerd at a loopback registry over plain HTTP.
const registryHostsFile = `server = "http://%[1]s"

[host."http://%[1]s"]
  capabilities = ["pull", "resolve"]
`

// mirrorHostsFile sends the pulls of a public registry to a loopback registry over plain
// HTTP; the public server is named only because containerd wants one.
const mirrorHostsFile = `server = "https://%[1]s"

[host."http://%[2]s"]
  capabilities = ["pull", "resolve"]
`

func (c *Cluster) startContainerd(ctx context.Context) error {
	dir := filepath.Join(c.dir, "containerd")
	cniConfDir := filepath.Join(dir, "cni", "net.d")
	hostsDir := filepath.Join(dir, "certs.d")
	files := map[string]string{
		filepath.Join(dir, "config.toml"): fmt.Sprintf(containerdConfig,
			filepath.Join(dir, "root"), filepath.Join(dir, "state"), containerdSocket(c.dir), filepath.Join(dir, "opt"),
			PauseImage, cniBinDir, cniConfDir, hostsDir, runcRoot(c.dir)),
		filepath.Join(cniConfDir, "10-bosun.conflist"): fmt.Sprintf(cniConfig, bridgeName, podSubnet, filepath.Join(dir, "cni", "ipam"), networkName),
	}
	for _, host := range registryHosts {
		files[filepath.Join(hostsDir, host, "hosts.toml")] = fmt.Sprintf(registryHostsFile, host)
	}
	for _, host := range c.opts.MirroredRegistries {
		files[filepath.Join(hostsDir, host, "hosts.toml")] = fmt.Sprintf(mirrorHostsFile, host, SlowOpenRegistryHost)
	}
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	process, err := framework.StartProcess(framework.ProcessConfig{
		Name:    "containerd",
		Path:    "containerd",
		Args:    []string{"--config", filepath.Join(dir, "config.toml")},
		LogPath: c.logPath("containerd"),
	})
	if err != nil {
		return err
	}
	c.containerd = &containerd{Process: process, socket: containerdSocket(c.dir)}
	c.components = append(c.components, &component{Process: process, ready: c.containerdReady})
	return c.containerdReady(ctx, process)
}

// containerdSocket is where containerd listens: <dir>/run stands for a node's /run, holding
// sockets only, so that bosun-daemon's pod can mount it as it mounts /run on a real node.
// Unix socket paths are limited to 108 bytes, so a deep cluster directory makes containerd
// fail with a clear error of its own.
func containerdSocket(dir string) string {
	return filepath.Join(dir, "run", "containerd", "containerd.sock")
}

// withRuntime calls f with a CRI runtime client connected to containerd.
func (ctr *containerd) withRuntime(ctx context.Context, f func(runtimeapi.RuntimeServiceClient) error) error {
	if _, err := os.Stat(ctr.socket); err != nil {
		return nil // not listening yet
	}
	conn, err := grpc.NewClient("unix://"+ctr.socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connecting to containerd: %w", err)
	}
	defer conn.Close()
	return f(runtimeapi.NewRuntimeServiceClient(conn))
}

// removeAllSandboxes stops and removes every pod sandbox: containerd stops the containers,
// tears down the pod network (CNI DEL), unmounts the network namespace and ends the shims.
// Done after the kubelet has stopped, so nothing starts them again.
func (ctr *containerd) removeAllSandboxes(ctx context.Context) error {
	if ctr.Exited() {
		return nil
	}
	return ctr.withRuntime(ctx, func(rt runtimeapi.RuntimeServiceClient) error {
		list, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		if err != nil {
			return fmt.Errorf("listing pod sandboxes: %w", err)
		}
		var errs []error
		for _, sandbox := range list.Items {
			if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sandbox.Id}); err != nil {
				errs = append(errs, fmt.Errorf("stopping pod sandbox %s (%s/%s): %w",
					sandbox.Id, sandbox.Metadata.GetNamespace(), sandbox.Metadata.GetName(), err))
				continue
			}
			if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sandbox.Id}); err != nil {
				errs = append(errs, fmt.Errorf("removing pod sandbox %s: %w", sandbox.Id, err))
			}
		}
		return errors.Join(errs...)
	})
}
