package webhook

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
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

func TestPatchResponse(t *testing.T) {
	original := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-0","labels":{"app":"web"}},` +
		`"spec":{"containers":[{"name":"web","image":"web:1"}]},"status":{}}`)
	decode := func(t *testing.T) *corev1.Pod {
		t.Helper()
		pod := &corev1.Pod{}
		if err := json.Unmarshal(original, pod); err != nil {
			t.Fatal(err)
		}
		return pod
	}

	t.Run("changes", func(t *testing.T) {
		pod := decode(t)
		pod.Labels["bosun.io/injected"] = "true"
		pod.Spec.Containers[0].Image = "web:2"

		resp, err := PatchResponse(original, pod)
		if err != nil {
			t.Fatal(err)
		}

		if !resp.Allowed || resp.Result != nil {
			t.Errorf("response %+v, want allowed", resp)
		}
		if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
			t.Errorf("patch type %v, want JSONPatch", resp.PatchType)
		}
		// The changed container also gains the resources the typed round trip always encodes.
		want := `[{"op":"add","path":"/metadata/labels/bosun.io~1injected","value":"true"},` +
			`{"op":"replace","path":"/spec/containers","value":[{"image":"web:2","name":"web","resources":{}}]}]`
		if string(resp.Patch) != want {
			t.Errorf("patch\n%s\nwant\n%s", resp.Patch, want)
		}
	})

	t.Run("no changes", func(t *testing.T) {
		// As the typed object encodes itself, so that the round trip adds nothing.
		unchanged, err := json.Marshal(decode(t))
		if err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{}
		if err := json.Unmarshal(unchanged, pod); err != nil {
			t.Fatal(err)
		}

		resp, err := PatchResponse(unchanged, pod)
		if err != nil {
			t.Fatal(err)
		}

		if diff := cmp.Diff(Allowed(), resp); diff != "" {
			t.Errorf("response without changes (-want +got):\n%s", diff)
		}
	})

	t.Run("type meta kept", func(t *testing.T) {
		pod := decode(t)
		pod.TypeMeta = metav1.TypeMeta{}
		pod.Labels["app"] = "api"

		resp, err := PatchResponse(original, pod)
		if err != nil {
			t.Fatal(err)
		}

		patched, err := applyJSONPatch(original, resp.Patch)
		if err != nil {
			t.Fatalf("applying %s: %v", resp.Patch, err)
		}
		var got metav1.TypeMeta
		if err := json.Unmarshal(patched, &got); err != nil {
			t.Fatal(err)
		}
		if got.APIVersion != "v1" || got.Kind != "Pod" {
			t.Errorf("patched object is %q %q, want v1 Pod; patch: %s", got.APIVersion, got.Kind, resp.Patch)
		}
	})

	t.Run("bad original", func(t *testing.T) {
		if _, err := PatchResponse([]byte(`{"apiVersion":`), decode(t)); err == nil {
			t.Error("no error for a malformed original")
		}
	})
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
