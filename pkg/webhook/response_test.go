package webhook

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestDenied(t *testing.T) {
	tests := []struct {
		code int32
		want metav1.StatusReason
	}{
		{http.StatusBadRequest, metav1.StatusReasonBadRequest},
		{http.StatusForbidden, metav1.StatusReasonForbidden},
		{http.StatusNotFound, metav1.StatusReasonNotFound},
		{http.StatusConflict, metav1.StatusReasonConflict},
		{http.StatusUnprocessableEntity, metav1.StatusReasonInvalid},
		{http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests},
		{http.StatusInternalServerError, metav1.StatusReasonInternalError},
		{http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable},
		{http.StatusGatewayTimeout, metav1.StatusReasonTimeout},
		{http.StatusTeapot, metav1.StatusReasonUnknown},
	}
	for _, tt := range tests {
		got := Denied(tt.code, "pods %s/%s: %d", "default", "web-0", 3)
		want := &admissionv1.AdmissionResponse{Result: &metav1.Status{
			Status: metav1.StatusFailure, Code: tt.code, Reason: tt.want, Message: "pods default/web-0: 3",
		}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Denied(%d) (-want +got):\n%s", tt.code, diff)
		}
	}
}

func TestInvalid(t *testing.T) {
	gk := schema.GroupKind{Group: "apps.kruise.io", Kind: "DaemonSet"}
	errs := field.ErrorList{field.Invalid(field.NewPath("spec", "burstReplicas"), -1, "must be non-negative")}

	got := Invalid(gk, "agent", errs)

	want := apierrors.NewInvalid(gk, "agent", errs).ErrStatus
	if got.Allowed {
		t.Error("Invalid allows the request")
	}
	if diff := cmp.Diff(&want, got.Result); diff != "" {
		t.Errorf("Invalid result (-want +got):\n%s", diff)
	}
	if want := `DaemonSet.apps.kruise.io "agent" is invalid: spec.burstReplicas: Invalid value: -1: must be non-negative`; got.Result.Message != want {
		t.Errorf("message %q, want %q", got.Result.Message, want)
	}
}

func TestErrored(t *testing.T) {
	got := Errored(http.StatusInternalServerError, errors.New("listing pods: connection refused"))

	want := &admissionv1.AdmissionResponse{Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: 500, Reason: metav1.StatusReasonInternalError, Message: "listing pods: connection refused",
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Errored (-want +got):\n%s", diff)
	}
}

func TestAdditionsResponse(t *testing.T) {
	resp, err := AdditionsResponse(nil)
	if err != nil || !resp.Allowed || resp.Patch != nil || resp.PatchType != nil {
		t.Errorf("no additions: %+v, %v; want a plain allowance", resp, err)
	}
	resp, err = AdditionsResponse([]Addition{{Path: "/spec/a", Value: 1}, {Path: "/spec/b", Value: nil}, {Path: "/spec/c", Value: map[string]string{"x": "y"}}})
	if err != nil || !resp.Allowed || resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("additions: %+v, %v", resp, err)
	}
	want := `[{"op":"add","path":"/spec/a","value":1},{"op":"add","path":"/spec/b","value":null},{"op":"add","path":"/spec/c","value":{"x":"y"}}]`
	if string(resp.Patch) != want {
		t.Errorf("patch %s, want %s", resp.Patch, want)
	}
	if _, err := AdditionsResponse([]Addition{{Path: "/spec/f", Value: func() {}}}); err == nil || !strings.Contains(err.Error(), "/spec/f") {
		t.Errorf("unencodable value: %v, want an error naming the path", err)
	}
}
