package garbagecollector

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

const metricsSubsystem = "garbagecollector_controller"

// resourcesSyncErrors counts failed attempts to bring the monitors in line with discovery:
// discovery reporting nothing, a monitor that could not be built, or monitors that did not
// sync in time.
var resourcesSyncErrors = metrics.NewCounter(
	&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "resources_sync_error_total",
		Help:           "Number of garbage collector resources sync errors",
		StabilityLevel: metrics.ALPHA,
	},
)

var registerMetricsOnce sync.Once

// registerMetrics registers the collector's metrics with the legacy registry served on
// /metrics. A process builds one collector per leadership term, hence once.
func registerMetrics() {
	registerMetricsOnce.Do(func() {
		legacyregistry.MustRegister(resourcesSyncErrors)
	})
}
