package webhook

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// configMapWebhook is a ResourceWebhook for ConfigMaps that defaults data key "mode" to
// "auto" and denies a ConfigMap without key "owner", or an update that changes it. It
// records what its functions were given in seen.
type configMapWebhook struct {
	ResourceWebhook[corev1.ConfigMap, *corev1.ConfigMap]
	seen []string
}

func newConfigMapWebhook() *configMapWebhook {
	w := &configMapWebhook{}
	w.ResourceWebhook = ResourceWebhook[corev1.ConfigMap, *corev1.ConfigMap]{
		Kind:           corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		Resource:       "configmaps",
		MutatingName:   "mconfigmap.bosun.test",
		MutatingPath:   "/mutate-configmap",
		ValidatingName: "vconfigmap.bosun.test",
		ValidatingPath: "/validate-configmap",
		Default: func(req *admissionv1.AdmissionRequest, cm *corev1.ConfigMap) []Addition {
			w.seen = append(w.seen, "default "+string(req.Operation)+" "+cm.Name)
			if _, ok := cm.Data["mode"]; ok {
				return nil
			}
			return []Addition{{Path: "/data/mode", Value: "auto"}}
		},
		Validate: func(_ context.Context, req *admissionv1.AdmissionRequest, cm, old *corev1.ConfigMap) *admissionv1.AdmissionResponse {
			seen := "validate " + string(req.Operation) + " " + cm.Namespace + "/" + cm.Name
			if old != nil {
				seen += " old owner " + old.Data["owner"]
			}
			w.seen = append(w.seen, seen)
			switch {
			case cm.Data["owner"] == "":
				return Denied(http.StatusBadRequest, "%s has no owner", ObjectName(req, cm))
			case old != nil && old.Data["owner"] != cm.Data["owner"]:
				return Denied(http.StatusForbidden, "owner is immutable")
			}
			return Allowed()
		},
	}
	return w
}

// handle sends req to the registration of w named name.
func (w *configMapWebhook) handle(t *testing.T, name string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	t.Helper()
	for _, r := range w.Registrations() {
		if r.Name == name {
			return r.Handler.Handle(testContext(t), req)
		}
	}
	t.Fatalf("no webhook %s", name)
	return nil
}

func configMapRequest(op admissionv1.Operation, object, oldObject string) *admissionv1.AdmissionRequest {
	req := &admissionv1.AdmissionRequest{
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		Namespace: "ns",
		Name:      "cm",
		Operation: op,
		Object:    runtime.RawExtension{Raw: []byte(object)},
	}
	if oldObject != "" {
		req.OldObject = runtime.RawExtension{Raw: []byte(oldObject)}
	}
	return req
}

func TestResourceWebhookRegistrations(t *testing.T) {
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{
			APIGroups:   []string{""},
			APIVersions: []string{"v1"},
			Resources:   []string{"configmaps"},
		},
	}}
	type summary struct {
		Name, Path string
		Type       Type
		Rules      []admissionregistrationv1.RuleWithOperations
	}
	summarize := func(regs []Registration) []summary {
		var out []summary
		for _, r := range regs {
			if err := r.Validate(); err != nil {
				t.Errorf("registration %s: %v", r.Name, err)
			}
			out = append(out, summary{Name: r.Name, Path: r.Path, Type: r.Type, Rules: r.Rules})
		}
		return out
	}
	mutating := summary{Name: "mconfigmap.bosun.test", Path: "/mutate-configmap", Type: Mutating, Rules: rules}
	validating := summary{Name: "vconfigmap.bosun.test", Path: "/validate-configmap", Type: Validating, Rules: rules}

	both := newConfigMapWebhook()
	if diff := cmp.Diff([]summary{mutating, validating}, summarize(both.Registrations())); diff != "" {
		t.Errorf("with Default and Validate (-want +got):\n%s", diff)
	}
	validatingOnly := newConfigMapWebhook()
	validatingOnly.Default = nil
	if diff := cmp.Diff([]summary{validating}, summarize(validatingOnly.Registrations())); diff != "" {
		t.Errorf("without Default (-want +got):\n%s", diff)
	}
	mutatingOnly := newConfigMapWebhook()
	mutatingOnly.Validate = nil
	if diff := cmp.Diff([]summary{mutating}, summarize(mutatingOnly.Registrations())); diff != "" {
		t.Errorf("without Validate (-want +got):\n%s", diff)
	}
}

func TestResourceWebhookDefaults(t *testing.T) {
	const mutating = "mconfigmap.bosun.test"
	t.Run("additions", func(t *testing.T) {
		w := newConfigMapWebhook()
		resp := w.handle(t, mutating, configMapRequest(admissionv1.Create, `{"metadata":{"name":"cm"},"data":{}}`, ""))
		if !resp.Allowed || resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
			t.Fatalf("response %+v, want allowed with a JSON patch", resp)
		}
		if want := `[{"op":"add","path":"/data/mode","value":"auto"}]`; string(resp.Patch) != want {
			t.Errorf("patch %s, want %s", resp.Patch, want)
		}
		if diff := cmp.Diff([]string{"default CREATE cm"}, w.seen); diff != "" {
			t.Errorf("Default was given (-want +got):\n%s", diff)
		}
	})
	t.Run("nothing to default", func(t *testing.T) {
		w := newConfigMapWebhook()
		resp := w.handle(t, mutating, configMapRequest(admissionv1.Update, `{"metadata":{"name":"cm"},"data":{"mode":"manual"}}`, `{`))
		if diff := cmp.Diff(Allowed(), resp); diff != "" {
			t.Errorf("response (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"default UPDATE cm"}, w.seen); diff != "" {
			t.Errorf("Default was given (-want +got):\n%s", diff)
		}
	})
	t.Run("addition that does not encode", func(t *testing.T) {
		w := newConfigMapWebhook()
		w.Default = func(*admissionv1.AdmissionRequest, *corev1.ConfigMap) []Addition {
			return []Addition{{Path: "/data/mode", Value: func() {}}}
		}
		resp := w.handle(t, mutating, configMapRequest(admissionv1.Create, `{"metadata":{"name":"cm"}}`, ""))
		if resp.Allowed || resp.Result.Code != http.StatusInternalServerError || !strings.Contains(resp.Result.Message, "defaulting ConfigMap ns/cm: ") {
			t.Errorf("response %+v, want a 500 saying what was being defaulted", resp.Result)
		}
	})
}

func TestResourceWebhookValidates(t *testing.T) {
	const validating = "vconfigmap.bosun.test"
	tests := []struct {
		name            string
		oldObjectUnused bool
		req             *admissionv1.AdmissionRequest
		wantCode        int32 // 0: allowed
		wantMessage     string
		wantSeen        []string
	}{{
		name:     "create, namespace filled in from the request",
		req:      configMapRequest(admissionv1.Create, `{"metadata":{"name":"cm"},"data":{"owner":"a"}}`, ""),
		wantSeen: []string{"validate CREATE ns/cm"},
	}, {
		name:        "create denied, named after the request when the object has no name",
		req:         configMapRequest(admissionv1.Create, `{"metadata":{"namespace":"ns"}}`, ""),
		wantCode:    http.StatusBadRequest,
		wantMessage: "cm has no owner",
		wantSeen:    []string{"validate CREATE ns/"},
	}, {
		name:     "update judged against the old object",
		req:      configMapRequest(admissionv1.Update, `{"metadata":{"name":"cm"},"data":{"owner":"a"}}`, `{"metadata":{"name":"cm"},"data":{"owner":"a"}}`),
		wantSeen: []string{"validate UPDATE ns/cm old owner a"},
	}, {
		name:        "update denied against the old object",
		req:         configMapRequest(admissionv1.Update, `{"metadata":{"name":"cm"},"data":{"owner":"b"}}`, `{"metadata":{"name":"cm"},"data":{"owner":"a"}}`),
		wantCode:    http.StatusForbidden,
		wantMessage: "owner is immutable",
		wantSeen:    []string{"validate UPDATE ns/cm old owner a"},
	}, {
		name:        "old object that does not decode",
		req:         configMapRequest(admissionv1.Update, `{"metadata":{"name":"cm"},"data":{"owner":"a"}}`, `{"metadata":{"name":"cm"},"dta":{}}`),
		wantCode:    http.StatusBadRequest,
		wantMessage: `decoding request.oldObject as a ConfigMap: unknown field "dta"`,
	}, {
		name:        "missing old object",
		req:         configMapRequest(admissionv1.Update, `{"metadata":{"name":"cm"},"data":{"owner":"a"}}`, ""),
		wantCode:    http.StatusBadRequest,
		wantMessage: "request.oldObject is empty",
	}, {
		name:            "old object unused",
		oldObjectUnused: true,
		req:             configMapRequest(admissionv1.Update, `{"metadata":{"name":"cm"},"data":{"owner":"b"}}`, `{"metadata":{"name":"cm"},"dta":{}}`),
		wantSeen:        []string{"validate UPDATE ns/cm"},
	}, {
		name:        "object that does not decode",
		req:         configMapRequest(admissionv1.Create, `{"metadata":{"name":"cm"},"data":{},"data":{}}`, ""),
		wantCode:    http.StatusBadRequest,
		wantMessage: `duplicate field "data"`,
	}, {
		name: "another kind",
		req: func() *admissionv1.AdmissionRequest {
			req := configMapRequest(admissionv1.Create, `{"metadata":{"name":"cm"}}`, "")
			req.Kind.Kind = "Secret"
			return req
		}(),
		wantCode:    http.StatusBadRequest,
		wantMessage: "admits /v1, Kind=ConfigMap only",
	}, {
		name: "delete not judged",
		req:  configMapRequest(admissionv1.Delete, ``, `{"metadata":{"name":"cm"}}`),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newConfigMapWebhook()
			w.OldObjectUnused = tt.oldObjectUnused
			resp := w.handle(t, validating, tt.req)
			if tt.wantCode == 0 {
				if !resp.Allowed || resp.Patch != nil {
					t.Errorf("response %+v, want allowed without a patch", resp.Result)
				}
			} else if resp.Allowed || resp.Result.Code != tt.wantCode || !strings.Contains(resp.Result.Message, tt.wantMessage) {
				t.Errorf("response %+v, want a %d containing %q", resp.Result, tt.wantCode, tt.wantMessage)
			}
			if diff := cmp.Diff(tt.wantSeen, w.seen); diff != "" {
				t.Errorf("Validate was given (-want +got):\n%s", diff)
			}
		})
	}
}

func TestObjectName(t *testing.T) {
	req := &admissionv1.AdmissionRequest{Name: "from-request"}
	if got := ObjectName(req, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "own"}}); got != "own" {
		t.Errorf("ObjectName of a named object = %q, want its own name", got)
	}
	if got := ObjectName(req, &corev1.ConfigMap{}); got != "from-request" {
		t.Errorf("ObjectName of an unnamed object = %q, want the request's", got)
	}
}
