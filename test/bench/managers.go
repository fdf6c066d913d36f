package main

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// managerKruise names OpenKruise's own kruise-manager (v1.9.0, built by
// hack/build-kruise.sh) in the parts that compare bosun's OpenKruise controllers with it.
const managerKruise = "kruise"

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
	// Kruise, when set, makes this kruise-manager against ControlPlane, started with these
	// options instead of Path and Args.
	Kruise       *framework.KruiseManagerOptions
	ControlPlane *framework.ControlPlane
}

// clientLimits are the client-side rate limits given to a manager.
type clientLimits struct {
	QPS   float64
	Burst int
	// Defaults gives the manager no rate-limit flags at all, so that each binary runs with
	// its own defaults; QPS and Burst are then ignored.
	Defaults bool
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
	return framework.ControllerManagerOptions{Controllers: controllers, QPS: l.QPS, Burst: l.Burst, DefaultClientLimits: l.Defaults, Verbosity: verbosity}
}

// The OpenKruise CRDs a part installs for kruise-manager (--kruise-crds).
const (
	// kruiseCRDsNeeded are the part's kinds and those kruise-manager v1.9 cannot run them
	// without (framework.InstallKruiseManifests says which), so that its other controllers
	// and its pod webhooks idle, as bosun runs only the part's controllers.
	kruiseCRDsNeeded = "needed"
	// kruiseCRDsAll are all of OpenKruise's CRDs, as its installation applies them: every
	// controller runs (idle without objects), and with the SidecarSet and
	// PodUnavailableBudget CRDs the API server calls its pod webhooks on pod creates,
	// updates and deletes.
	kruiseCRDsAll = "all"
)

// installKruise applies OpenKruise's manifests for kruise-manager: the CRDs of kinds (and
// those it needs for them), or all of them with --kruise-crds=all.
func installKruise(ctx context.Context, o *options, cp *framework.ControlPlane, kinds ...string) error {
	if o.kruiseCRDs == kruiseCRDsAll {
		kinds = nil
	}
	return framework.InstallKruiseManifests(ctx, cp.Config(), kinds...)
}

// kruiseCRDsLabel describes for the report the OpenKruise CRDs installed in a part: needed
// says which with --kruise-crds=needed.
func (o *options) kruiseCRDsLabel(needed string) string {
	if o.kruiseCRDs == kruiseCRDsAll {
		return "every OpenKruise CRD installed (`--kruise-crds=all`, as OpenKruise's installation applies them: all its controllers run, " +
			"idle but for the part's, and the API server calls its pod webhooks)"
	}
	return needed
}

// kruiseImagePullJobGates are kruise-manager's --feature-gates in the imagepulljob part.
// kruise-manager v1.9's defaults equal bosun's for every gate the controllers of the
// daemonset and pub parts consult (KruiseDaemon and PodUnavailableBudgetDeleteGate on,
// PodUnavailableBudgetUpdateGate and PreDownloadImageForDaemonSetUpdate off), so those
// parts give none. ImagePullJobGate is off by default in kruise-manager and on in bosun:
// the imagepulljob part turns it on, since kruise-manager runs no job controller without
// it, and the other parts leave it off, since with it kruise-manager also runs its job
// controller there, which watches NodeImages, whose CRD (and controller, which would make a
// NodeImage for every simulated node) they do not install.
const kruiseImagePullJobGates = "ImagePullJobGate=true"

// kruiseGates is kruise-manager's --feature-gates in part: --kruise-feature-gates when set,
// else kruiseImagePullJobGates in the imagepulljob part and its defaults in the others.
func (o *options) kruiseGates(part string) string {
	if o.kruiseFeatureGates != "" {
		return o.kruiseFeatureGates
	}
	if part == partImagePullJob || part == partCluster {
		return kruiseImagePullJobGates
	}
	return ""
}

// kruiseGatesLabel describes kruise-manager's feature gates in part for the report.
func (o *options) kruiseGatesLabel(part string) string {
	if gates := o.kruiseGates(part); gates != "" {
		return "`--feature-gates=" + gates + "`"
	}
	return "its default feature gates"
}

// kruiseManager runs kruise-manager against cp as the admin user, leader election off (as
// bosun's and upstream's managers run here), with the feature gates of part (see
// kruiseGates) and the same client limits as the other managers: --rest-config-qps and
// --rest-config-burst, kruise-manager's names for them, or none at all with
// limits.Defaults. It waits for the named controllers to run their workers.
func kruiseManager(o *options, cp *framework.ControlPlane, part string, limits clientLimits, controllers ...string) (managerSpec, error) {
	opts := &framework.KruiseManagerOptions{
		FeatureGates:       o.kruiseGates(part),
		Verbosity:          o.verbosity,
		Pprof:              o.profileSeconds > 0,
		WaitForControllers: controllers,
	}
	if !limits.Defaults {
		qps, err := kruiseQPS(limits.QPS)
		if err != nil {
			return managerSpec{}, err
		}
		opts.QPS, opts.Burst = qps, limits.Burst
	}
	return managerSpec{Label: "kruise-manager", Kruise: opts, ControlPlane: cp}, nil
}

// kruiseQPS converts a QPS limit to kruise-manager's --rest-config-qps, which takes whole
// numbers only.
func kruiseQPS(qps float64) (int, error) {
	if qps < 1 || qps != math.Trunc(qps) || qps > math.MaxInt32 {
		return 0, fmt.Errorf("kruise-manager's --rest-config-qps takes a whole number of at least 1, not %v", qps)
	}
	return int(qps), nil
}

// manager is a running controller manager: bosun's, upstream's or kruise-manager.
type manager struct {
	*framework.Process
	// Port is the secure port of bosun's and upstream's manager, which serves /metrics and
	// /debug/pprof to the admin token; 0 for kruise-manager.
	Port int

	cm     *framework.ControllerManager
	kruise *framework.KruiseManager
}

// startManager runs spec, logging to logDir/<label>.log, and returns once it serves: for
// bosun and upstream on a free loopback port once /healthz (and spec.ReadyPath, when set)
// answers "ok", for kruise-manager as framework.StartKruiseManager says.
func startManager(ctx context.Context, spec managerSpec, logDir string) (*manager, error) {
	logPath := filepath.Join(logDir, spec.Label+".log")
	if spec.Kruise != nil {
		km, err := framework.StartKruiseManager(ctx, spec.ControlPlane, *spec.Kruise, logPath)
		if err != nil {
			return nil, err
		}
		return &manager{Process: km.Process, kruise: km}, nil
	}
	cm, err := framework.StartControllerManager(ctx, spec.Label, spec.Path, spec.Args, logPath)
	if err != nil {
		return nil, err
	}
	if spec.ReadyPath != "" {
		if err := framework.WaitForHealthEndpoint(ctx, framework.ControllerManagerStartTimeout, cm.Process, cm.Port, spec.ReadyPath); err != nil {
			cm.Stop(framework.DefaultStopGracePeriod)
			return nil, err
		}
	}
	return &manager{Process: cm.Process, Port: cm.Port, cm: cm}, nil
}

// Stop stops the manager (and removes kruise-manager's certificates).
func (m *manager) Stop(grace time.Duration) {
	if m.kruise != nil {
		m.kruise.Stop(grace)
		return
	}
	m.Process.Stop(grace)
}

// Metrics scrapes the manager's /metrics: with the admin token from bosun's and upstream's
// secure port, without credentials from kruise-manager's metrics port.
func (m *manager) Metrics(token string) (string, error) {
	if m.kruise != nil {
		return m.kruise.Metrics(context.Background())
	}
	return m.cm.Metrics(token)
}

// profiler returns a profiler of the manager's /debug/pprof: the secure port of bosun and
// upstream, kruise-manager's pprof port (served only when profiling was asked for, see
// kruiseManager).
func (m *manager) profiler(token string, seconds int, dir string) *profiler {
	if m.kruise != nil {
		return newProfiler(m.Pid(), fmt.Sprintf("http://127.0.0.1:%d", m.kruise.PprofPort), "", seconds, dir)
	}
	return newProfiler(m.Pid(), securePort(m.Port), token, seconds, dir)
}

// checkAlive fails when the manager has exited, which would make its figures meaningless.
func (m *manager) checkAlive() error {
	if m.Exited() {
		return fmt.Errorf("%s exited with status %d during the benchmark:\n%s", m.Name(), m.ExitCode(), m.LogTail(30))
	}
	return nil
}
