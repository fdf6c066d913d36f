package cluster

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bosun-dev/bosun/pkg/webhook/noderestriction"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// startScheduler runs kube-scheduler as the admin, leader election off (one replica).
func (c *Cluster) startScheduler(ctx context.Context) error {
	binary, err := framework.ToolPath("kube-scheduler")
	if err != nil {
		return fmt.Errorf("%w (run `make test-servers` first)", err)
	}
	ports, err := framework.FreeLoopbackPorts(1)
	if err != nil {
		return err
	}
	kubeconfig := c.controlPlane.KubeconfigPath()
	process, err := framework.StartProcess(framework.ProcessConfig{
		Name: "kube-scheduler",
		Path: binary,
		Args: []string{
			"--kubeconfig=" + kubeconfig,
			"--authentication-kubeconfig=" + kubeconfig,
			"--authorization-kubeconfig=" + kubeconfig,
			"--leader-elect=false",
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(ports[0]),
			"--v=1",
		},
		LogPath: c.logPath("kube-scheduler"),
	})
	if err != nil {
		return err
	}
	c.components = append(c.components, &component{Process: process, port: ports[0], ready: healthEndpointReady(ports[0], "/healthz")})
	return framework.WaitForHealthEndpoint(ctx, 2*time.Minute, process, ports[0], "/healthz")
}

// startDaemon runs bosun-daemon for the node with the node's own identity, as
// docs/install.md tells operators to give it: a client certificate of user
// bosun:daemon:<node> in group bosun:daemons, authorized by config/rbac/daemon.yaml and
// kept to its node by the manager's node restriction webhooks. It returns once its
// /readyz passes: informers synced and containerd answering.
func (c *Cluster) startDaemon(ctx context.Context, binary string) error {
	ports, err := framework.FreeLoopbackPorts(1)
	if err != nil {
		return err
	}
	kubeconfig, err := c.controlPlane.ClientCertificateKubeconfig(framework.DaemonUser(c.nodeName), noderestriction.DaemonsGroup)
	if err != nil {
		return err
	}
	process, err := framework.StartProcess(framework.ProcessConfig{
		Name: "bosun-daemon",
		Path: binary,
		Args: []string{
			"--kubeconfig=" + kubeconfig,
			"--node-name=" + c.nodeName,
			"--runtime-endpoint=" + c.RuntimeEndpoint(),
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(ports[0]),
			"--v=2",
		},
		LogPath: c.logPath("bosun-daemon"),
	})
	if err != nil {
		return err
	}
	c.components = append(c.components, &component{Process: process, port: ports[0], ready: healthEndpointReady(ports[0], "/readyz")})
	return framework.WaitForHealthEndpoint(ctx, 2*time.Minute, process, ports[0], "/readyz")
}

// answers reports whether a plain HTTP GET of url answers with one of codes; a server not
// listening yet answers nothing.
func answers(ctx context.Context, url string, codes ...int) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return slices.Contains(codes, resp.StatusCode)
}

// waitUntilUsable waits for what a user's first workload needs: the node Ready without the
// not-ready taint (upstream's node-lifecycle controller removes it) and the default
// namespace's ServiceAccount (upstream's serviceaccount controller creates it).
func (c *Cluster) waitUntilUsable(ctx context.Context) error {
	client, err := c.Clientset()
	if err != nil {
		return err
	}
	return framework.WaitFor(ctx, 2*time.Minute, "node "+c.nodeName+" to be Ready and schedulable", func(ctx context.Context) (bool, error) {
		if err := c.Err(); err != nil {
			return false, err
		}
		node, err := client.CoreV1().Nodes().Get(ctx, c.nodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if !NodeReady(node) {
			return false, nil
		}
		for _, taint := range node.Spec.Taints {
			if taint.Effect == corev1.TaintEffectNoSchedule || taint.Effect == corev1.TaintEffectNoExecute {
				return false, nil
			}
		}
		_, err = client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
}

// NodeReady reports whether the node's Ready condition is True.
func NodeReady(node *corev1.Node) bool {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// kubectl runs kubectl (built by hack/build-test-servers.sh) as the admin.
func (c *Cluster) kubectl(ctx context.Context, args ...string) error {
	binary, err := framework.ToolPath("kubectl")
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, binary, append([]string{"--kubeconfig=" + c.KubeconfigPath()}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}
