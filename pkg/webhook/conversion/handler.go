package conversion

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/webhook"
)

// Path is where the webhook server serves the handler, the path of the CRDs'
// spec.conversion.webhook.clientConfig.
const Path = "/convert"

// maxRequestBytes bounds a request body. A review holds every object of a LIST page that
// needs converting, each of up to about 3 MiB; the API server pages LISTs of custom
// resources by their count, not their size.
const maxRequestBytes = 128 << 20

// Codes of a review's result, also the code label of requestsTotal.
const (
	codeSuccess       = http.StatusOK
	codeUnconvertible = http.StatusUnprocessableEntity
	codeInternalError = http.StatusInternalServerError
)

// Handler answers the API server's ConversionReviews. It is safe for concurrent use and
// needs no informer, client or clock.
type Handler struct {
	converter converter
}

// NewHandler returns the handler, with the conversions of the api module.
func NewHandler() (*Handler, error) {
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	registerMetrics()
	return &Handler{converter: converter{scheme: scheme}}, nil
}

// ServeHTTP answers a POSTed apiextensions.k8s.io/v1 ConversionReview. A request that is
// not one is refused with an HTTP error (400 for a body that is not a ConversionReview
// request); a review is answered with a Failure only when one of its objects has a group,
// kind or version this handler does not convert or does not decode into its type.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	defer func() { duration.Observe(time.Since(start).Seconds()) }()
	logger := klog.FromContext(r.Context())

	req, refusal := readRequest(w, r)
	if refusal != nil {
		requestsTotal.WithLabelValues(unknownLabel, unknownLabel, strconv.Itoa(refusal.Status)).Inc()
		// Anyone who can reach the port can cause these, hence not at the default level.
		logger.V(2).Info("Refused a request to the conversion webhook", "path", r.URL.Path,
			"status", refusal.Status, "reason", refusal.Message)
		refusal.Write(w)
		return
	}

	logger = logger.WithValues("uid", req.UID, "desiredAPIVersion", req.DesiredAPIVersion, "objects", len(req.Objects))
	o := h.convertAll(logger, req)
	requestsTotal.WithLabelValues(o.kind, o.desiredVersion, strconv.Itoa(int(o.result.Code))).Inc()
	var failure *metav1.Status
	if o.result.Status == metav1.StatusSuccess {
		// Only now: the objects of a failed review are thrown away, their losses with them.
		for kind, dropped := range o.dropped {
			droppedTotal.WithLabelValues(kind).Add(float64(dropped))
		}
		logger.V(4).Info("Converted objects", "duration", time.Since(start))
	} else {
		failure = &o.result
		logger.V(2).Info("Conversion failed", "code", o.result.Code, "message", o.result.Message)
	}

	body, err := encodeReview(req.UID, o.objects, failure)
	if err != nil {
		logger.Error(err, "Cannot encode the ConversionReview response")
		http.Error(w, "internal error in the conversion webhook", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write(body); err != nil {
		logger.V(2).Info("Cannot write the ConversionReview response", "err", err)
	}
}

// outcome is the outcome of a review.
type outcome struct {
	// objects are the converted objects, in the order of the request; nil on failure.
	objects []json.RawMessage
	result  metav1.Status
	// kind and desiredVersion are the metric labels of the review.
	kind, desiredVersion string
	// dropped counts the reserved-annotation records dropped, by kind.
	dropped map[string]int
}

// convertAll converts every object of req into the desired version, in order, or fails the
// whole review at the first that cannot be: the API server uses all of the objects or none.
func (h *Handler) convertAll(logger klog.Logger, req *conversionRequest) (o outcome) {
	o = outcome{kind: unknownLabel, desiredVersion: unknownLabel}
	defer func() {
		// The conversion functions are total; a panic is a bug of this build, and must
		// fail one review, not the process.
		if p := recover(); p != nil {
			logger.Error(fmt.Errorf("panic: %v", p), "Conversion panicked", "stack", string(debug.Stack()))
			o.objects, o.dropped = nil, nil
			o.result = failureStatus(codeInternalError, "internal error in the conversion webhook")
		}
	}()

	desired, err := schema.ParseGroupVersion(req.DesiredAPIVersion)
	if err != nil || !servedGroupVersion(desired) {
		o.result = failureStatus(codeUnconvertible, fmt.Sprintf("desiredAPIVersion %q is not a version this webhook converts to", req.DesiredAPIVersion))
		return o
	}
	o.desiredVersion = desired.Version

	objects := make([]json.RawMessage, len(req.Objects))
	kinds := map[string]bool{}
	for i, raw := range req.Objects {
		converted, err := h.converter.convert(raw, desired)
		if converted.kind != "" {
			kinds[converted.kind] = true
		}
		if err != nil {
			o.kind = kindLabel(kinds)
			if !errors.Is(err, errUnconvertible) {
				logger.Error(err, "Cannot convert an object", "index", i)
				o.result = failureStatus(codeInternalError, fmt.Sprintf("internal error converting object %d", i))
				return o
			}
			o.result = failureStatus(codeUnconvertible, fmt.Sprintf("object %d: %v", i, err))
			return o
		}
		if converted.dropped > 0 {
			if o.dropped == nil {
				o.dropped = map[string]int{}
			}
			o.dropped[converted.kind] += converted.dropped
			logger.V(2).Info("Dropped reserved conversion-annotation records that could not be honoured or written",
				"index", i, "kind", converted.kind, "records", converted.dropped)
		}
		objects[i] = converted.data
	}
	o.objects, o.kind, o.result = objects, kindLabel(kinds), successStatus
	return o
}

// kindLabel is the kind label of a review whose objects are of the given convertible
// kinds: the kind when there is one, unknownLabel otherwise (an empty review, or one the
// API server would never send, mixing kinds).
func kindLabel(kinds map[string]bool) string {
	if len(kinds) != 1 {
		return unknownLabel
	}
	for kind := range kinds {
		return kind
	}
	return unknownLabel
}

func failureStatus(code int32, message string) metav1.Status {
	return metav1.Status{Status: metav1.StatusFailure, Code: code, Message: message}
}

// readRequest reads and decodes the ConversionReview of r, or says why it refuses it.
func readRequest(w http.ResponseWriter, r *http.Request) (*conversionRequest, *webhook.Refusal) {
	body, refused := webhook.ReadReviewBody(w, r, "conversion", maxRequestBytes)
	if refused != nil {
		return nil, refused
	}
	req, err := decodeReview(body)
	if err != nil {
		return nil, &webhook.Refusal{Status: http.StatusBadRequest, Message: fmt.Sprintf("bad ConversionReview: %v", err)}
	}
	return req, nil
}
