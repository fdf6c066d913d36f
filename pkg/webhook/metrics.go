package webhook

import (
	"net/http"
	"strconv"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The server's metrics, served on the manager's /metrics with the legacy registry's:
//
//   - bosun_webhook_requests_total{webhook,operation,allowed}: requests received;
//   - bosun_webhook_rejections_total{webhook,code}: requests denied;
//   - bosun_webhook_request_duration_seconds{webhook}: time to answer.
const metricsSubsystem = "bosun_webhook"

// Values of the "allowed" label of requestsTotal.
const (
	allowedTrue  = "true"
	allowedFalse = "false"
	// allowedError marks requests refused with an HTTP error before they reached the
	// webhook: wrong method or content type, too large, not a well-formed AdmissionReview
	// (4xx), or sent before the webhook could answer (503).
	allowedError = "error"
)

// requestsTotal counts admission requests by webhook, operation and outcome. A webhook
// timing out or panicking answers a denial, so it counts as allowed="false".
var requestsTotal = metrics.NewCounterVec(
	&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "requests_total",
		Help:           "Number of admission requests received, by webhook, operation and whether they were allowed (\"error\": refused with an HTTP error before reaching the webhook).",
		StabilityLevel: metrics.ALPHA,
	},
	[]string{"webhook", "operation", "allowed"},
)

// rejectionsTotal counts denied requests by the status code the API server reports to its
// client, so that a policy denial (403, 422) can be told from a webhook failure (500, 504).
var rejectionsTotal = metrics.NewCounterVec(
	&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "rejections_total",
		Help:           "Number of admission requests denied, by webhook and the status code returned to the API server's client.",
		StabilityLevel: metrics.ALPHA,
	},
	[]string{"webhook", "code"},
)

// requestDuration is the time from receiving a request to having written the answer,
// refused requests included. Most webhooks answer from memory in well under a millisecond,
// hence the fine low buckets; the top one is the API server's default call timeout.
var requestDuration = metrics.NewHistogramVec(
	&metrics.HistogramOpts{
		Subsystem:      metricsSubsystem,
		Name:           "request_duration_seconds",
		Help:           "Time taken to answer an admission request, by webhook.",
		Buckets:        []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		StabilityLevel: metrics.ALPHA,
	},
	[]string{"webhook"},
)

var registerMetricsOnce sync.Once

// registerMetrics registers the webhook metrics with the legacy registry served on /metrics.
// Tests build many servers in one process, hence once.
func registerMetrics() {
	registerMetricsOnce.Do(func() {
		legacyregistry.MustRegister(requestsTotal)
		legacyregistry.MustRegister(rejectionsTotal)
		legacyregistry.MustRegister(requestDuration)
	})
}

// unknownOperation is the operation label of requests refused before their operation was
// read, and of operations the API server does not send.
const unknownOperation = "unknown"

// operationLabel keeps the operation label to the four values the API server sends: the
// operation comes from the request body, and anything else would let a caller create series
// at will.
func operationLabel(op admissionv1.Operation) string {
	switch op {
	case admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect:
		return string(op)
	}
	return unknownOperation
}

// recordAnswer counts a request that reached the webhook and its answer.
func recordAnswer(webhook string, op admissionv1.Operation, resp *admissionv1.AdmissionResponse) {
	if resp.Allowed {
		requestsTotal.WithLabelValues(webhook, operationLabel(op), allowedTrue).Inc()
		return
	}
	requestsTotal.WithLabelValues(webhook, operationLabel(op), allowedFalse).Inc()
	rejectionsTotal.WithLabelValues(webhook, strconv.Itoa(int(deniedCode(resp)))).Inc()
}

// deniedCode is the status code the API server answers its client with when this response
// denies the request: the response's own, raised to 400 when it is missing or not an error
// code, as the API server does.
func deniedCode(resp *admissionv1.AdmissionResponse) int32 {
	if resp.Result == nil || resp.Result.Code < http.StatusBadRequest {
		return http.StatusBadRequest
	}
	return resp.Result.Code
}
