// Package app is bosun-daemon, the node agent: one process per node, no leader election. It
// validates its flags, serves health and metrics, connects to the container runtime (retrying
// while reporting not-ready), starts informers scoped to its node and runs the agent
// controllers: the runtime reporter at once, the others once the informers synced and the
// runtime answered.
package app

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"

	// Registers client-go's workqueue and REST client metrics for /metrics.
	_ "k8s.io/component-base/metrics/prometheus/restclient"
	_ "k8s.io/component-base/metrics/prometheus/workqueue"

	"github.com/bosun-dev/bosun/pkg/clientbuilder"
	"github.com/bosun-dev/bosun/pkg/cmdutil"
	toolkitinformers "github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/daemon/controller"
	"github.com/bosun-dev/bosun/pkg/daemon/cri"
	"github.com/bosun-dev/bosun/pkg/daemon/options"
	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/serving"
)

const (
	componentName = "bosun-daemon"
	// informersClientName is the User-Agent suffix of the scoped informers' clients.
	informersClientName = "node-informers"
	// shutdownTimeout bounds the graceful shutdown, as the manager's default
	// --controller-shutdown-timeout does.
	shutdownTimeout = 10 * time.Second
)

var errShutdownTimeout = errors.New("shutdown timeout reached")

// NewDaemonCommand returns the bosun-daemon command.
func NewDaemonCommand() *cobra.Command {
	return newCommand(features.DefaultMutableFeatureGate)
}

func newCommand(gate featuregate.MutableVersionedFeatureGate) *cobra.Command {
	o := options.NewOptions(gate)
	return cmdutil.NewCommand(cmdutil.Command{
		Name: componentName,
		Long: `bosun-daemon is bosun's node agent. It runs on every node, talks to the container runtime over CRI,
and serves ContainerRecreateRequests and NodeImages of its own node only.`,
		Flags:       o.Flags(),
		Logs:        o.Logs,
		FeatureGate: gate,
		Validate:    o.Validate,
		Run:         func(ctx context.Context) error { return Run(ctx, o) },
	})
}

// healthChecks are the daemon's endpoints: /healthz and /livez answer ping; /readyz needs
// synced informers, a container runtime that answered recently, and no termination. The
// runtime check names the runtime in /readyz?verbose.
type healthChecks struct {
	serving.HealthEndpoints
	informerSync *serving.InformerSync
}

func newHealthChecks(runtime healthz.HealthChecker, terminating <-chan struct{}) *healthChecks {
	h := &healthChecks{informerSync: &serving.InformerSync{}}
	h.Healthz = serving.NewCheckSet("/healthz", healthz.PingHealthz)
	h.Livez = serving.NewCheckSet("/livez", healthz.PingHealthz)
	h.Readyz = serving.NewCheckSet("/readyz", h.informerSync, runtime, healthz.NewShutdownHealthz(terminating))
	return h
}

// newControllerContext returns the context of the agent controller called name: clients
// of its own, an event recorder for eventSource, the shared scoped factories and runtime.
func newControllerContext(builder clientbuilder.Builder, scoped *scopedInformers, runtime *cri.Monitor,
	events *cmdutil.EventBroadcaster, o *options.Options, name, eventSource string) (controller.Context, error) {
	kubeClient, err := builder.Client(name)
	if err != nil {
		return controller.Context{}, err
	}
	bosunClient, err := clientbuilder.BosunClient(builder, name)
	if err != nil {
		return controller.Context{}, err
	}
	return controller.Context{
		NodeName:                  o.NodeName,
		KubeClient:                kubeClient,
		BosunClient:               bosunClient,
		Node:                      scoped.node,
		Pods:                      scoped.pods,
		NodeImage:                 scoped.nodeImage,
		ContainerRecreateRequests: scoped.crr,
		Runtime:                   runtime,
		RuntimeState:              runtime,
		Recorder:                  events.RecorderFor(eventSource),
		SecretsNamespace:          o.ImagePullSecretsNamespace,
		MaxParallelImagePulls:     o.MaxParallelImagePulls,
		FeatureGate:               o.FeatureGate,
	}, nil
}

// Run runs the node agent until ctx is cancelled and everything stopped.
func Run(ctx context.Context, o *options.Options) error {
	logger := klog.FromContext(ctx).WithValues("node", o.NodeName)
	ctx = klog.NewContext(ctx, logger)
	cmdutil.LogStartup(ctx, componentName)

	baseConfig, err := o.Client.RESTConfig()
	if err != nil {
		return err
	}
	builder := clientbuilder.NewSimpleBuilder(baseConfig)
	runtime, err := cri.NewMonitor(o.RuntimeEndpoint, o.RuntimeSocketDirs)
	if err != nil {
		return err
	}

	health := newHealthChecks(runtime, ctx.Done())
	servingConfig, err := o.Serving.Config(baseConfig)
	if err != nil {
		return err
	}
	mux := serving.NewBaseMux(componentName, health.HealthEndpoints, o.Profiling)
	// Serving outlives ctx: while informers stop, /readyz must still answer (failing).
	stopServing, err := servingConfig.Serve(mux)
	if err != nil {
		return err
	}
	defer stopServing()

	// The runtime is retried in the background; until it answers, /readyz fails.
	runtimeDone := make(chan struct{})
	go func() {
		defer close(runtimeDone)
		runtime.Run(ctx)
	}()

	kubeClient, err := builder.Client(informersClientName)
	if err != nil {
		return err
	}
	bosunClient, err := clientbuilder.BosunClient(builder, informersClientName)
	if err != nil {
		return err
	}
	scoped := newScopedInformers(kubeClient, bosunClient, o.NodeName, toolkitinformers.DefaultMinResyncPeriod)
	scoped.requestCoreInformers()
	events := cmdutil.NewEventBroadcaster(ctx, kubeClient)
	defer events.Shutdown()
	// Controllers ask the scoped factories for their informers while they are built, so
	// they are built before the factories start.
	controllers, err := buildControllers(ctx, agentControllers(), func(name, eventSource string) (controller.Context, error) {
		return newControllerContext(builder, scoped, runtime, events, o, name, eventSource)
	})
	if err != nil {
		return err
	}
	scoped.watchSync(health.informerSync)
	scoped.start(ctx)

	atOnce, afterRuntime := byStart(controllers)
	// These report the wait below (the runtime's state on the Node), so they do not wait.
	atOnceDone := make(chan struct{})
	go func() {
		defer close(atOnceDone)
		runControllers(ctx, atOnce)
	}()

	controllersDone := make(chan struct{})
	go func() {
		defer close(controllersDone)
		if err := scoped.waitForSync(ctx); err != nil {
			return
		}
		logger.Info("Scoped informers synced")
		rt, err := runtime.WaitForRuntime(ctx)
		if err != nil {
			return
		}
		logger.Info("Node agent ready", "runtime", rt.Name, "runtimeVersion", rt.Version, "endpoint", rt.Endpoint, "controllers", names(afterRuntime))
		runControllers(ctx, afterRuntime)
	}()

	<-ctx.Done()
	logger.Info("Termination requested, stopping")
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-controllersDone
		<-atOnceDone
		scoped.shutdown()
		<-runtimeDone
	}()
	select {
	case <-stopped:
		logger.Info("Stopped")
		return nil
	case <-time.After(shutdownTimeout):
		logger.Error(nil, "shutdown timeout reached")
		return errShutdownTimeout
	}
}
