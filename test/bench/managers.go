package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// managerStartTimeout bounds how long a controller manager may take to answer /healthz.
const managerStartTimeout = 2 * time.Minute

// managerSpec describes a controller manager process to run against a control plane.
type managerSpec struct {
	// Label names the process in logs and the report.
	Label string
	// Path is the binary.
	Path string
	// Args are its flags, without --bind-address and --secure-port, which start adds.
	Args []string
}

// clientLimits are the client-side rate limits given to a manager.
type clientLimits struct {
	QPS   float64
	Burst int
}

func (l clientLimits) flags() []string {
	return []string{
		"--kube-api-qps=" + strconv.FormatFloat(l.QPS, 'g', -1, 32),
		"--kube-api-burst=" + strconv.Itoa(l.Burst),
	}
}

// bosunManager runs bosun-controller-manager with the named controllers. Like the upstream
// one it acts as the admin user (no --use-service-account-credentials), has leader election
// off, and speaks protobuf (the default of both).
func bosunManager(path string, cp *framework.ControlPlane, controllers string, limits clientLimits, verbosity int) managerSpec {
	args := append([]string{
		"--kubeconfig=" + cp.KubeconfigPath(),
		"--leader-elect=false",
		"--controllers=" + controllers,
		"--v=" + strconv.Itoa(verbosity),
	}, limits.flags()...)
	return managerSpec{Label: "bosun-controller-manager", Path: path, Args: args}
}

// upstreamManager runs upstream kube-controller-manager with the named controllers, with
// the same identity, leader election, content type and limits as bosunManager.
func upstreamManager(path string, cp *framework.ControlPlane, label, controllers string, limits clientLimits, verbosity int) managerSpec {
	args := append([]string{
		"--kubeconfig=" + cp.KubeconfigPath(),
		"--authentication-kubeconfig=" + cp.KubeconfigPath(),
		"--authorization-kubeconfig=" + cp.KubeconfigPath(),
		"--leader-elect=false",
		"--controllers=" + controllers,
		"--v=" + strconv.Itoa(verbosity),
	}, limits.flags()...)
	return managerSpec{Label: label, Path: path, Args: args}
}

// manager is a running controller manager.
type manager struct {
	*framework.Process
	// Port is its secure port, serving /healthz, /metrics and /debug/pprof.
	Port int
}

// startManager runs spec on a free loopback port, logging to logDir/<label>.log, and
// returns once /healthz answers "ok".
func startManager(ctx context.Context, spec managerSpec, logDir string) (*manager, error) {
	ports, err := framework.FreeLoopbackPorts(1)
	if err != nil {
		return nil, err
	}
	args := append([]string{"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(ports[0])}, spec.Args...)
	process, err := framework.StartProcess(framework.ProcessConfig{
		Name:    spec.Label,
		Path:    spec.Path,
		Args:    args,
		LogPath: filepath.Join(logDir, spec.Label+".log"),
	})
	if err != nil {
		return nil, err
	}
	m := &manager{Process: process, Port: ports[0]}
	err = framework.WaitFor(ctx, managerStartTimeout, spec.Label+" to report /healthz ok", func(context.Context) (bool, error) {
		if m.Exited() {
			return false, fmt.Errorf("%s exited with status %d:\n%s", spec.Label, m.ExitCode(), m.LogTail(30))
		}
		// Both managers let /healthz through without credentials (always-allow-paths).
		code, body := framework.GetEndpoint(m.Port, "/healthz", "")
		return code == http.StatusOK && strings.TrimSpace(body) == "ok", nil
	})
	if err != nil {
		m.Stop(framework.DefaultStopGracePeriod)
		return nil, err
	}
	return m, nil
}

// checkAlive fails when the manager has exited, which would make its figures meaningless.
func (m *manager) checkAlive() error {
	if m.Exited() {
		return fmt.Errorf("%s exited with status %d during the benchmark:\n%s", m.Name(), m.ExitCode(), m.LogTail(30))
	}
	return nil
}
