package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// managerSpec describes a controller manager process to run against a control plane.
type managerSpec struct {
	// Label names the process in logs and the report.
	Label string
	// Path is the binary.
	Path string
	// Args are its flags, without --bind-address and --secure-port, which start adds.
	Args []string
	// ReadyPath, when set, is a health endpoint (bosun's /readyz) that must answer "ok"
	// besides /healthz before the manager counts as started: /readyz holds the admission
	// webhooks, which /healthz does not.
	ReadyPath string
}

// clientLimits are the client-side rate limits given to a manager.
type clientLimits struct {
	QPS   float64
	Burst int
}

// bosunManager runs bosun-controller-manager with the named controllers. Like the upstream
// one it acts as the admin user (no --use-service-account-credentials), has leader election
// off, and speaks protobuf (the default of both).
func bosunManager(path string, cp *framework.ControlPlane, controllers string, limits clientLimits, verbosity int) managerSpec {
	args := framework.BosunControllerManagerArgs(cp, limits.options(controllers, verbosity))
	return managerSpec{Label: "bosun-controller-manager", Path: path, Args: args}
}

// upstreamManager runs upstream kube-controller-manager with the named controllers, with
// the same identity, leader election, content type and limits as bosunManager.
func upstreamManager(path string, cp *framework.ControlPlane, label, controllers string, limits clientLimits, verbosity int) managerSpec {
	args := framework.UpstreamControllerManagerArgs(cp, limits.options(controllers, verbosity))
	return managerSpec{Label: label, Path: path, Args: args}
}

func (l clientLimits) options(controllers string, verbosity int) framework.ControllerManagerOptions {
	return framework.ControllerManagerOptions{Controllers: controllers, QPS: l.QPS, Burst: l.Burst, Verbosity: verbosity}
}

// manager is a running controller manager.
type manager struct {
	*framework.ControllerManager
}

// startManager runs spec on a free loopback port, logging to logDir/<label>.log, and
// returns once /healthz (and spec.ReadyPath, when set) answers "ok".
func startManager(ctx context.Context, spec managerSpec, logDir string) (*manager, error) {
	cm, err := framework.StartControllerManager(ctx, spec.Label, spec.Path, spec.Args, filepath.Join(logDir, spec.Label+".log"))
	if err != nil {
		return nil, err
	}
	if spec.ReadyPath != "" {
		if err := framework.WaitForHealthEndpoint(ctx, framework.ControllerManagerStartTimeout, cm.Process, cm.Port, spec.ReadyPath); err != nil {
			cm.Stop(framework.DefaultStopGracePeriod)
			return nil, err
		}
	}
	return &manager{ControllerManager: cm}, nil
}

// checkAlive fails when the manager has exited, which would make its figures meaningless.
func (m *manager) checkAlive() error {
	if m.Exited() {
		return fmt.Errorf("%s exited with status %d during the benchmark:\n%s", m.Name(), m.ExitCode(), m.LogTail(30))
	}
	return nil
}
