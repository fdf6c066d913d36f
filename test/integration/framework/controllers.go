package framework

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// ControllerManager is a running controller manager process (bosun's or upstream's) that
// a test drives through the API server.
type ControllerManager struct {
	*Process
	// Port is the secure port it serves /healthz and /metrics on.
	Port int
	// Args are the arguments it was started with; Restart reuses them.
	Args []string

	t    testing.TB
	path string
}

// ControllerManagerOptions configure StartBosunControllerManager.
type ControllerManagerOptions struct {
	// Controllers is the --controllers value, for example "replicaset,deployment".
	Controllers string
	// FeatureGates is the --feature-gates value, for example "PodDeletionCost=false".
	FeatureGates string
	// ExtraArgs are appended after the framework's flags.
	ExtraArgs []string
}

// StartBosunControllerManager runs bosun-controller-manager against cp for the duration of
// the test, with leader election off (every test has its own manager) and the client rate
// limits raised so that tests are bound by the API server, not by the default 20 QPS. It
// returns once /healthz answers 200, that is once the controllers' caches have synced.
func StartBosunControllerManager(t testing.TB, cp *ControlPlane, opts ControllerManagerOptions) *ControllerManager {
	t.Helper()
	args := []string{
		"--kubeconfig=" + cp.KubeconfigPath(),
		"--leader-elect=false",
		"--kube-api-qps=500",
		"--kube-api-burst=500",
		"--v=2",
	}
	if opts.Controllers != "" {
		args = append(args, "--controllers="+opts.Controllers)
	}
	if opts.FeatureGates != "" {
		args = append(args, "--feature-gates="+opts.FeatureGates)
	}
	args = append(args, opts.ExtraArgs...)
	return startControllerManager(t, BuildBosunBinary(t, "bosun-controller-manager"), args)
}

// StartUpstreamControllerManager runs upstream kube-controller-manager (built by
// hack/build-test-servers.sh) with only the named controllers, for example
// "garbagecollector": the parts of a cluster that bosun does not replace yet. Leader
// election is off and no service-account credentials are used; it acts as the admin user.
func StartUpstreamControllerManager(t testing.TB, cp *ControlPlane, controllers string, extraArgs ...string) *ControllerManager {
	t.Helper()
	path, err := ToolPath("kube-controller-manager")
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{
		"--kubeconfig=" + cp.KubeconfigPath(),
		"--authentication-kubeconfig=" + cp.KubeconfigPath(),
		"--authorization-kubeconfig=" + cp.KubeconfigPath(),
		"--leader-elect=false",
		"--controllers=" + controllers,
		"--kube-api-qps=500",
		"--kube-api-burst=500",
		"--v=2",
	}, extraArgs...)
	return startControllerManager(t, path, args)
}

func startControllerManager(t testing.TB, path string, args []string) *ControllerManager {
	t.Helper()
	cm := &ControllerManager{t: t, path: path}
	cm.start(args)
	return cm
}

// start runs the binary with args plus a fresh loopback --secure-port and waits until it is
// healthy.
func (cm *ControllerManager) start(args []string) {
	t := cm.t
	t.Helper()
	ports, err := FreeLoopbackPorts(1)
	if err != nil {
		t.Fatal(err)
	}
	cm.Args = args
	cm.Port = ports[0]
	all := append([]string{"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", cm.Port)}, args...)
	cm.Process = RunBinary(t, cm.path, all...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = WaitFor(ctx, 2*time.Minute, cm.Name()+" to report /healthz ok", func(context.Context) (bool, error) {
		if cm.Exited() {
			return false, fmt.Errorf("it exited with status %d:\n%s", cm.ExitCode(), cm.LogTail(40))
		}
		// /healthz needs no credentials on either manager (always-allow-paths default).
		code, body := GetEndpoint(cm.Port, "/healthz", "")
		return code == http.StatusOK && strings.TrimSpace(body) == "ok", nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Restart kills the process without a chance to clean up (SIGKILL, as a crashed or
// OOM-killed manager) and starts it again with the same arguments.
func (cm *ControllerManager) Restart() {
	cm.t.Helper()
	cm.Kill()
	args := cm.Args
	cm.start(args)
}
