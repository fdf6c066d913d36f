package cloneset

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// scaleExpectationLeakage counts, per CloneSet, the syncs that found scale expectations
// older than expectations.ExpectationsTimeout: creates or deletes whose informer event
// never came. OpenKruise's metric of the same name and labels.
var scaleExpectationLeakage = metrics.NewCounterVec(
	&metrics.CounterOpts{
		Name:           "cloneset_scale_expectation_leakage",
		Help:           "Number of CloneSet syncs that found pods or claims created or deleted more than five minutes ago and still not seen by the informers.",
		StabilityLevel: metrics.ALPHA,
	},
	[]string{"namespace", "name"},
)

var registerMetricsOnce sync.Once

// registerMetrics registers the controller's metrics with the legacy registry served on
// /metrics. Several controllers may be built in one process (one per leadership term),
// hence once.
func registerMetrics() {
	registerMetricsOnce.Do(func() {
		legacyregistry.MustRegister(scaleExpectationLeakage)
	})
}
