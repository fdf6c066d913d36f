package replicaset

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

const metricsSubsystem = "replicaset_controller"

// sortingDeletionAgeRatio shows how well scale-down prefers young pods: the age of every
// ready pod chosen for deletion divided by the age of the youngest ready pod. Values above
// 2 mean a clearly older pod was removed while a younger one stayed.
var sortingDeletionAgeRatio = metrics.NewHistogram(
	&metrics.HistogramOpts{
		Subsystem:      metricsSubsystem,
		Name:           "sorting_deletion_age_ratio",
		Help:           "Age of each ready pod chosen for deletion on scale-down divided by the age of the youngest ready pod of the ReplicaSet. Should stay below 2.",
		Buckets:        []float64{0.25, 0.5, 1, 2, 4, 8},
		StabilityLevel: metrics.ALPHA,
	},
)

// staleSyncSkips counts syncs postponed because an informer cache had not yet observed
// this controller's own writes.
var staleSyncSkips = metrics.NewCounterVec(
	&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "stale_sync_skips_total",
		Help:           "Number of ReplicaSet syncs skipped because the informer cache was older than the controller's own writes, by group and resource.",
		StabilityLevel: metrics.ALPHA,
	},
	[]string{"group", "resource"},
)

var registerMetricsOnce sync.Once

// registerMetrics registers the controller's metrics with the legacy registry served on
// /metrics. Several controllers may be built in one process (one per leadership term),
// hence once.
func registerMetrics() {
	registerMetricsOnce.Do(func() {
		legacyregistry.MustRegister(sortingDeletionAgeRatio)
		legacyregistry.MustRegister(staleSyncSkips)
	})
}
