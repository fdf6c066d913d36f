// Package config holds the settled, flag-independent configuration that
// bosun-controller-manager hands to its controllers. The options package fills it from the
// command line; controllers only read it.
package config

import "time"

// Configuration is what controllers may read about how the manager was started.
type Configuration struct {
	// MinResyncPeriod is --min-resync-period; shared informers resync in [p, 2p).
	MinResyncPeriod time.Duration

	ReplicaSet               ReplicaSetConfiguration
	Deployment               DeploymentConfiguration
	GarbageCollector         GarbageCollectorConfiguration
	AdvancedDaemonSet        AdvancedDaemonSetConfiguration
	CloneSet                 CloneSetConfiguration
	PodUnavailableBudget     PodUnavailableBudgetConfiguration
	ContainerRecreateRequest ContainerRecreateRequestConfiguration
	NodeImage                NodeImageConfiguration
	ImagePullJob             ImagePullJobConfiguration
	ImageListPullJob         ImageListPullJobConfiguration
	StorageVersionMigrator   StorageVersionMigratorConfiguration
}

// ReplicaSetConfiguration configures the ReplicaSet controller.
type ReplicaSetConfiguration struct {
	// ConcurrentSyncs is the number of workers (--concurrent-replicaset-syncs).
	ConcurrentSyncs int32
}

// DeploymentConfiguration configures the Deployment controller.
type DeploymentConfiguration struct {
	// ConcurrentSyncs is the number of workers (--concurrent-deployment-syncs).
	ConcurrentSyncs int32
}

// GarbageCollectorConfiguration configures the garbage collector.
type GarbageCollectorConfiguration struct {
	// Enabled is --enable-garbage-collector; it must match the API server's own setting.
	Enabled bool
	// ConcurrentSyncs is the number of workers (--concurrent-gc-syncs).
	ConcurrentSyncs int32
}

// AdvancedDaemonSetConfiguration configures the Advanced DaemonSet controller.
type AdvancedDaemonSetConfiguration struct {
	// ConcurrentSyncs is the number of workers (--concurrent-advanced-daemonset-syncs).
	ConcurrentSyncs int32
}

// CloneSetConfiguration configures the CloneSet controller.
type CloneSetConfiguration struct {
	// ConcurrentSyncs is the number of workers (--concurrent-cloneset-syncs).
	ConcurrentSyncs int32
	// ScalingExcludePreparingDelete leaves pods held in PreparingDelete out of every
	// CloneSet's count of pods (--cloneset-scaling-exclude-preparing-delete).
	ScalingExcludePreparingDelete bool
	// ScalingSurplusIgnoreMaxUnavailable lets a scale-in delete the pods above replicas
	// whether or not they are ready (--cloneset-scaling-surplus-ignore-max-unavailable).
	ScalingSurplusIgnoreMaxUnavailable bool
	// ProgressDeadlineRestartsOnProgress makes progressDeadlineSeconds count from a
	// rollout's last progress (--cloneset-progress-deadline-restarts-on-progress).
	ProgressDeadlineRestartsOnProgress bool
}

// PodUnavailableBudgetConfiguration configures the PodUnavailableBudget controller.
type PodUnavailableBudgetConfiguration struct {
	// ConcurrentSyncs is the number of workers (--concurrent-pod-unavailable-budget-syncs).
	ConcurrentSyncs int32
	// ResyncPeriod is how often every budget is synced without an event
	// (--pod-unavailable-budget-resync-period); 0 never.
	ResyncPeriod time.Duration
}

// ContainerRecreateRequestConfiguration configures the manager side of
// ContainerRecreateRequests.
type ContainerRecreateRequestConfiguration struct {
	// ConcurrentSyncs is the number of workers (--concurrent-container-recreate-request-syncs).
	ConcurrentSyncs int32
}

// NodeImageConfiguration configures the manager side of NodeImages.
type NodeImageConfiguration struct {
	// ConcurrentSyncs is the number of workers (--concurrent-nodeimage-syncs).
	ConcurrentSyncs int32
	// CreationDelay is how long a node must have been Ready before its NodeImage is created
	// (--nodeimage-creation-delay).
	CreationDelay time.Duration
	// ResponseTimeout is how long after a tag was requested the manager fails it when the
	// node agent has not reported on it (--nodeimage-response-timeout).
	ResponseTimeout time.Duration
}

// ImagePullJobConfiguration configures the ImagePullJob controller.
type ImagePullJobConfiguration struct {
	// ConcurrentSyncs is the number of workers (--concurrent-imagepulljob-syncs).
	ConcurrentSyncs int32
	// SecretsNamespace is where the copies of jobs' pull secrets live, the only namespace
	// node agents read secrets from (--image-pull-secrets-namespace).
	SecretsNamespace string
}

// ImageListPullJobConfiguration configures the ImageListPullJob controller.
type ImageListPullJobConfiguration struct {
	// ConcurrentSyncs is the number of workers (--concurrent-imagelistpulljob-syncs).
	ConcurrentSyncs int32
}

// StorageVersionMigratorConfiguration configures the storage version migrator.
type StorageVersionMigratorConfiguration struct {
	// SettleDelay is how long after the leader first saw v1beta1 as a CRD's storage version
	// the migration of that CRD waits (--storage-version-migration-delay).
	SettleDelay time.Duration
}
