package conversion

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The handler's metrics, served on the manager's /metrics with the legacy registry's:
//
//   - bosun_conversion_requests_total{kind,desired_version,code}: reviews received;
//   - bosun_conversion_duration_seconds: time to answer a review;
//   - bosun_conversion_dropped_total{kind}: reserved-annotation records a conversion could
//     not honour or write.
const metricsSubsystem = "bosun_conversion"

// unknownLabel is the kind or desired_version label of a review whose kind or desired
// version is not one this handler converts, or could not be read: the values come from the
// request, and anything else would let a caller create series at will.
const unknownLabel = "unknown"

// requestsTotal counts reviews by the kind of their objects, the desired version and the
// answer: the HTTP status of a request refused before it was read as a review (400, 405,
// 413, 415), otherwise the code of the review's result (200 for Success, 422 when an object
// cannot be converted, 500 for an internal error).
var requestsTotal = metrics.NewCounterVec(
	&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "requests_total",
		Help:           "Number of CRD conversion reviews received, by kind, desired version and code (the HTTP status of a refused request, else the result's: 200 success, 422 an object could not be converted, 500 internal error).",
		StabilityLevel: metrics.ALPHA,
	},
	[]string{"kind", "desired_version", "code"},
)

// duration is the time from receiving a review to having written the answer. The API
// server gives a conversion webhook 30 seconds; a review of one object takes well under a
// millisecond, a list of hundreds of large objects a good part of a second.
var duration = metrics.NewHistogram(
	&metrics.HistogramOpts{
		Subsystem:      metricsSubsystem,
		Name:           "duration_seconds",
		Help:           "Time taken to answer a CRD conversion review.",
		Buckets:        []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		StabilityLevel: metrics.ALPHA,
	},
)

// droppedTotal counts the records of the reserved conversion annotations that a conversion
// could not honour (unparseable) or write (over the annotation size limit): the only
// information a conversion may lose.
var droppedTotal = metrics.NewCounterVec(
	&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "dropped_total",
		Help:           "Number of reserved conversion-annotation records dropped because they could not be parsed or would exceed the annotation size limit, by kind.",
		StabilityLevel: metrics.ALPHA,
	},
	[]string{"kind"},
)

var registerMetricsOnce sync.Once

// registerMetrics registers the conversion metrics with the legacy registry served on
// /metrics. Tests build many handlers in one process, hence once.
func registerMetrics() {
	registerMetricsOnce.Do(func() {
		legacyregistry.MustRegister(requestsTotal)
		legacyregistry.MustRegister(duration)
		legacyregistry.MustRegister(droppedTotal)
	})
}
