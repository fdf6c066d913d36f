package webhook

import (
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDecodeStrict(t *testing.T) {
	want := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	tests := []struct {
		name, raw, wantErr string
	}{
		{name: "typed", raw: `{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"b"}}`},
		{name: "without type meta", raw: `{"data":{"a":"b"}}`},
		{name: "empty", raw: ``, wantErr: "request.object is empty"},
		{name: "unknown field", raw: `{"data":{},"dta":{}}`, wantErr: `unknown field "dta"`},
		{name: "duplicate field", raw: `{"data":{},"data":{}}`, wantErr: `duplicate field "data"`},
		{name: "wrong case", raw: `{"Data":{}}`, wantErr: "Data"},
		{name: "other kind", raw: `{"apiVersion":"v1","kind":"Secret"}`, wantErr: "request.object is v1 Secret, not a /v1, Kind=ConfigMap"},
		{name: "not JSON", raw: `{`, wantErr: "decoding request.object as a ConfigMap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{}
			err := DecodeStrict([]byte(tt.raw), "object", want, cm)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr == "" && cm.Data["a"] != "b":
				t.Errorf("decoded %+v", cm)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestCheckKind(t *testing.T) {
	want := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	req := &admissionv1.AdmissionRequest{Kind: metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}}
	if err := CheckKind(req, want); err != nil {
		t.Errorf("CheckKind(ConfigMap) = %v", err)
	}
	req.Kind.Kind = "Secret"
	if err := CheckKind(req, want); err == nil || !strings.Contains(err.Error(), "admits /v1, Kind=ConfigMap only") {
		t.Errorf("CheckKind(Secret) = %v", err)
	}
}
