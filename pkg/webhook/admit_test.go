package webhook

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestResourceRules(t *testing.T) {
	got := ResourceRules(schema.GroupVersion{Group: "apps.kruise.io", Version: "v1alpha1"}, "nodeimages",
		admissionregistrationv1.Create, admissionregistrationv1.Update)
	want := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{
			APIGroups:   []string{"apps.kruise.io"},
			APIVersions: []string{"v1alpha1"},
			Resources:   []string{"nodeimages"},
		},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ResourceRules (-want +got):\n%s", diff)
	}
}

func TestDecodeAdmitted(t *testing.T) {
	configMap := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	request := func(op admissionv1.Operation, kind, raw string) *admissionv1.AdmissionRequest {
		return &admissionv1.AdmissionRequest{
			Operation: op,
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: kind},
			Object:    runtime.RawExtension{Raw: []byte(raw)},
		}
	}
	tests := []struct {
		name string
		req  *admissionv1.AdmissionRequest
		// wantData is the decoded object's data when it decodes; otherwise the answer has
		// wantCode and a message containing wantMessage.
		wantData    map[string]string
		wantCode    int32
		wantMessage string
	}{
		{name: "create", req: request(admissionv1.Create, "ConfigMap", `{"data":{"a":"b"}}`), wantData: map[string]string{"a": "b"}},
		{name: "update", req: request(admissionv1.Update, "ConfigMap", `{"data":{"c":"d"}}`), wantData: map[string]string{"c": "d"}},
		{name: "delete is not judged", req: request(admissionv1.Delete, "ConfigMap", ``)},
		{name: "connect is not judged", req: request(admissionv1.Connect, "Secret", `{`)},
		{name: "another kind", req: request(admissionv1.Create, "Secret", `{}`), wantCode: http.StatusBadRequest, wantMessage: "admits /v1, Kind=ConfigMap only"},
		{name: "unknown field", req: request(admissionv1.Update, "ConfigMap", `{"dta":{}}`), wantCode: http.StatusBadRequest, wantMessage: `unknown field "dta"`},
		{name: "empty object", req: request(admissionv1.Create, "ConfigMap", ``), wantCode: http.StatusBadRequest, wantMessage: "request.object is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cm, answer := DecodeAdmitted[corev1.ConfigMap](tt.req, configMap)
			switch {
			case tt.wantData != nil:
				if answer != nil {
					t.Fatalf("answered %+v, want the object", answer.Result)
				}
				if diff := cmp.Diff(tt.wantData, cm.Data); diff != "" {
					t.Errorf("data (-want +got):\n%s", diff)
				}
			case tt.wantCode == 0:
				if cm != nil || answer == nil || !answer.Allowed {
					t.Errorf("got %v, %+v; want no object and Allowed", cm, answer)
				}
			default:
				if cm != nil || answer == nil || answer.Allowed || answer.Result.Code != tt.wantCode || !strings.Contains(answer.Result.Message, tt.wantMessage) {
					t.Errorf("got %v, %+v; want a %d containing %q", cm, answer, tt.wantCode, tt.wantMessage)
				}
			}
		})
	}
}

func TestDecodeStrictNew(t *testing.T) {
	configMap := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	cm, err := DecodeStrictNew[corev1.ConfigMap]([]byte(`{"data":{"a":"b"}}`), "oldObject", configMap)
	if err != nil || cm.Data["a"] != "b" {
		t.Errorf("DecodeStrictNew = %+v, %v; want data a=b", cm, err)
	}
	cm, err = DecodeStrictNew[corev1.ConfigMap]([]byte(`{"data":{},"data":{}}`), "oldObject", configMap)
	if cm != nil || err == nil || !strings.Contains(err.Error(), `decoding request.oldObject as a ConfigMap: duplicate field "data"`) {
		t.Errorf("DecodeStrictNew of a duplicate field = %v, %v; want an error naming oldObject", cm, err)
	}
}

func TestInvalidWithCode(t *testing.T) {
	gk := schema.GroupKind{Group: "apps.kruise.io", Kind: "NodeImage"}
	errs := field.ErrorList{
		field.Required(field.NewPath("spec", "images").Key("nginx").Child("tags"), ""),
		field.Invalid(field.NewPath("spec", "images").Key("nginx").Child("tags").Index(0).Child("tag"), "", "must not be empty"),
	}
	for code, reason := range map[int32]metav1.StatusReason{
		http.StatusBadRequest: metav1.StatusReasonBadRequest,
		http.StatusForbidden:  metav1.StatusReasonForbidden,
	} {
		got := InvalidWithCode(code, gk, "node-a", errs)

		// Everything but the code and reason is what the API server's validation answers.
		want := apierrors.NewInvalid(gk, "node-a", errs).ErrStatus
		want.Code, want.Reason = code, reason
		if got.Allowed {
			t.Errorf("InvalidWithCode(%d) allows the request", code)
		}
		if diff := cmp.Diff(&want, got.Result); diff != "" {
			t.Errorf("InvalidWithCode(%d) result (-want +got):\n%s", code, diff)
		}
		if len(got.Result.Details.Causes) != len(errs) {
			t.Errorf("InvalidWithCode(%d) has %d causes, want one per field error", code, len(got.Result.Details.Causes))
		}
	}
}
