package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/klog/v2"
)

// maxRequestBytes bounds a request body. The API server stores objects of up to about 3 MiB,
// and the review of an update carries two of them (object and oldObject) besides the request's
// own fields.
const maxRequestBytes = 7 << 20

// endpoint serves the path of one registration.
type endpoint struct {
	name    string
	handler Handler
	// timeout bounds each call of handler.
	timeout time.Duration
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	defer func() { requestDuration.WithLabelValues(e.name).Observe(time.Since(start).Seconds()) }()

	req, refused := readRequest(w, r)
	if refused != nil {
		requestsTotal.WithLabelValues(e.name, unknownOperation, allowedError).Inc()
		// Anyone who can reach the port can cause these, hence not at the default level.
		klog.FromContext(r.Context()).V(2).Info("Refused a request to an admission webhook",
			"webhook", e.name, "path", r.URL.Path, "status", refused.Status, "reason", refused.Message)
		refused.Write(w)
		return
	}

	logger := klog.FromContext(r.Context()).WithValues("webhook", e.name, "uid", req.UID,
		"kind", req.Kind.Kind, "namespace", req.Namespace, "name", req.Name, "operation", req.Operation)
	ctx := klog.NewContext(r.Context(), logger)
	// Read before the handler runs: it may still hold req, and change it, after a timeout.
	uid, operation := req.UID, req.Operation

	resp := e.admit(ctx, req)
	recordAnswer(e.name, operation, resp)
	switch {
	case resp.Allowed:
		logger.V(4).Info("Admission request allowed", "patched", len(resp.Patch) > 0)
	case resp.Result != nil:
		logger.V(2).Info("Admission request denied", "code", deniedCode(resp), "message", resp.Result.Message)
	default:
		logger.V(2).Info("Admission request denied", "code", deniedCode(resp))
	}

	body, err := encodeReview(uid, resp)
	if err != nil {
		logger.Error(err, "Cannot encode the AdmissionReview response")
		http.Error(w, fmt.Sprintf("internal error in webhook %s", e.name), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write(body); err != nil {
		logger.V(2).Info("Cannot write the AdmissionReview response", "err", err)
	}
}

// serveNotReady answers a request that came before the webhook can answer
// (ServerOptions.AdmissionReady) with 503: to the API server, an HTTP error is a failed
// call, to which it applies the webhook's failure policy, as it did while nobody listened.
func (e *endpoint) serveNotReady(w http.ResponseWriter, r *http.Request) {
	requestsTotal.WithLabelValues(e.name, unknownOperation, allowedError).Inc()
	klog.FromContext(r.Context()).V(2).Info("Refused a request to an admission webhook that is not ready yet",
		"webhook", e.name, "path", r.URL.Path, "status", http.StatusServiceUnavailable)
	http.Error(w, fmt.Sprintf("admission webhook %s is not ready: its informers have not synced yet", e.name),
		http.StatusServiceUnavailable)
}

// readRequest reads and decodes the AdmissionReview of r, or says why it refuses it.
func readRequest(w http.ResponseWriter, r *http.Request) (*admissionv1.AdmissionRequest, *Refusal) {
	body, refused := ReadReviewBody(w, r, "admission", maxRequestBytes)
	if refused != nil {
		return nil, refused
	}
	req, err := decodeReview(body)
	if err != nil {
		return nil, &Refusal{http.StatusBadRequest, fmt.Sprintf("bad AdmissionReview: %v", err)}
	}
	return req, nil
}

// admit asks the handler about req and returns its answer, or the denial standing in for it
// when the handler panics, returns nothing or misses its deadline.
//
// The handler runs in a goroutine of its own so that a slow one can be answered for at the
// deadline. It may go on running after that, but all it can still do is send its response
// to a buffered channel nobody reads: it has neither the ResponseWriter nor anything else the
// server goes on using.
func (e *endpoint) admit(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	logger := klog.FromContext(ctx)
	internalError := Errored(http.StatusInternalServerError, fmt.Errorf("internal error in webhook %s", e.name))

	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	answer := make(chan *admissionv1.AdmissionResponse, 1)
	go func() {
		defer func() {
			// The panic value may hold anything, so it goes to the log, never to the caller.
			if p := recover(); p != nil {
				logger.Error(fmt.Errorf("panic: %v", p), "Webhook handler panicked", "stack", string(debug.Stack()))
				answer <- internalError
			}
		}()
		answer <- e.handler.Handle(ctx, req)
	}()

	select {
	case resp := <-answer:
		if resp == nil {
			logger.Error(nil, "Webhook handler returned no response")
			return internalError
		}
		return resp
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			logger.Error(ctx.Err(), "Webhook handler did not answer in time", "timeout", e.timeout)
			return Denied(http.StatusGatewayTimeout, "webhook %s timed out after %v", e.name, e.timeout)
		}
		// The API server closed the connection; nobody reads what follows.
		logger.V(2).Info("Admission request cancelled before the webhook answered", "err", context.Cause(ctx))
		return Denied(http.StatusGatewayTimeout, "webhook %s: request cancelled", e.name)
	}
}
