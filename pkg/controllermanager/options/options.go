// Package options defines bosun-controller-manager's command-line flags, their defaults and
// their validation. Flags are grouped into component-base named flag sets so that --help
// prints them by topic, in the same groups as upstream kube-controller-manager where the two
// overlap. Validation reports every problem at once and never contacts the API server.
package options

import (
	"errors"
	"fmt"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	cliflag "k8s.io/component-base/cli/flag"
	componentbaseconfig "k8s.io/component-base/config"
	componentbaseoptions "k8s.io/component-base/config/options"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/version/verflag"

	"github.com/bosun-dev/bosun/pkg/clientconfig"
	"github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/storageversionmigrator"
	"github.com/bosun-dev/bosun/pkg/controllermanager/config"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/serving"
)

// Defaults that differ from upstream kube-controller-manager, so both can run side by side.
const (
	// DefaultSecurePort leaves upstream's 10257 free.
	DefaultSecurePort = 10267
	// DefaultLeaseName is never upstream's kube-controller-manager Lease.
	DefaultLeaseName = "bosun-controller-manager"
	// ServingCertPairName names the generated self-signed certificate.
	ServingCertPairName = "bosun-controller-manager"
)

// Flag group names, in --help order.
const (
	groupGeneric        = "generic"
	groupControllers    = "controllers"
	groupClient         = "client"
	groupLeaderElection = "leader election"
	groupFeatureGates   = "feature gates"
	groupLogs           = "logs"
	groupMisc           = "misc"
)

// Options are all flags of bosun-controller-manager.
type Options struct {
	// Controllers is --controllers.
	Controllers []string

	ConcurrentReplicaSetSyncs int32
	ConcurrentDeploymentSyncs int32
	ConcurrentGCSyncs         int32
	EnableGarbageCollector    bool
	// ConcurrentAdvancedDaemonSetSyncs is --concurrent-advanced-daemonset-syncs.
	ConcurrentAdvancedDaemonSetSyncs int32
	// ConcurrentCloneSetSyncs is --concurrent-cloneset-syncs.
	ConcurrentCloneSetSyncs int32
	// CloneSetScalingExcludePreparingDelete is --cloneset-scaling-exclude-preparing-delete.
	CloneSetScalingExcludePreparingDelete bool
	// CloneSetScalingSurplusIgnoreMaxUnavailable is
	// --cloneset-scaling-surplus-ignore-max-unavailable.
	CloneSetScalingSurplusIgnoreMaxUnavailable bool
	// CloneSetProgressDeadlineRestartsOnProgress is
	// --cloneset-progress-deadline-restarts-on-progress.
	CloneSetProgressDeadlineRestartsOnProgress bool
	// ConcurrentPodUnavailableBudgetSyncs is --concurrent-pod-unavailable-budget-syncs.
	ConcurrentPodUnavailableBudgetSyncs int32
	// PodUnavailableBudgetResyncPeriod is --pod-unavailable-budget-resync-period.
	PodUnavailableBudgetResyncPeriod time.Duration
	// ConcurrentContainerRecreateRequestSyncs is --concurrent-container-recreate-request-syncs.
	ConcurrentContainerRecreateRequestSyncs int32
	// ConcurrentNodeImageSyncs is --concurrent-nodeimage-syncs.
	ConcurrentNodeImageSyncs int32
	// NodeImageCreationDelay is --nodeimage-creation-delay.
	NodeImageCreationDelay time.Duration
	// NodeImageResponseTimeout is --nodeimage-response-timeout.
	NodeImageResponseTimeout time.Duration
	// ConcurrentImagePullJobSyncs is --concurrent-imagepulljob-syncs.
	ConcurrentImagePullJobSyncs int32
	// ImagePullSecretsNamespace is --image-pull-secrets-namespace.
	ImagePullSecretsNamespace string
	// ConcurrentImageListPullJobSyncs is --concurrent-imagelistpulljob-syncs.
	ConcurrentImageListPullJobSyncs int32
	// StorageVersionMigrationDelay is --storage-version-migration-delay.
	StorageVersionMigrationDelay time.Duration

	MinResyncPeriod              time.Duration
	ControllerStartInterval      time.Duration
	ControllerShutdownTimeout    time.Duration
	UseServiceAccountCredentials bool

	Client *clientconfig.Options
	// ClientLimitsGiven records that the command line gave --kube-api-qps or
	// --kube-api-burst; the OpenKruise-compatible controllers then follow them (see
	// KruiseClientLimits).
	ClientLimitsGiven bool
	// KruiseControllersQPS and KruiseControllersBurst are --kruise-controllers-kube-api-qps
	// and --kruise-controllers-kube-api-burst; 0 means not given.
	KruiseControllersQPS   float32
	KruiseControllersBurst int32

	LeaderElection componentbaseconfig.LeaderElectionConfiguration
	Serving        *serving.Options
	Webhook        *WebhookOptions
	Profiling      serving.ProfilingOptions
	Logs           *logsapi.LoggingConfiguration
	// FeatureGate receives --feature-gates.
	FeatureGate featuregate.MutableVersionedFeatureGate
}

// NewOptions returns the defaults. gate is the feature gate --feature-gates writes to.
func NewOptions(gate featuregate.MutableVersionedFeatureGate) *Options {
	return &Options{
		Controllers:               []string{"*"},
		ConcurrentReplicaSetSyncs: 5,
		ConcurrentDeploymentSyncs: 5,
		ConcurrentGCSyncs:         20,
		EnableGarbageCollector:    true,
		// OpenKruise's default: three DaemonSets sync at once.
		ConcurrentAdvancedDaemonSetSyncs: 3,
		// OpenKruise's default (--cloneset-workers): three CloneSets sync at once.
		ConcurrentCloneSetSyncs: 3,
		// OpenKruise's default: three budgets sync at once.
		ConcurrentPodUnavailableBudgetSyncs: 3,
		PodUnavailableBudgetResyncPeriod:    time.Minute,
		// OpenKruise's defaults for the node agent's manager-side controllers.
		ConcurrentContainerRecreateRequestSyncs: 3,
		ConcurrentNodeImageSyncs:                3,
		NodeImageCreationDelay:                  30 * time.Second,
		NodeImageResponseTimeout:                10 * time.Minute,
		ConcurrentImagePullJobSyncs:             3,
		ImagePullSecretsNamespace:               appsv1beta1.DefaultImagePullSecretNamespace,
		ConcurrentImageListPullJobSyncs:         3,
		StorageVersionMigrationDelay:            storageversionmigrator.DefaultSettleDelay,
		MinResyncPeriod:                         informers.DefaultMinResyncPeriod,
		ControllerStartInterval:                 0,
		ControllerShutdownTimeout:               10 * time.Second,
		Client:                                  clientconfig.NewOptions(),
		LeaderElection: componentbaseconfig.LeaderElectionConfiguration{
			LeaderElect:       true,
			LeaseDuration:     metav1.Duration{Duration: 15 * time.Second},
			RenewDeadline:     metav1.Duration{Duration: 10 * time.Second},
			RetryPeriod:       metav1.Duration{Duration: 2 * time.Second},
			ResourceLock:      resourcelock.LeasesResourceLock,
			ResourceName:      DefaultLeaseName,
			ResourceNamespace: "kube-system",
		},
		Serving:     serving.NewOptions(DefaultSecurePort, ServingCertPairName),
		Webhook:     NewWebhookOptions(),
		Profiling:   serving.ProfilingOptions{EnableProfiling: true},
		Logs:        logsapi.NewLoggingConfiguration(),
		FeatureGate: gate,
	}
}

// Flags returns the flags grouped for --help. reg supplies the controller list for the
// --controllers description.
func (o *Options) Flags(reg *registry.Registry) cliflag.NamedFlagSets {
	var fss cliflag.NamedFlagSets

	generic := fss.FlagSet(groupGeneric)
	generic.DurationVar(&o.MinResyncPeriod, "min-resync-period", o.MinResyncPeriod,
		"The resync period of shared informers is a random duration between min-resync-period and twice that.")
	generic.DurationVar(&o.ControllerStartInterval, "controller-start-interval", o.ControllerStartInterval,
		"Each controller waits a random duration between this interval and twice that before it starts.")
	generic.DurationVar(&o.ControllerShutdownTimeout, "controller-shutdown-timeout", o.ControllerShutdownTimeout,
		"How long to wait for controllers to stop on SIGTERM or SIGINT before exiting with status 1.")
	generic.BoolVar(&o.UseServiceAccountCredentials, "use-service-account-credentials", o.UseServiceAccountCredentials,
		"If true, each controller authenticates as the ServiceAccount kube-system/<client name> (created if missing) with tokens from the TokenRequest API.")
	o.Profiling.AddFlags(generic)

	controllers := fss.FlagSet(groupControllers)
	controllers.StringSliceVar(&o.Controllers, "controllers", o.Controllers, reg.HelpText())
	controllers.Int32Var(&o.ConcurrentReplicaSetSyncs, "concurrent-replicaset-syncs", o.ConcurrentReplicaSetSyncs,
		"The number of ReplicaSets that may sync concurrently.")
	controllers.Int32Var(&o.ConcurrentDeploymentSyncs, "concurrent-deployment-syncs", o.ConcurrentDeploymentSyncs,
		"The number of Deployments that may sync concurrently.")
	controllers.Int32Var(&o.ConcurrentGCSyncs, "concurrent-gc-syncs", o.ConcurrentGCSyncs,
		"The number of garbage collector workers that may sync concurrently.")
	controllers.Int32Var(&o.ConcurrentAdvancedDaemonSetSyncs, "concurrent-advanced-daemonset-syncs", o.ConcurrentAdvancedDaemonSetSyncs,
		"The number of Advanced DaemonSets (apps.kruise.io) that may sync concurrently.")
	controllers.Int32Var(&o.ConcurrentCloneSetSyncs, "concurrent-cloneset-syncs", o.ConcurrentCloneSetSyncs,
		"The number of CloneSets (apps.kruise.io) that may sync concurrently.")
	controllers.BoolVar(&o.CloneSetScalingExcludePreparingDelete, "cloneset-scaling-exclude-preparing-delete", o.CloneSetScalingExcludePreparingDelete,
		"If true, every CloneSet leaves pods a preDelete hook holds in PreparingDelete out of its count of pods, as if each set "+
			"scaleStrategy.excludePreparingDelete: their replacements are created while they wait.")
	controllers.BoolVar(&o.CloneSetScalingSurplusIgnoreMaxUnavailable, "cloneset-scaling-surplus-ignore-max-unavailable", o.CloneSetScalingSurplusIgnoreMaxUnavailable,
		"If true, a CloneSet scaling in deletes the pods above its replicas (and the surge in use) at once, ready or not, as a "+
			"Deployment does; by default, as in OpenKruise, it deletes only as many ready pods as maxUnavailable leaves room for, "+
			"so pods that are ready but not yet available (minReadySeconds) hold the scale-in back.")
	controllers.BoolVar(&o.CloneSetProgressDeadlineRestartsOnProgress, "cloneset-progress-deadline-restarts-on-progress", o.CloneSetProgressDeadlineRestartsOnProgress,
		"If true, a CloneSet's progressDeadlineSeconds counts from its rollout's last progress (a new revision, another pod updated "+
			"or another updated pod available), as a Deployment's does, and progress lifts ProgressDeadlineExceeded; by default, as in "+
			"OpenKruise, it counts from the start of the rollout, so a slow but steady rollout of many pods times out.")
	controllers.Int32Var(&o.ConcurrentPodUnavailableBudgetSyncs, "concurrent-pod-unavailable-budget-syncs", o.ConcurrentPodUnavailableBudgetSyncs,
		"The number of PodUnavailableBudgets (policy.kruise.io) that may sync concurrently.")
	controllers.DurationVar(&o.PodUnavailableBudgetResyncPeriod, "pod-unavailable-budget-resync-period", o.PodUnavailableBudgetResyncPeriod,
		"How often every PodUnavailableBudget's status is recomputed even without a pod or workload event, so that a budget "+
			"never stays stale (0 disables).")
	controllers.Int32Var(&o.ConcurrentContainerRecreateRequestSyncs, "concurrent-container-recreate-request-syncs", o.ConcurrentContainerRecreateRequestSyncs,
		"The number of ContainerRecreateRequests (apps.kruise.io) that may sync concurrently on the manager side.")
	controllers.Int32Var(&o.ConcurrentNodeImageSyncs, "concurrent-nodeimage-syncs", o.ConcurrentNodeImageSyncs,
		"The number of NodeImages (apps.kruise.io) that may sync concurrently on the manager side.")
	controllers.DurationVar(&o.NodeImageCreationDelay, "nodeimage-creation-delay", o.NodeImageCreationDelay,
		"How long a node must have been Ready before its NodeImage is created.")
	controllers.DurationVar(&o.NodeImageResponseTimeout, "nodeimage-response-timeout", o.NodeImageResponseTimeout,
		"How long after a NodeImage tag was requested the manager marks it Failed when the node agent has not reported on it.")
	controllers.Int32Var(&o.ConcurrentImagePullJobSyncs, "concurrent-imagepulljob-syncs", o.ConcurrentImagePullJobSyncs,
		"The number of ImagePullJobs (apps.kruise.io) that may sync concurrently.")
	controllers.StringVar(&o.ImagePullSecretsNamespace, "image-pull-secrets-namespace", o.ImagePullSecretsNamespace,
		"The namespace ImagePullJobs copy their pull secrets to; node agents read pull secrets from this namespace only, "+
			"so it must match bosun-daemon's flag of the same name.")
	controllers.Int32Var(&o.ConcurrentImageListPullJobSyncs, "concurrent-imagelistpulljob-syncs", o.ConcurrentImageListPullJobSyncs,
		"The number of ImageListPullJobs (apps.kruise.io) that may sync concurrently.")
	controllers.DurationVar(&o.StorageVersionMigrationDelay, "storage-version-migration-delay", o.StorageVersionMigrationDelay,
		"How long after the leader first saw v1beta1 as the storage version of one of bosun's CRDs the storage version "+
			"migrator waits before it rewrites that CRD's objects, so that every API server of the control plane stores "+
			"v1beta1 by then (0 starts at once, for single API server clusters and tests).")
	controllers.BoolVar(&o.EnableGarbageCollector, "enable-garbage-collector", o.EnableGarbageCollector,
		"Enables the generic garbage collector. Must match the corresponding flag of the kube-apiserver.")

	client := fss.FlagSet(groupClient)
	o.Client.AddFlags(client)
	o.addClientLimitFlags(client, reg)
	o.Client.AddContentTypeFlag(client)

	componentbaseoptions.BindLeaderElectionFlags(&o.LeaderElection, fss.FlagSet(groupLeaderElection))

	o.Serving.AddFlags(&fss)
	o.Webhook.AddFlags(fss.FlagSet(groupWebhook))

	o.FeatureGate.AddFlag(fss.FlagSet(groupFeatureGates))

	logsapi.AddFlags(o.Logs, fss.FlagSet(groupLogs))

	misc := fss.FlagSet(groupMisc)
	verflag.AddFlags(misc)
	misc.BoolP("help", "h", false, "Help for bosun-controller-manager.")
	return fss
}

// Validate returns all problems with the flags in one aggregate error, or nil.
func (o *Options) Validate(reg *registry.Registry) error {
	var errs []error
	if err := reg.Validate(o.Controllers); err != nil {
		errs = append(errs, flatten(err)...)
	}
	for _, workers := range []struct {
		flag  string
		value int32
	}{
		{"--concurrent-replicaset-syncs", o.ConcurrentReplicaSetSyncs},
		{"--concurrent-deployment-syncs", o.ConcurrentDeploymentSyncs},
		{"--concurrent-gc-syncs", o.ConcurrentGCSyncs},
		{"--concurrent-advanced-daemonset-syncs", o.ConcurrentAdvancedDaemonSetSyncs},
		{"--concurrent-cloneset-syncs", o.ConcurrentCloneSetSyncs},
		{"--concurrent-pod-unavailable-budget-syncs", o.ConcurrentPodUnavailableBudgetSyncs},
		{"--concurrent-container-recreate-request-syncs", o.ConcurrentContainerRecreateRequestSyncs},
		{"--concurrent-nodeimage-syncs", o.ConcurrentNodeImageSyncs},
		{"--concurrent-imagepulljob-syncs", o.ConcurrentImagePullJobSyncs},
		{"--concurrent-imagelistpulljob-syncs", o.ConcurrentImageListPullJobSyncs},
	} {
		if workers.value < 1 {
			errs = append(errs, fmt.Errorf("%s must be at least 1, got %d", workers.flag, workers.value))
		}
	}
	if o.PodUnavailableBudgetResyncPeriod < 0 {
		errs = append(errs, fmt.Errorf("--pod-unavailable-budget-resync-period must not be negative, got %v", o.PodUnavailableBudgetResyncPeriod))
	}
	if o.NodeImageCreationDelay < 0 {
		errs = append(errs, fmt.Errorf("--nodeimage-creation-delay must not be negative, got %v", o.NodeImageCreationDelay))
	}
	if o.StorageVersionMigrationDelay < 0 {
		errs = append(errs, fmt.Errorf("--storage-version-migration-delay must not be negative, got %v", o.StorageVersionMigrationDelay))
	}
	if o.NodeImageResponseTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--nodeimage-response-timeout must be greater than 0, got %v", o.NodeImageResponseTimeout))
	}
	for _, msg := range validation.ValidateNamespaceName(o.ImagePullSecretsNamespace, false) {
		errs = append(errs, fmt.Errorf("--image-pull-secrets-namespace %q is not a namespace name: %s", o.ImagePullSecretsNamespace, msg))
	}
	if o.MinResyncPeriod <= 0 {
		errs = append(errs, fmt.Errorf("--min-resync-period must be greater than 0, got %v", o.MinResyncPeriod))
	}
	if o.ControllerStartInterval < 0 {
		errs = append(errs, fmt.Errorf("--controller-start-interval must not be negative, got %v", o.ControllerStartInterval))
	}
	if o.ControllerShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--controller-shutdown-timeout must be greater than 0, got %v", o.ControllerShutdownTimeout))
	}
	errs = append(errs, o.Client.Validate()...)
	errs = append(errs, o.validateClientLimits()...)
	errs = append(errs, validateLeaderElection(&o.LeaderElection)...)
	errs = append(errs, o.Serving.Validate()...)
	errs = append(errs, o.Webhook.Validate()...)
	for _, err := range logsapi.Validate(o.Logs, o.FeatureGate, nil) {
		errs = append(errs, err)
	}
	return utilerrors.NewAggregate(errs)
}

// validateLeaderElection checks the timings client-go's elector would otherwise reject at run
// time, and the lock type.
func validateLeaderElection(le *componentbaseconfig.LeaderElectionConfiguration) []error {
	if !le.LeaderElect {
		return nil
	}
	var errs []error
	lease, renew, retry := le.LeaseDuration.Duration, le.RenewDeadline.Duration, le.RetryPeriod.Duration
	for _, timing := range []struct {
		flag  string
		value time.Duration
	}{
		{"--leader-elect-lease-duration", lease},
		{"--leader-elect-renew-deadline", renew},
		{"--leader-elect-retry-period", retry},
	} {
		if timing.value <= 0 {
			errs = append(errs, fmt.Errorf("%s must be greater than 0, got %v", timing.flag, timing.value))
		}
	}
	if lease <= renew {
		errs = append(errs, fmt.Errorf("--leader-elect-lease-duration (%v) must be greater than --leader-elect-renew-deadline (%v)", lease, renew))
	}
	if minRenew := time.Duration(leaderelection.JitterFactor * float64(retry)); renew <= minRenew {
		errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline (%v) must be greater than %v × --leader-elect-retry-period (%v × %v = %v)",
			renew, leaderelection.JitterFactor, leaderelection.JitterFactor, retry, minRenew))
	}
	if le.ResourceLock != resourcelock.LeasesResourceLock {
		errs = append(errs, fmt.Errorf("--leader-elect-resource-lock must be %q, got %q", resourcelock.LeasesResourceLock, le.ResourceLock))
	}
	if le.ResourceName == "" {
		errs = append(errs, errors.New("--leader-elect-resource-name must not be empty"))
	}
	if le.ResourceNamespace == "" {
		errs = append(errs, errors.New("--leader-elect-resource-namespace must not be empty"))
	}
	return errs
}

// ControllerConfiguration is the part of the options that controllers read.
func (o *Options) ControllerConfiguration() *config.Configuration {
	return &config.Configuration{
		MinResyncPeriod:   o.MinResyncPeriod,
		ReplicaSet:        config.ReplicaSetConfiguration{ConcurrentSyncs: o.ConcurrentReplicaSetSyncs},
		Deployment:        config.DeploymentConfiguration{ConcurrentSyncs: o.ConcurrentDeploymentSyncs},
		GarbageCollector:  config.GarbageCollectorConfiguration{Enabled: o.EnableGarbageCollector, ConcurrentSyncs: o.ConcurrentGCSyncs},
		AdvancedDaemonSet: config.AdvancedDaemonSetConfiguration{ConcurrentSyncs: o.ConcurrentAdvancedDaemonSetSyncs},
		CloneSet: config.CloneSetConfiguration{
			ConcurrentSyncs:                    o.ConcurrentCloneSetSyncs,
			ScalingExcludePreparingDelete:      o.CloneSetScalingExcludePreparingDelete,
			ScalingSurplusIgnoreMaxUnavailable: o.CloneSetScalingSurplusIgnoreMaxUnavailable,
			ProgressDeadlineRestartsOnProgress: o.CloneSetProgressDeadlineRestartsOnProgress,
		},
		PodUnavailableBudget: config.PodUnavailableBudgetConfiguration{
			ConcurrentSyncs: o.ConcurrentPodUnavailableBudgetSyncs,
			ResyncPeriod:    o.PodUnavailableBudgetResyncPeriod,
		},
		ContainerRecreateRequest: config.ContainerRecreateRequestConfiguration{ConcurrentSyncs: o.ConcurrentContainerRecreateRequestSyncs},
		NodeImage: config.NodeImageConfiguration{
			ConcurrentSyncs: o.ConcurrentNodeImageSyncs,
			CreationDelay:   o.NodeImageCreationDelay,
			ResponseTimeout: o.NodeImageResponseTimeout,
		},
		ImagePullJob: config.ImagePullJobConfiguration{
			ConcurrentSyncs:  o.ConcurrentImagePullJobSyncs,
			SecretsNamespace: o.ImagePullSecretsNamespace,
		},
		ImageListPullJob: config.ImageListPullJobConfiguration{ConcurrentSyncs: o.ConcurrentImageListPullJobSyncs},
		StorageVersionMigrator: config.StorageVersionMigratorConfiguration{
			SettleDelay: o.StorageVersionMigrationDelay,
		},
	}
}

// flatten returns the errors inside an aggregate, or err itself.
func flatten(err error) []error {
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		return agg.Errors()
	}
	return []error{err}
}
