package framework

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// BosunDaemonStartTimeout bounds how long StartBosunDaemon waits for bosun-daemon to report
// ready.
const BosunDaemonStartTimeout = 2 * time.Minute

// BosunDaemonOptions configure a bosun-daemon (the node agent) run against a ControlPlane.
type BosunDaemonOptions struct {
	// Node is the node the agent works for (its NODE_NAME).
	Node string
	// RuntimeEndpoint is --runtime-endpoint, for example the Endpoint() of a crifake.Runtime
	// or "unix://" + a socket path where a runtime will appear later.
	RuntimeEndpoint string
	// Verbosity is --v; 2 when zero.
	Verbosity int
	// ExtraArgs are appended after the flags above.
	ExtraArgs []string
}

// BosunDaemon is a running bosun-daemon.
type BosunDaemon struct {
	*Process
	// Port is the secure loopback port it serves /livez, /readyz and /metrics on.
	Port int
}

// RunBosunDaemon runs bosun-daemon (built from this checkout) for opts.Node with the node's
// own identity (DaemonKubeconfig: user bosun:daemon:<node> in group bosun:daemons,
// authorized by config/rbac/daemon.yaml, which it installs), on a free loopback port,
// until the test ends, and returns at once. So the agent under test has the permissions
// it ships with, and the manager's node restriction webhooks judge its writes. The end of
// its log is printed if the test fails.
func RunBosunDaemon(t testing.TB, cp *ControlPlane, opts BosunDaemonOptions) *BosunDaemon {
	t.Helper()
	binary := BuildBosunBinary(t, "bosun-daemon")
	kubeconfig, err := cp.DaemonKubeconfig(t.Context(), opts.Node)
	if err != nil {
		t.Fatal(err)
	}
	ports, err := FreeLoopbackPorts(1)
	if err != nil {
		t.Fatal(err)
	}
	verbosity := opts.Verbosity
	if verbosity == 0 {
		verbosity = 2
	}
	args := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--runtime-endpoint=" + opts.RuntimeEndpoint,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[0]),
		"--v=" + strconv.Itoa(verbosity),
	}, opts.ExtraArgs...)
	process := RunProcess(t, ProcessConfig{
		Name: "bosun-daemon-" + opts.Node,
		Path: binary,
		Args: args,
		Env:  []string{"NODE_NAME=" + opts.Node},
	})
	return &BosunDaemon{Process: process, Port: ports[0]}
}

// StartBosunDaemon is RunBosunDaemon followed by WaitReady: it returns once the agent
// reaches its runtime and its informers have synced. ctx bounds the wait.
func StartBosunDaemon(ctx context.Context, t testing.TB, cp *ControlPlane, opts BosunDaemonOptions) *BosunDaemon {
	t.Helper()
	d := RunBosunDaemon(t, cp, opts)
	if err := d.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return d
}

// WaitReady waits up to BosunDaemonStartTimeout until /readyz answers 200, and fails at once
// if the agent exits.
func (d *BosunDaemon) WaitReady(ctx context.Context) error {
	return WaitFor(ctx, BosunDaemonStartTimeout, d.Name()+" to report ready", func(context.Context) (bool, error) {
		if err := d.ExitError(); err != nil {
			return false, err
		}
		code, _ := GetEndpoint(d.Port, "/readyz", "")
		return code == http.StatusOK, nil
	})
}

// Get requests path (/livez, /readyz?verbose, ...) from the agent's secure port without
// credentials and returns the status code and body (code 0 when nothing answers).
func (d *BosunDaemon) Get(path string) (int, string) { return GetEndpoint(d.Port, path, "") }

// ExitError is nil while the agent runs and otherwise says how it exited, with the end of
// its log, for conditions polled with WaitFor that should stop on a dead agent.
func (d *BosunDaemon) ExitError() error {
	if !d.Exited() {
		return nil
	}
	return fmt.Errorf("%s exited with status %d:\n%s", d.Name(), d.ExitCode(), d.LogTail(40))
}
