package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

const (
	// DefaultNodeName is the name the kubelet registers its node under.
	DefaultNodeName = "bosun-node"
	// DefaultUpstreamControllers are upstream kube-controller-manager's controllers beside
	// bosun: everything except what bosun replaces. The node-lifecycle controller among them
	// removes the kubelet's not-ready taint; the serviceaccount and token controllers give
	// every namespace its "default" ServiceAccount.
	DefaultUpstreamControllers = "*,-replicaset,-deployment,-garbagecollector"

	// DefaultStartTimeout bounds Start. A warm start takes well under a minute; the
	// kubelet alone needs about 20 seconds to turn its node Ready.
	DefaultStartTimeout = 4 * time.Minute

	// Identities of the components, as static users of the API server. bosun's two binaries
	// run under the RBAC in config/rbac, as an operator installs them; bosun-daemon as its
	// node's own user, a client certificate (see startDaemon).
	controllerManagerUser = "bosun-controller-manager"
	nodeGroup             = "system:nodes"
)

// Options configure Start. The zero value, with Dir set, is the cluster of `make local-up`.
type Options struct {
	// Dir holds everything the cluster writes. Start empties it first.
	Dir string
	// NodeName is the node's name; DefaultNodeName when empty.
	NodeName string
	// Controllers is bosun-controller-manager's --controllers; "*" when empty.
	Controllers string
	// UpstreamControllers is upstream kube-controller-manager's --controllers;
	// DefaultUpstreamControllers when empty.
	UpstreamControllers string
	// ManagerBinary and DaemonBinary are bosun's binaries; _output/bin's when empty
	// (`make build` writes them there).
	ManagerBinary, DaemonBinary string
	// ManagerFeatureGates is bosun-controller-manager's --feature-gates, empty for the
	// defaults: OpenKruise's suite runs with the gates OpenKruise's own CI turns on.
	ManagerFeatureGates string
	// ManagerArgs are further flags of bosun-controller-manager, for example a short
	// --min-resync-period.
	ManagerArgs []string
	// WithoutBosun starts the node and the upstream components only: no bosun CRDs, no
	// bosun-controller-manager, no bosun-daemon (bosun's RBAC is applied). A takeover test
	// installs another controller of the same kinds first and then hands the cluster over
	// with StartBosun.
	WithoutBosun bool
	// InCluster installs bosun inside the cluster instead of running its binaries on the
	// host: its images are built and pushed to the open registry and the Helm chart is
	// applied (see installBosun), in InClusterNamespace. Upstream kube-controller-manager then
	// runs all its controllers, as in a managed cluster, and the node runs kube-proxy, so that
	// pods reach the API server through the "kubernetes" Service and the API server reaches
	// the webhooks through theirs. The API server listens on every address and advertises
	// the pod network's gateway, the node's address as the pods see it.
	InCluster bool
	// MirroredRegistries are public registries (as containerd names them, e.g. docker.io)
	// whose pulls the node sends to the slow open registry instead: a test that names an
	// image of such a registry finds it there, pushed under the same repository path, and
	// the node never reaches the network.
	MirroredRegistries []string
	// StartTimeout bounds Start; DefaultStartTimeout when zero.
	StartTimeout time.Duration
}

// Cluster is a running local cluster. Stop it when done.
type Cluster struct {
	dir      string
	nodeName string
	opts     Options

	controlPlane   *framework.ControlPlane
	registries     []*registry
	slowRegistries []*throttledProxy
	containerd     *containerd
	// provisioner serves the default StorageClass from this process (nil when attached).
	provisioner *provisioner
	// components are every long-running process in start order, registries and control
	// plane excluded (they are watched through their own handles).
	components []*component

	// attached is set when this handle attached to a cluster another process runs.
	attached       *state
	attachedConfig *rest.Config

	// mu guards the components' processes, which RestartComponent replaces, and
	// expectedExits.
	mu sync.Mutex
	// expectedExits are the processes RestartComponent ended on purpose: their exit does
	// not break the cluster.
	expectedExits map[*framework.Process]bool

	failedOnce sync.Once
	failed     chan struct{} // closed when a component exits while the cluster runs
	failure    error
	stopping   chan struct{}
	stopOnce   sync.Once
}

// component is a process of the cluster that must keep running.
type component struct {
	*framework.Process
	// port is where it serves health (and metrics), 0 when it serves none here.
	port int
	// ready waits until a (re)started process of the component is healthy; nil when
	// nothing needs waiting for.
	ready func(ctx context.Context, p *framework.Process) error
}

// Start brings the cluster up and returns once the node is Ready, bosun-daemon is ready and
// the default namespace has its ServiceAccount. On failure everything it started is stopped
// and cleaned up, and the error carries the end of the failing component's log.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	logger := klog.FromContext(ctx)
	began := time.Now()
	if opts.Dir == "" {
		return nil, errors.New("starting the local cluster: no directory given")
	}
	if err := CheckHost(); err != nil {
		return nil, err
	}
	opts, err = withDefaults(opts)
	if err != nil {
		return nil, err
	}
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = DefaultStartTimeout
		if opts.InCluster {
			timeout = inClusterStartTimeout
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	// Another cluster on this machine would share the registries' ports and the bridge;
	// cleaning up would break it.
	if err := checkNoOtherCluster(); err != nil {
		return nil, err
	}
	// A run killed before its Stop leaves mounts, processes and devices behind; clear them
	// before the directory goes.
	if err := cleanUp(ctx, dir); err != nil {
		return nil, fmt.Errorf("cleaning up after an earlier run in %s: %w", dir, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("emptying %s: %w", dir, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, nodeName: opts.NodeName, opts: opts, failed: make(chan struct{}), stopping: make(chan struct{})}
	defer func() {
		if err != nil {
			if stopErr := c.Stop(); stopErr != nil {
				logger.Error(stopErr, "Cleaning up after a failed start")
			}
		}
	}()

	step := func(what string, run func() error) error {
		stepBegan := time.Now()
		logger.Info("Starting", "what", what)
		if err := run(); err != nil {
			return fmt.Errorf("starting %s: %w", what, err)
		}
		logger.V(2).Info("Started", "what", what, "duration", time.Since(stepBegan).Round(time.Millisecond))
		return nil
	}
	if err := step("the image registries", func() error { return c.startRegistries(ctx) }); err != nil {
		return nil, err
	}
	if err := step("the test images", func() error { return c.pushImages(ctx) }); err != nil {
		return nil, err
	}
	if err := step("containerd", func() error { return c.startContainerd(ctx) }); err != nil {
		return nil, err
	}
	if err := step("etcd and kube-apiserver", func() error { return c.startControlPlane(ctx, c.runsBosunProcesses()) }); err != nil {
		return nil, err
	}
	if err := step("the controllers and the scheduler", func() error { return c.startControllers(ctx, opts) }); err != nil {
		return nil, err
	}
	if err := step("the default StorageClass and its provisioner", func() error { return c.startStorage(ctx) }); err != nil {
		return nil, err
	}
	if err := step("the kubelet", func() error { return c.startKubelet(ctx) }); err != nil {
		return nil, err
	}
	if opts.InCluster {
		if err := step("kube-proxy", func() error { return c.startKubeProxy(ctx) }); err != nil {
			return nil, err
		}
	}
	if c.runsBosunProcesses() {
		if err := step("bosun-daemon", func() error { return c.startDaemon(ctx, opts.DaemonBinary) }); err != nil {
			return nil, err
		}
	}
	c.watch()
	if err := step("a Ready node", func() error { return c.waitUntilUsable(ctx) }); err != nil {
		return nil, err
	}
	if opts.InCluster {
		if err := step("bosun, installed from its images and Helm chart", func() error { return c.installBosun(ctx) }); err != nil {
			return nil, err
		}
	}
	if err := c.writeState(); err != nil {
		return nil, err
	}
	logger.Info("Local cluster is up", "dir", dir, "node", c.nodeName, "duration", time.Since(began).Round(time.Second))
	return c, nil
}

func withDefaults(opts Options) (Options, error) {
	if opts.NodeName == "" {
		opts.NodeName = DefaultNodeName
	}
	if opts.Controllers == "" {
		opts.Controllers = "*"
	}
	if opts.UpstreamControllers == "" {
		opts.UpstreamControllers = DefaultUpstreamControllers
		if opts.InCluster {
			opts.UpstreamControllers = "*"
		}
	}
	root, err := framework.RepoRoot()
	if err != nil {
		return opts, err
	}
	if opts.InCluster {
		return opts, nil // bosun's binaries are built into its images
	}
	for _, b := range []struct {
		path *string
		name string
	}{{&opts.ManagerBinary, "bosun-controller-manager"}, {&opts.DaemonBinary, "bosun-daemon"}} {
		if *b.path == "" {
			*b.path = filepath.Join(root, "_output", "bin", b.name)
		}
		if _, err := os.Stat(*b.path); err != nil {
			return opts, fmt.Errorf("%s: %w (run `make build` first)", b.name, err)
		}
	}
	return opts, nil
}

// runsBosunProcesses reports whether bosun's binaries run on the host as processes of the
// cluster: not when the cluster starts without bosun or installs it inside.
func (c *Cluster) runsBosunProcesses() bool { return !c.opts.WithoutBosun && !c.opts.InCluster }

// startControlPlane starts etcd and kube-apiserver with the users the components run as and
// applies bosun's RBAC (the in-cluster install brings its own), and bosun's CRDs when crds
// is set.
func (c *Cluster) startControlPlane(ctx context.Context, crds bool) error {
	apiServerArgs := []string{
		// Pods get their ServiceAccount and its token, as in any cluster: upstream's
		// serviceaccount and token controllers run here.
		"--disable-admission-plugins=",
		// The node's host name need not resolve; its address does.
		"--kubelet-preferred-address-types=InternalIP",
	}
	if c.opts.InCluster {
		// The "kubernetes" Service's endpoint is the pods' gateway, an address of this host
		// once the bridge exists; kube-proxy sends the Service's traffic there.
		apiServerArgs = append(apiServerArgs, "--bind-address=0.0.0.0", "--advertise-address="+podGateway)
	}
	cp, err := framework.StartControlPlane(ctx, framework.Options{
		Dir:       filepath.Join(c.dir, "control-plane"),
		BosunCRDs: crds,
		Users: []framework.User{
			{Name: controllerManagerUser},
			{Name: "system:node:" + c.nodeName, Groups: []string{nodeGroup}},
			{Name: kubeProxyUser},
		},
		APIServerArgs: apiServerArgs,
	})
	if err != nil {
		var missing *framework.MissingBinariesError
		if errors.As(err, &missing) {
			return fmt.Errorf("%w (run `make test-servers` first)", err)
		}
		return err
	}
	c.controlPlane = cp
	if c.opts.InCluster {
		return nil
	}
	return c.kubectl(ctx, "apply", "-f", filepath.Join(repoRoot(), "config", "rbac"))
}

// startControllers starts upstream kube-controller-manager, kube-scheduler and, unless
// opts.WithoutBosun, bosun-controller-manager, each returning once its /healthz answers.
func (c *Cluster) startControllers(ctx context.Context, opts Options) error {
	cp := c.controlPlane
	upstream, err := framework.ToolPath("kube-controller-manager")
	if err != nil {
		return err
	}
	kcm, err := framework.StartControllerManager(ctx, "kube-controller-manager", upstream,
		append(framework.UpstreamControllerManagerArgs(cp, framework.ControllerManagerOptions{
			Controllers: opts.UpstreamControllers,
			Verbosity:   1,
		}),
			"--service-account-private-key-file="+cp.ServiceAccountKeyFile(),
			"--root-ca-file="+cp.CAFile(),
			"--use-service-account-credentials=false",
		), c.logPath("kube-controller-manager"))
	if err != nil {
		return err
	}
	c.components = append(c.components, &component{Process: kcm.Process, port: kcm.Port, ready: healthEndpointReady(kcm.Port, "/healthz")})

	if err := c.startScheduler(ctx); err != nil {
		return err
	}
	if !c.runsBosunProcesses() {
		return nil
	}
	return c.startBosunControllerManager(ctx, opts)
}

// startBosunControllerManager runs bosun-controller-manager as its own user, serving its
// webhooks, and returns once /healthz and /readyz answer.
func (c *Cluster) startBosunControllerManager(ctx context.Context, opts Options) error {
	cp := c.controlPlane
	kubeconfig, err := cp.UserKubeconfig(controllerManagerUser)
	if err != nil {
		return err
	}
	bosun, err := framework.StartControllerManager(ctx, "bosun-controller-manager", opts.ManagerBinary,
		framework.BosunControllerManagerArgs(cp, framework.ControllerManagerOptions{
			Controllers: opts.Controllers, Kubeconfig: kubeconfig, FeatureGates: opts.ManagerFeatureGates,
			// On --webhook-port's default, as on a control-plane node: the API server calls
			// https://127.0.0.1:9876.
			Webhooks:  true,
			ExtraArgs: opts.ManagerArgs,
		}),
		c.logPath("bosun-controller-manager"))
	if err != nil {
		return err
	}
	c.components = append(c.components, &component{Process: bosun.Process, port: bosun.Port, ready: healthEndpointReady(bosun.Port, "/readyz")})
	return nil
}

// watch records the first component that exits while the cluster runs: tests waiting on the
// cluster then fail at once with its log instead of running into their timeouts.
func (c *Cluster) watch() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, comp := range c.components {
		go c.watchComponent(comp, comp.Process)
	}
}

// watchComponent fails the cluster when p, the process of comp, exits, unless
// RestartComponent ended it; the watch of the process started in its place is another.
func (c *Cluster) watchComponent(comp *component, p *framework.Process) {
	select {
	case <-p.Done():
		if c.exitExpected(p) {
			return
		}
		// The process has been reaped, so Wait returns at once, with how it ended.
		ended := p.Wait(context.Background())
		if ended == nil {
			ended = errors.New("exit status 0")
		}
		c.fail(fmt.Errorf("%s exited (%v) while the cluster was running; the end of %s:\n%s",
			p.Name(), ended, p.LogPath(), p.LogTail(40)))
	case <-c.stopping:
	}
}

// StartBosun starts bosun-controller-manager (serving its webhooks, on --webhook-port's
// default) and bosun-daemon on a cluster started WithoutBosun, as Start starts them, and
// returns once both are ready. bosun's CRDs must be installed first, the way a user
// installs them; from then on the cluster watches both like its other components.
func (c *Cluster) StartBosun(ctx context.Context) error {
	switch {
	case c.attached != nil:
		return errors.New("starting bosun: the cluster belongs to another process")
	case !c.opts.WithoutBosun:
		return errors.New("starting bosun: the cluster runs it already")
	case c.Component("bosun-controller-manager") != nil:
		return errors.New("starting bosun: started already")
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultStartTimeout)
	defer cancel()
	started := len(c.components)
	err := c.startBosunControllerManager(ctx, c.opts)
	if err == nil {
		err = c.startDaemon(ctx, c.opts.DaemonBinary)
	}
	for _, comp := range c.components[started:] {
		go c.watchComponent(comp, comp.Process)
	}
	if err != nil {
		return fmt.Errorf("starting bosun: %w", err)
	}
	return c.writeState()
}

// ControlPlane is the cluster's etcd and kube-apiserver (nil for an attached cluster).
func (c *Cluster) ControlPlane() *framework.ControlPlane { return c.controlPlane }

func (c *Cluster) fail(err error) {
	c.failedOnce.Do(func() {
		c.failure = err
		close(c.failed)
	})
}

// Err is nil while every component runs, and afterwards says which one exited and how its
// log ends.
func (c *Cluster) Err() error {
	if c.attached != nil {
		return c.attachedErr()
	}
	select {
	case <-c.failed:
		return c.failure
	default:
		return nil
	}
}

// Failed is closed once a component has exited while the cluster runs; Err says which.
func (c *Cluster) Failed() <-chan struct{} { return c.failed }

// Stop stops every component and removes what the run left outside its directory. The
// directory itself, with the logs, stays until the next Start.
func (c *Cluster) Stop() error {
	if c.attached != nil {
		return nil // the cluster belongs to the process that started it
	}
	var errs []error
	c.stopOnce.Do(func() {
		close(c.stopping)
		// No restart runs any more: the processes stay what they are now.
		c.mu.Lock()
		defer c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		// The node agent, the kubelet and the controllers first, so that nothing starts
		// or recreates pods; then containerd removes the pods' sandboxes (network
		// namespaces and veths with them) before it stops; the API server and the
		// registries go last.
		for i := len(c.components) - 1; i >= 0; i-- {
			if c.containerd == nil || c.components[i].Process != c.containerd.Process {
				c.components[i].Stop(framework.DefaultStopGracePeriod)
			}
		}
		if err := c.stopStorage(ctx); err != nil {
			errs = append(errs, err)
		}
		if c.containerd != nil {
			if err := c.containerd.removeAllSandboxes(ctx); err != nil {
				errs = append(errs, err)
			}
			c.containerd.Stop(framework.DefaultStopGracePeriod)
		}
		if err := cleanUp(ctx, c.dir); err != nil {
			errs = append(errs, err)
		}
		if c.controlPlane != nil {
			if err := c.controlPlane.Stop(); err != nil {
				errs = append(errs, err)
			}
		}
		for _, proxy := range c.slowRegistries {
			proxy.stop()
		}
		for _, r := range c.registries {
			r.Stop(framework.DefaultStopGracePeriod)
		}
	})
	return errors.Join(errs...)
}

// Dir is the directory everything lives in.
func (c *Cluster) Dir() string { return c.dir }

// LogDir holds one log file per component.
func (c *Cluster) LogDir() string { return filepath.Join(c.dir, "logs") }

func (c *Cluster) logPath(name string) string { return filepath.Join(c.LogDir(), name+".log") }

// KubeconfigPath is the admin kubeconfig.
func (c *Cluster) KubeconfigPath() string {
	if c.attached != nil {
		return c.attached.Kubeconfig
	}
	return c.controlPlane.KubeconfigPath()
}

// Config is the admin's client configuration.
func (c *Cluster) Config() *rest.Config {
	if c.attached != nil {
		return rest.CopyConfig(c.attachedConfig)
	}
	return c.controlPlane.Config()
}

// Clientset returns an admin clientset.
func (c *Cluster) Clientset() (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(c.Config())
}

// NodeName is the name of the cluster's one node.
func (c *Cluster) NodeName() string { return c.nodeName }

// RuntimeEndpoint is the node's CRI endpoint (containerd's socket).
func (c *Cluster) RuntimeEndpoint() string {
	if c.attached != nil {
		return c.attached.RuntimeEndpoint
	}
	return "unix://" + c.containerd.socket
}

// Component returns the running process of the named component (kubelet, containerd,
// bosun-daemon, bosun-controller-manager, kube-controller-manager, kube-scheduler), or nil.
func (c *Cluster) Component(name string) *framework.Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	if name == "containerd" && c.containerd != nil {
		return c.containerd.Process
	}
	for _, comp := range c.components {
		if comp.Name() == name {
			return comp.Process
		}
	}
	return nil
}

// HealthPort is the secure port the named component serves /healthz and /readyz on (the
// kubelet's is its healthz port, plain HTTP), or 0.
func (c *Cluster) HealthPort(name string) int {
	if c.attached != nil {
		for _, comp := range c.attached.Components {
			if comp.Name == name {
				return comp.Port
			}
		}
		return 0
	}
	for _, comp := range c.components {
		if comp.Name() == name {
			return comp.port
		}
	}
	return 0
}

// Describe tells a person what runs where: the text `make local-up` prints.
func (c *Cluster) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %-26s %s\n", "kube-apiserver", c.controlPlane.Host())
	for _, comp := range c.components {
		if comp.Name() == "containerd" {
			continue // below, with its socket
		}
		where := "-"
		switch {
		case comp.Name() == "kubelet":
			where = fmt.Sprintf("node %s, healthz http://127.0.0.1:%d/healthz", c.nodeName, comp.port)
		case comp.port != 0:
			where = fmt.Sprintf("https://127.0.0.1:%d/healthz", comp.port)
		}
		fmt.Fprintf(&b, "  %-26s %s\n", comp.Name(), where)
	}
	if c.provisioner != nil {
		fmt.Fprintf(&b, "  %-26s StorageClass %s (default), volumes in %s\n", provisionerLogName, DefaultStorageClass, c.VolumeDir())
	}
	fmt.Fprintf(&b, "  %-26s %s\n", "containerd", c.RuntimeEndpoint())
	for _, r := range c.registries {
		fmt.Fprintf(&b, "  %-26s %s\n", r.Name(), r.describe())
	}
	for _, proxy := range c.slowRegistries {
		fmt.Fprintf(&b, "  %-26s http://%s (http://%s at %d KiB/s)\n", "slow-registry", proxy.host, proxy.target, SlowRegistryBytesPerSecond>>10)
	}
	return b.String()
}

// repoRoot is the checkout's root; Start has already checked that it is found.
func repoRoot() string {
	root, _ := framework.RepoRoot()
	return root
}
