package framework

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ControllerManagerStartTimeout bounds how long a controller manager may take to answer
// /healthz.
const ControllerManagerStartTimeout = 2 * time.Minute

// ControllerManagerOptions configure the flags of a controller manager (bosun's or
// upstream's) run against a ControlPlane.
type ControllerManagerOptions struct {
	// Controllers is the --controllers value, for example "replicaset,deployment".
	Controllers string
	// FeatureGates is the --feature-gates value, for example "PodDeletionCost=false".
	FeatureGates string
	// QPS and Burst are --kube-api-qps and --kube-api-burst; 500 when zero, so that tests
	// are bound by the API server rather than by the default 20 QPS.
	QPS   float64
	Burst int
	// DefaultClientLimits leaves --kube-api-qps and --kube-api-burst out (QPS and Burst are
	// ignored), so that the manager runs with its own defaults, as an operator who sets
	// neither gets.
	DefaultClientLimits bool
	// Verbosity is --v; 2 when zero.
	Verbosity int
	// Kubeconfig is the --kubeconfig of bosun-controller-manager; the admin's when empty.
	Kubeconfig string
	// Webhooks makes bosun-controller-manager serve its admission webhooks on WebhookPort
	// (StartBosunControllerManager picks a free loopback port when it is zero) and write
	// its webhook configurations, which send the API server to https://127.0.0.1:<port>;
	// the start then also waits for /readyz, which passes once the configurations are
	// written. Without it, bosun-controller-manager runs with --webhook-port=0.
	Webhooks    bool
	WebhookPort int
	// ExtraArgs are appended after the flags above.
	ExtraArgs []string
}

// BosunControllerManagerArgs returns the flags that run bosun-controller-manager against
// cp as the admin user (or as opts.Kubeconfig's user), with leader election off (every test
// and benchmark run has its own manager). --bind-address and --secure-port are left to
// StartControllerManager.
func BosunControllerManagerArgs(cp *ControlPlane, opts ControllerManagerOptions) []string {
	kubeconfig := opts.Kubeconfig
	if kubeconfig == "" {
		kubeconfig = cp.KubeconfigPath()
	}
	webhookPort := 0
	if opts.Webhooks {
		webhookPort = opts.WebhookPort
		if webhookPort == 0 {
			webhookPort = defaultWebhookPort
		}
	}
	return opts.args([]string{"--kubeconfig=" + kubeconfig, "--webhook-port=" + strconv.Itoa(webhookPort)})
}

// defaultWebhookPort is bosun-controller-manager's --webhook-port default.
const defaultWebhookPort = 9876

// UpstreamControllerManagerArgs returns the flags that run upstream kube-controller-manager
// (built by hack/build-test-servers.sh) against cp the same way: admin user (no
// service-account credentials), leader election off, delegated authentication and
// authorization through the same kubeconfig.
func UpstreamControllerManagerArgs(cp *ControlPlane, opts ControllerManagerOptions) []string {
	return opts.args([]string{
		"--kubeconfig=" + cp.KubeconfigPath(),
		"--authentication-kubeconfig=" + cp.KubeconfigPath(),
		"--authorization-kubeconfig=" + cp.KubeconfigPath(),
	})
}

func (o ControllerManagerOptions) args(base []string) []string {
	qps, burst, verbosity := o.QPS, o.Burst, o.Verbosity
	if qps == 0 {
		qps = 500
	}
	if burst == 0 {
		burst = 500
	}
	if verbosity == 0 {
		verbosity = 2
	}
	args := append(base, "--leader-elect=false")
	if !o.DefaultClientLimits {
		args = append(args, "--kube-api-qps="+strconv.FormatFloat(qps, 'g', -1, 32), "--kube-api-burst="+strconv.Itoa(burst))
	}
	args = append(args, "--v="+strconv.Itoa(verbosity))
	if o.Controllers != "" {
		args = append(args, "--controllers="+o.Controllers)
	}
	if o.FeatureGates != "" {
		args = append(args, "--feature-gates="+o.FeatureGates)
	}
	return append(args, o.ExtraArgs...)
}

// ControllerManager is a running controller manager process (bosun's or upstream's).
type ControllerManager struct {
	*Process
	// Port is the secure port it serves /healthz, /metrics and /debug/pprof on.
	Port int
	// WebhookPort is the port bosun-controller-manager serves admission webhooks on; 0 when
	// it serves none (and for upstream's manager).
	WebhookPort int
	// Args are the arguments it was started with, without --bind-address and
	// --secure-port; Restart reuses them.
	Args []string

	t    testing.TB // set for managers started by a test
	path string
}

// StartControllerManager runs the controller manager at path with args plus a free
// loopback --secure-port, writing its output to logPath, and returns once /healthz answers
// "ok", that is once its controllers' caches have synced, and, for a manager serving
// webhooks (a non-zero --webhook-port), once /readyz does too. The caller stops it.
func StartControllerManager(ctx context.Context, name, path string, args []string, logPath string) (*ControllerManager, error) {
	return startControllerManager(ctx, name, path, args, nil, logPath)
}

func startControllerManager(ctx context.Context, name, path string, args, env []string, logPath string) (*ControllerManager, error) {
	ports, err := FreeLoopbackPorts(1)
	if err != nil {
		return nil, err
	}
	all := append([]string{"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(ports[0])}, args...)
	process, err := StartProcess(ProcessConfig{Name: name, Path: path, Args: all, Env: env, LogPath: logPath})
	if err != nil {
		return nil, err
	}
	cm := &ControllerManager{Process: process, Port: ports[0], WebhookPort: webhookPortOf(args), Args: args, path: path}
	if err := cm.waitHealthy(ctx); err != nil {
		process.Stop(DefaultStopGracePeriod)
		return nil, err
	}
	return cm, nil
}

func (cm *ControllerManager) waitHealthy(ctx context.Context) error {
	// /healthz and /readyz need no credentials on either manager (always-allow-paths
	// default).
	if err := WaitForHealthEndpoint(ctx, ControllerManagerStartTimeout, cm.Process, cm.Port, "/healthz"); err != nil {
		return err
	}
	if cm.WebhookPort == 0 {
		return nil
	}
	return WaitForHealthEndpoint(ctx, ControllerManagerStartTimeout, cm.Process, cm.Port, "/readyz")
}

// webhookPortOf returns the last --webhook-port in args (the one that takes effect), or 0.
func webhookPortOf(args []string) int {
	port := 0
	for _, arg := range args {
		if flagName(arg) == "webhook-port" {
			if _, value, ok := strings.Cut(arg, "="); ok {
				port, _ = strconv.Atoi(value)
			}
		}
	}
	return port
}

// WaitForHealthEndpoint waits until process answers "ok" on path (/healthz, /readyz) of its
// secure loopback port, without credentials, and fails at once if the process exits.
func WaitForHealthEndpoint(ctx context.Context, timeout time.Duration, process *Process, port int, path string) error {
	return WaitFor(ctx, timeout, process.Name()+" to report "+path+" ok", func(context.Context) (bool, error) {
		if process.Exited() {
			return false, fmt.Errorf("%s exited with status %d:\n%s", process.Name(), process.ExitCode(), process.LogTail(40))
		}
		code, body := GetEndpoint(port, path, "")
		return code == http.StatusOK && strings.TrimSpace(body) == "ok", nil
	})
}

// StartBosunControllerManager runs bosun-controller-manager (built from this checkout)
// against cp for the duration of the test; see BosunControllerManagerArgs.
func StartBosunControllerManager(t testing.TB, cp *ControlPlane, opts ControllerManagerOptions) *ControllerManager {
	t.Helper()
	if opts.Webhooks && opts.WebhookPort == 0 {
		ports, err := FreeLoopbackPorts(1)
		if err != nil {
			t.Fatal(err)
		}
		opts.WebhookPort = ports[0]
	}
	cm := startForTest(t, BuildBosunBinary(t, "bosun-controller-manager"), BosunControllerManagerArgs(cp, opts), DetectCacheMutation)
	if opts.Webhooks {
		// Registered after the manager's own cleanup, so it runs first: the manager is
		// stopped below, and the CRDs it pointed at itself must not stay pointed at nothing.
		t.Cleanup(func() {
			cm.Process.Stop(DefaultStopGracePeriod)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := cp.ServeConversion(ctx); err != nil {
				t.Errorf("pointing the CRDs back at the test's conversion server: %v", err)
			}
		})
	}
	return cm
}

// StartUpstreamControllerManager runs upstream kube-controller-manager with only the named
// controllers, for example "replicaset,deployment" for a test that hands them over to
// bosun. See UpstreamControllerManagerArgs.
func StartUpstreamControllerManager(t testing.TB, cp *ControlPlane, controllers string, extraArgs ...string) *ControllerManager {
	t.Helper()
	path, err := ToolPath("kube-controller-manager")
	if err != nil {
		t.Fatal(err)
	}
	return startForTest(t, path, UpstreamControllerManagerArgs(cp, ControllerManagerOptions{Controllers: controllers, ExtraArgs: extraArgs}), nil)
}

// DetectCacheMutation is the environment of the bosun-controller-manager processes tests
// start: client-go's cache mutation detector, which makes the process panic when code
// writes to an object of an informer's cache. The manager's pod cache shares maps and
// strings among pods (podcache), so such a write would reach other pods too.
var DetectCacheMutation = []string{"KUBE_CACHE_MUTATION_DETECTOR=true"}

// startForTest starts a manager with env added to its environment that the end of the
// test stops, printing its log tail if the test failed.
func startForTest(t testing.TB, path string, args, env []string) *ControllerManager {
	t.Helper()
	name := filepath.Base(path)
	ctx, cancel := context.WithTimeout(context.Background(), ControllerManagerStartTimeout)
	defer cancel()
	cm, err := startControllerManager(ctx, name, path, args, env, filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cm.t = t
	cm.stopWithTest()
	return cm
}

func (cm *ControllerManager) stopWithTest() {
	p := cm.Process
	cm.t.Cleanup(func() {
		p.Stop(DefaultStopGracePeriod)
		if cm.t.Failed() {
			cm.t.Logf("last lines of %s (pid %d):\n%s", p.Name(), p.Pid(), p.LogTail(failureLogLines))
		}
	})
}

// Restart kills a manager started by a test without a chance to clean up (SIGKILL, as a
// crashed or OOM-killed manager) and starts it again with the same arguments and a new
// log file.
func (cm *ControllerManager) Restart() {
	t := cm.t
	t.Helper()
	cm.Kill()
	restarted := startForTest(t, cm.path, cm.Args, cm.Process.Config().Env)
	cm.Process, cm.Port, cm.WebhookPort = restarted.Process, restarted.Port, restarted.WebhookPort
}
