package storageversionmigrator

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The migrator's metrics, labelled by the CRD's name (one of CRDNames, so the series are
// bounded):
//
//   - bosun_storage_version_migrator_migrated_objects_total{resource}: objects rewritten;
//   - bosun_storage_version_migrator_errors_total{resource}: failed requests of a pass or
//     of the trim (Conflict and NotFound on an object are not failures);
//   - bosun_storage_version_migrator_pass_duration_seconds{resource}: time of one pass.
const metricsSubsystem = "bosun_storage_version_migrator"

var migratedTotal = metrics.NewCounterVec(
	&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "migrated_objects_total",
		Help:           "Number of objects written back so that they are stored in v1beta1, by resource (CRD name).",
		StabilityLevel: metrics.ALPHA,
	},
	[]string{"resource"},
)

var errorsTotal = metrics.NewCounterVec(
	&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "errors_total",
		Help:           "Number of failed LISTs, object rewrites and status.storedVersions updates of the storage version migration, by resource (CRD name).",
		StabilityLevel: metrics.ALPHA,
	},
	[]string{"resource"},
)

// passDuration: a pass rewrites every object of a resource one request at a time, under
// the controller's client rate limit, so large resources take minutes.
var passDuration = metrics.NewHistogramVec(
	&metrics.HistogramOpts{
		Subsystem:      metricsSubsystem,
		Name:           "pass_duration_seconds",
		Help:           "Time taken by one storage version migration pass over every object of a resource, by resource (CRD name).",
		Buckets:        []float64{0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600, 1200, 3600},
		StabilityLevel: metrics.ALPHA,
	},
	[]string{"resource"},
)

var registerMetricsOnce sync.Once

// registerMetrics registers the migrator's metrics with the legacy registry served on
// /metrics. A controller is built per leadership term, and tests build many, hence once.
func registerMetrics() {
	registerMetricsOnce.Do(func() {
		legacyregistry.MustRegister(migratedTotal)
		legacyregistry.MustRegister(errorsTotal)
		legacyregistry.MustRegister(passDuration)
	})
}
