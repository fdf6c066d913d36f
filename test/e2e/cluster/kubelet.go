package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// kubeletConfig is the node's KubeletConfiguration. The host is cgroup v1 (hybrid) and may
// have swap, so the kubelet is told to accept both, and uses cgroupfs like containerd's runc.
// It keeps per-pod and QoS cgroups (cgroupsPerQOS) and enforces only the pods' allocatable:
// without pod cgroups kubelet 1.36.4 crashes when it resizes a pod whose container with
// resources cannot start yet, as a container waiting for its launch priority does. It authenticates the API server by its client
// certificate (kube-apiserver holds one signed by the cluster CA) and asks it whether a
// request is allowed, as in a kubeadm cluster. Eviction and image garbage collection
// thresholds are lowered: the disk of a shared build machine can sit above the default
// limits, and the node would then evict every pod and delete the test images.
// InPlacePodLevelResourcesVerticalScaling (beta, on by default since 1.36) is off: bosun does
// not resize pods at the pod level, and the feature reads pod memory limits that a node
// without pod cgroups lacks.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://%[1]s
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
cgroupsPerQOS: true
enforceNodeAllocatable: ["pods"]
port: %[2]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[3]d
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %[4]s
authorization:
  mode: Webhook
podLogsDir: %[5]s
volumePluginDir: %[6]s
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%%
  nodefs.inodesFree: 1%%
  imagefs.available: 1%%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
featureGates:
  InPlacePodLevelResourcesVerticalScaling: false
`

// startKubelet runs the kubelet (built by hack/build-test-servers.sh) for the node and
// returns once its /healthz answers.
func (c *Cluster) startKubelet(ctx context.Context) error {
	binary, err := framework.ToolPath("kubelet")
	if err != nil {
		return fmt.Errorf("%w (run `make test-servers` first)", err)
	}
	ports, err := framework.FreeLoopbackPorts(2)
	if err != nil {
		return err
	}
	dir := filepath.Join(c.dir, "kubelet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	configPath := filepath.Join(dir, "config.yaml")
	config := fmt.Sprintf(kubeletConfig, c.containerd.socket, ports[0], ports[1], c.controlPlane.CAFile(),
		filepath.Join(dir, "pod-logs"), filepath.Join(dir, "volume-plugins"))
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		return err
	}
	kubeconfig, err := c.controlPlane.UserKubeconfig("system:node:" + c.nodeName)
	if err != nil {
		return err
	}
	process, err := framework.StartProcess(framework.ProcessConfig{
		Name: "kubelet",
		Path: binary,
		Args: []string{
			"--config=" + configPath,
			"--kubeconfig=" + kubeconfig,
			"--root-dir=" + filepath.Join(dir, "root"),
			// Not under --root-dir by default: /var/lib/kubelet/pki.
			"--cert-dir=" + filepath.Join(dir, "pki"),
			"--hostname-override=" + c.nodeName,
			"--v=2",
		},
		LogPath: c.logPath("kubelet"),
	})
	if err != nil {
		return err
	}
	// Start waits for the node's Ready later, with the rest of the cluster; a restart waits
	// for both.
	c.components = append(c.components, &component{Process: process, port: ports[1], ready: c.kubeletReady(ports[1])})
	return plainHealthzReady("the kubelet", ports[1])(ctx, process)
}
