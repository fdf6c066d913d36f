package webhook

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The helpers below build the responses handlers return. None sets the UID: the server copies
// it from the request.

// Allowed lets the request through unchanged.
func Allowed() *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: true}
}

// Denied refuses the request with a status code and a message; the reason is the one the API
// server uses for that code (403 Forbidden, 422 Invalid, ...). The API server reports the
// denial to its client as "admission webhook <name> denied the request: <message>".
func Denied(code int32, format string, args ...any) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{
		Allowed: false,
		Result: &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    code,
			Reason:  reasonForCode(code),
			Message: fmt.Sprintf(format, args...),
		},
	}
}

// Invalid refuses the request with a 422 carrying one cause per field error, exactly the
// status the API server's own validation returns, so that kubectl and clients show the fields.
func Invalid(gk schema.GroupKind, name string, errs field.ErrorList) *admissionv1.AdmissionResponse {
	status := apierrors.NewInvalid(gk, name, errs).ErrStatus
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &status}
}

// Errored refuses the request because the webhook could not decide, for example when it
// cannot decode the object (400) or a lookup it needs failed (500).
func Errored(code int32, err error) *admissionv1.AdmissionResponse {
	return Denied(code, "%v", err)
}

// AnnotationPointer is the JSON pointer to the annotation key of an object, for a patch.
func AnnotationPointer(key string) string {
	return "/metadata/annotations/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}

// Addition is one RFC 6902 "add" operation: Value (encoded as JSON) is set at Path, a JSON
// pointer such as "/spec/burstReplicas", whether or not the member is already there.
type Addition struct {
	Path  string
	Value any
}

// jsonPatchOperation is one operation of an RFC 6902 JSON patch, the only patch type
// admission accepts.
type jsonPatchOperation struct {
	Op   string `json:"op"`
	Path string `json:"path"`
	// Value is the JSON text of the value added. It is raw so that a null value is still
	// written ("value": null), as "add" requires.
	Value json.RawMessage `json:"value,omitempty"`
}

// AdditionsResponse allows the request with a JSON patch of additions, applied in order;
// with none it is Allowed(). Mutating webhooks know which fields they set, so they patch
// only those: diffing the whole object as received against the typed one would cost
// decoding it again, and would rewrite what the Go types merely spell differently.
func AdditionsResponse(additions []Addition) (*admissionv1.AdmissionResponse, error) {
	return PatchResponse(nil, additions, nil)
}

// PatchResponse allows the request with a JSON patch that first removes the members at
// removals (JSON pointers to members that exist) and then makes the additions, in order,
// and passes warnings on to the client. With no change and no warning it is Allowed().
func PatchResponse(removals []string, additions []Addition, warnings []string) (*admissionv1.AdmissionResponse, error) {
	if len(removals)+len(additions) == 0 {
		resp := Allowed()
		resp.Warnings = warnings
		return resp, nil
	}
	ops := make([]jsonPatchOperation, 0, len(removals)+len(additions))
	for _, path := range removals {
		ops = append(ops, jsonPatchOperation{Op: "remove", Path: path})
	}
	for _, a := range additions {
		value, err := json.Marshal(a.Value)
		if err != nil {
			return nil, fmt.Errorf("encoding the value for %s: %w", a.Path, err)
		}
		ops = append(ops, jsonPatchOperation{Op: "add", Path: a.Path, Value: value})
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encoding the patch: %w", err)
	}
	patchType := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{Allowed: true, Patch: patch, PatchType: &patchType, Warnings: warnings}, nil
}

// reasonForCode is the status reason the API server gives errors of that code; unknown for
// codes it has none for.
func reasonForCode(code int32) metav1.StatusReason {
	switch code {
	case http.StatusBadRequest:
		return metav1.StatusReasonBadRequest
	case http.StatusUnauthorized:
		return metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	case http.StatusNotFound:
		return metav1.StatusReasonNotFound
	case http.StatusMethodNotAllowed:
		return metav1.StatusReasonMethodNotAllowed
	case http.StatusNotAcceptable:
		return metav1.StatusReasonNotAcceptable
	case http.StatusConflict:
		return metav1.StatusReasonConflict
	case http.StatusGone:
		return metav1.StatusReasonGone
	case http.StatusRequestEntityTooLarge:
		return metav1.StatusReasonRequestEntityTooLarge
	case http.StatusUnsupportedMediaType:
		return metav1.StatusReasonUnsupportedMediaType
	case http.StatusUnprocessableEntity:
		return metav1.StatusReasonInvalid
	case http.StatusTooManyRequests:
		return metav1.StatusReasonTooManyRequests
	case http.StatusInternalServerError:
		return metav1.StatusReasonInternalError
	case http.StatusServiceUnavailable:
		return metav1.StatusReasonServiceUnavailable
	case http.StatusGatewayTimeout:
		return metav1.StatusReasonTimeout
	}
	return metav1.StatusReasonUnknown
}
