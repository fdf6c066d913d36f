package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

const (
	// restartExitTimeout bounds how long a component signalled by RestartComponent may take
	// to exit before its process group is killed.
	restartExitTimeout = 30 * time.Second
	// DefaultRestartTimeout bounds RestartComponent's wait for the component to be healthy
	// again; a warm kubelet turns its node Ready again in seconds.
	DefaultRestartTimeout = 2 * time.Minute
)

// RestartComponent ends the named component (kubelet, containerd, bosun-daemon, …) with sig,
// as a crash (SIGKILL) or an operator (SIGTERM) would, starts it again at once with the
// same command line, appending to the same log, and returns once it is healthy again the
// way Start waits for it: containerd answering CRI, the kubelet's /healthz and its node
// Ready, /readyz or /healthz of the others. The exit is expected: unlike any other exit of
// a component, it does not break the cluster. The error says what went wrong; a component
// that does not come back also breaks the cluster, as if it had exited on its own.
func (c *Cluster) RestartComponent(ctx context.Context, name string, sig syscall.Signal) error {
	if c.attached != nil {
		return fmt.Errorf("restarting %s: the cluster belongs to another process", name)
	}
	if err := c.Err(); err != nil {
		return fmt.Errorf("restarting %s: the cluster is broken already: %w", name, err)
	}
	comp := c.findComponent(name)
	if comp == nil {
		return fmt.Errorf("restarting %s: no such component", name)
	}
	old := c.expectExit(comp)
	if err := old.SignalGroup(sig); err != nil {
		return fmt.Errorf("restarting %s: %w", name, err)
	}
	select {
	case <-old.Done():
	case <-time.After(restartExitTimeout):
	}
	// Reaps it if it ignored sig, and ends whatever it left in its group either way.
	old.Kill()

	restarted, err := framework.StartProcess(old.Config())
	if err != nil {
		err = fmt.Errorf("restarting %s: %w", name, err)
		c.fail(err)
		return err
	}
	c.replaceProcess(comp, restarted)
	go c.watchComponent(comp, restarted)

	ctx, cancel := context.WithTimeout(ctx, DefaultRestartTimeout)
	defer cancel()
	if comp.ready != nil {
		if err := comp.ready(ctx, restarted); err != nil {
			err = fmt.Errorf("waiting for the restarted %s: %w", name, err)
			c.fail(err)
			return err
		}
	}
	if c.controlPlane != nil && (name == "containerd" || name == "kubelet") {
		// Whatever the node went through, the next workload needs it Ready and
		// schedulable.
		if err := c.waitUntilUsable(ctx); err != nil {
			err = fmt.Errorf("waiting for the node after the restart of %s: %w", name, err)
			c.fail(err)
			return err
		}
	}
	if c.dir == "" {
		return nil // a cluster put together by a unit test has no state to write
	}
	return c.writeState()
}

// findComponent returns the component called name, or nil.
func (c *Cluster) findComponent(name string) *component {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, comp := range c.components {
		if comp.Name() == name {
			return comp
		}
	}
	return nil
}

// expectExit marks comp's current process as one whose exit is intended, and returns it.
func (c *Cluster) expectExit(comp *component) *framework.Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.expectedExits == nil {
		c.expectedExits = map[*framework.Process]bool{}
	}
	c.expectedExits[comp.Process] = true
	return comp.Process
}

// exitExpected reports whether p was ended on purpose by RestartComponent.
func (c *Cluster) exitExpected(p *framework.Process) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.expectedExits[p]
}

// replaceProcess makes p the running process of comp.
func (c *Cluster) replaceProcess(comp *component, p *framework.Process) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.containerd != nil && c.containerd.Process == comp.Process {
		c.containerd.Process = p
	}
	comp.Process = p
}

// healthEndpointReady is the readiness check of a component serving path on its secure
// loopback port.
func healthEndpointReady(port int, path string) func(context.Context, *framework.Process) error {
	return func(ctx context.Context, p *framework.Process) error {
		return framework.WaitForHealthEndpoint(ctx, 2*time.Minute, p, port, path)
	}
}

// containerdReady waits until containerd answers CRI Version.
func (c *Cluster) containerdReady(ctx context.Context, p *framework.Process) error {
	return framework.WaitFor(ctx, time.Minute, "containerd to answer CRI Version", func(ctx context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("containerd exited: %s", p.LogTail(30))
		}
		var answered bool
		err := c.containerd.withRuntime(ctx, func(rt runtimeapi.RuntimeServiceClient) error {
			_, err := rt.Version(ctx, &runtimeapi.VersionRequest{})
			answered = err == nil
			return nil
		})
		return answered, err
	})
}

// plainHealthzReady waits until the process, called who in messages, answers 200 on
// http://127.0.0.1:<port>/healthz, as the kubelet and kube-proxy serve it: plain HTTP, no
// authentication.
func plainHealthzReady(who string, port int) func(context.Context, *framework.Process) error {
	return func(ctx context.Context, p *framework.Process) error {
		return framework.WaitFor(ctx, time.Minute, who+" to answer /healthz", func(ctx context.Context) (bool, error) {
			if p.Exited() {
				return false, fmt.Errorf("%s exited: %s", who, p.LogTail(40))
			}
			return answers(ctx, "http://127.0.0.1:"+strconv.Itoa(port)+"/healthz", http.StatusOK), nil
		})
	}
}

// kubeletReady waits until the kubelet answers /healthz on healthPort and, once the
// control plane runs, until its node is Ready: the node a restarted kubelet reports.
func (c *Cluster) kubeletReady(healthPort int) func(context.Context, *framework.Process) error {
	return func(ctx context.Context, p *framework.Process) error {
		err := plainHealthzReady("the kubelet", healthPort)(ctx, p)
		if err != nil || c.controlPlane == nil {
			return err
		}
		client, err := c.Clientset()
		if err != nil {
			return err
		}
		// A restarted kubelet reports its node status again from scratch; the Ready
		// condition it posts after its first successful sync is the one waited for.
		since := time.Now().Add(-time.Second)
		return framework.WaitFor(ctx, 2*time.Minute, "node "+c.nodeName+" to be Ready after the kubelet's restart", func(ctx context.Context) (bool, error) {
			if p.Exited() {
				return false, errors.New("the kubelet exited again")
			}
			node, err := client.CoreV1().Nodes().Get(ctx, c.nodeName, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady {
					return cond.Status == corev1.ConditionTrue && cond.LastHeartbeatTime.After(since), nil
				}
			}
			return false, nil
		})
	}
}
