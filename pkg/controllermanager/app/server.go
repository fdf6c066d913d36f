// Package app is bosun-controller-manager: the cobra command, the startup order (validate,
// logging, clients, serving, leader election, controllers), leader election with a Lease that
// is released only after the controllers stopped, and graceful shutdown.
package app

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/clientbuilder"
	"github.com/bosun-dev/bosun/pkg/cmdutil"
	"github.com/bosun-dev/bosun/pkg/controllermanager/options"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/serving"
)

// componentName is the binary's name, its root client's User-Agent suffix, the event source
// and the manager label of its metrics.
const componentName = "bosun-controller-manager"

// serviceAccountNamespace holds the controllers' ServiceAccounts with
// --use-service-account-credentials.
const serviceAccountNamespace = "kube-system"

// NewControllerManagerCommand returns the bosun-controller-manager command.
func NewControllerManagerCommand() *cobra.Command {
	return newCommand(NewControllerRegistry(), features.DefaultMutableFeatureGate)
}

func newCommand(reg *registry.Registry, gate featuregate.MutableVersionedFeatureGate) *cobra.Command {
	o := options.NewOptions(gate)
	return cmdutil.NewCommand(cmdutil.Command{
		Name: componentName,
		Long: `bosun-controller-manager runs bosun's workload controllers (ReplicaSet, Deployment, garbage collector and
the OpenKruise-compatible ones). Like kube-controller-manager it elects a leader through a Lease, serves
/healthz, /livez, /readyz and /metrics over HTTPS, and stops its controllers gracefully on SIGTERM.`,
		Flags:       o.Flags(reg),
		Logs:        o.Logs,
		FeatureGate: gate,
		Validate:    func() error { return o.Validate(reg) },
		Run:         func(ctx context.Context) error { return Run(ctx, o, reg) },
	})
}

// Run runs bosun-controller-manager until ctx is cancelled (the first SIGTERM or SIGINT) and
// its controllers stopped. It returns nil after a clean shutdown.
func Run(ctx context.Context, o *options.Options, reg *registry.Registry) error {
	logger := klog.FromContext(ctx)
	cmdutil.LogStartup(ctx, componentName)
	registerMetrics()

	// Step 2: clients.
	baseConfig, err := o.Client.RESTConfig()
	if err != nil {
		return err
	}
	rootClient, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(baseConfig), componentName))
	if err != nil {
		return fmt.Errorf("creating the root client: %w", err)
	}
	rootBuilder := clientbuilder.NewSimpleBuilder(baseConfig)
	builder := rootBuilder
	if o.UseServiceAccountCredentials {
		builder = clientbuilder.NewServiceAccountBuilder(baseConfig, rootClient.CoreV1(), serviceAccountNamespace)
	}

	// Step 3: events, then serving; health and metrics answer from here on.
	events := cmdutil.NewEventBroadcaster(ctx, rootClient)
	defer events.Shutdown()
	health := newHealthChecks(o.LeaderElection.LeaderElect, ctx.Done())
	servingConfig, err := o.Serving.Config(baseConfig)
	if err != nil {
		return err
	}
	mux := serving.NewBaseMux(componentName, health.HealthEndpoints, o.Profiling)
	// Serving outlives ctx: while controllers stop, /readyz must still answer (failing).
	stopServing, err := servingConfig.Serve(mux)
	if err != nil {
		return err
	}
	defer stopServing()

	enabled := reg.Enabled(o.Controllers)
	config := o.ControllerConfiguration()
	// One typed informer factory per process, shared by the admission webhooks and the
	// controllers: on the leader every pod (and node) is then cached once, not once for each.
	typedInformers, err := newProcessInformers(rootBuilder, config.MinResyncPeriod)
	if err != nil {
		return err
	}
	// Step 4: what runs on every replica, leader or not: the admission webhooks.
	webhookFailed := func(err error) {
		logger.Error(err, "Admission webhooks stopped working")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	if err := serveWebhooks(ctx, o, rootClient, rootBuilder, typedInformers, reg, enabled, events.RecorderFor, health.Readyz, webhookFailed); err != nil {
		return err
	}
	health.readinessChecksWired()

	m := &controllerManager{
		registry:           reg,
		enabled:            enabled,
		rootBuilder:        rootBuilder,
		clientBuilder:      builder,
		rootClient:         rootClient,
		typedInformers:     typedInformers,
		kruiseClientLimits: o.KruiseClientLimits(),
		config:             config,
		featureGate:        o.FeatureGate,
		eventRecorder:      events.RecorderFor,
		health:             health,
		debugMux:           mux,
		startInterval:      o.ControllerStartInterval,
	}
	logger.Info("Enabled controllers", "controllers", m.enabled)
	// Each client has a bucket of its own; these are the two sizes in use.
	logger.Info("Client-side rate limits", "kubeAPIQPS", baseConfig.QPS, "kubeAPIBurst", baseConfig.Burst,
		"kruiseControllersQPS", m.kruiseClientLimits.QPS, "kruiseControllersBurst", m.kruiseClientLimits.Burst)

	if o.LeaderElection.LeaderElect {
		return runWithLeaderElection(ctx, o, baseConfig, m, events.RecorderFor(componentName))
	}
	go m.leadOrExit(ctx)
	<-ctx.Done()
	logger.Info("Termination requested, stopping controllers")
	return m.stopControllers(ctx, o.ControllerShutdownTimeout)
}

// leadOrExit runs a leadership term and exits the process if it cannot start: a manager whose
// controllers failed to build must not keep running as if it led.
func (m *controllerManager) leadOrExit(ctx context.Context) {
	if err := m.lead(ctx); err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).Error(err, "Error starting controllers")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
}
