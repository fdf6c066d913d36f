package imagepulljob

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/featuregate"

	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/webhook/webhooktest"
)

func request(op admissionv1.Operation, object, oldObject string) *admissionv1.AdmissionRequest {
	req := &admissionv1.AdmissionRequest{
		Kind:      metav1.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "ImagePullJob"},
		Namespace: "ns", Name: "job", Operation: op,
		Object: runtime.RawExtension{Raw: []byte(object)},
	}
	if oldObject != "" {
		req.OldObject = runtime.RawExtension{Raw: []byte(oldObject)}
	}
	return req
}

// requestIn is request in version: the objects, written in v1alpha1, are rewritten into it.
func requestIn(version string, op admissionv1.Operation, object, oldObject string) *admissionv1.AdmissionRequest {
	in := func(s string) string {
		return strings.ReplaceAll(s, `"apps.kruise.io/v1alpha1"`, `"apps.kruise.io/`+version+`"`)
	}
	req := request(op, in(object), in(oldObject))
	req.Kind.Version = version
	return req
}

func gates(t *testing.T, on bool) featuregate.FeatureGate {
	t.Helper()
	g := features.NewFeatureGate()
	if err := g.SetFromMap(map[string]bool{string(features.ImagePullJobGate): on}); err != nil {
		t.Fatal(err)
	}
	return g
}

func handler(t *testing.T, name string, on bool) func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	for _, r := range Registrations(gates(t, on)) {
		if r.Name == name {
			if err := r.Validate(); err != nil {
				t.Fatal(err)
			}
			return r.Handler.Handle
		}
	}
	t.Fatalf("no webhook %s", name)
	return nil
}

func job(spec string) string {
	return `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"ImagePullJob","metadata":{"name":"job","namespace":"ns"},"spec":` + spec + `}`
}

func TestMutateDefaultsAndAddsFinalizer(t *testing.T) {
	resp := handler(t, MutatingName, true)(t.Context(), request(admissionv1.Create, job(`{"image":"nginx","completionPolicy":{"ttlSecondsAfterFinished":5}}`), ""))
	if !resp.Allowed {
		t.Fatalf("denied: %v", resp.Result)
	}
	var ops []struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, op := range ops {
		got[op.Path] = string(op.Value)
	}
	want := map[string]string{
		"/spec/completionPolicy": `{"type":"Always","ttlSecondsAfterFinished":5}`,
		"/spec/pullPolicy":       `{"timeoutSeconds":600,"backoffLimit":3}`,
		"/spec/imagePullPolicy":  `"IfNotPresent"`,
		"/metadata/finalizers":   `["apps.kruise.io/deletion-protection"]`,
	}
	for path, value := range want {
		if got[path] != value {
			t.Errorf("patch %s = %s, want %s", path, got[path], value)
		}
	}
	// UPDATE defaults but adds no finalizer.
	resp = handler(t, MutatingName, true)(t.Context(), request(admissionv1.Update, job(`{"image":"nginx"}`), job(`{"image":"nginx"}`)))
	if strings.Contains(string(resp.Patch), "finalizers") {
		t.Errorf("UPDATE patch adds the finalizer: %s", resp.Patch)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		wantFields []string // empty: allowed
	}{
		{"minimal", `{"image":"nginx"}`, nil},
		{"full", `{"image":"reg.io/app:1","pullSecrets":["reg"],"selector":{"names":["n1","n2"]},"parallelism":"2",
			"pullPolicy":{"timeoutSeconds":10,"backoffLimit":1},"completionPolicy":{"type":"Always","activeDeadlineSeconds":15,"ttlSecondsAfterFinished":5},
			"imagePullPolicy":"Always"}`, nil},
		{"bad image", `{"image":"Nginx:1"}`, []string{"spec.image"}},
		{"no image", `{}`, []string{"spec.image"}},
		{"duplicate names", `{"image":"nginx","selector":{"names":["n1","n1"]}}`, []string{"spec.selector.names[1]"}},
		{"names and labels", `{"image":"nginx","selector":{"names":["n1"],"matchLabels":{"a":"b"}}}`, []string{"spec.selector.names"}},
		{"selector and podSelector", `{"image":"nginx","selector":{"matchLabels":{"a":"b"}},"podSelector":{"matchLabels":{"a":"b"}}}`, []string{"spec.podSelector"}},
		{"negative parallelism", `{"image":"nginx","parallelism":-1}`, []string{"spec.parallelism"}},
		{"percent parallelism", `{"image":"nginx","parallelism":"50%"}`, []string{"spec.parallelism"}},
		{"deadline below timeout", `{"image":"nginx","pullPolicy":{"timeoutSeconds":10},"completionPolicy":{"type":"Always","activeDeadlineSeconds":5}}`, []string{"spec.completionPolicy.activeDeadlineSeconds"}},
		{"deadline below default timeout", `{"image":"nginx","completionPolicy":{"activeDeadlineSeconds":599}}`, []string{"spec.completionPolicy.activeDeadlineSeconds"}},
		{"never with ttl", `{"image":"nginx","completionPolicy":{"type":"Never","ttlSecondsAfterFinished":5}}`, []string{"spec.completionPolicy.ttlSecondsAfterFinished"}},
		{"never with deadline", `{"image":"nginx","completionPolicy":{"type":"Never","activeDeadlineSeconds":700}}`, []string{"spec.completionPolicy.activeDeadlineSeconds"}},
		{"bad type", `{"image":"nginx","completionPolicy":{"type":"Sometimes"}}`, []string{"spec.completionPolicy.type"}},
		{"bad pull policy", `{"image":"nginx","imagePullPolicy":"Never"}`, []string{"spec.imagePullPolicy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The same answer in both versions.
			for _, version := range []string{"v1alpha1", "v1beta1"} {
				resp := handler(t, ValidatingName, true)(t.Context(), requestIn(version, admissionv1.Create, job(tc.spec), ""))
				webhooktest.ExpectRefusedFields(t, version, resp, tc.wantFields)
			}
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	old := job(`{"image":"nginx","pullSecrets":["a"]}`)
	resp := handler(t, ValidatingName, true)(t.Context(), request(admissionv1.Update, job(`{"image":"nginx","pullSecrets":["b"]}`), old))
	if resp.Allowed || resp.Result.Code != http.StatusForbidden || !strings.Contains(resp.Result.Message, "spec.pullSecrets") {
		t.Errorf("changing pullSecrets: %+v, want 403 naming spec.pullSecrets", resp.Result)
	}
	resp = handler(t, ValidatingName, true)(t.Context(), request(admissionv1.Update, job(`{"image":"nginx:2","pullSecrets":["a"]}`), old))
	if !resp.Allowed {
		t.Errorf("changing the image: %+v, want allowed", resp.Result)
	}
}

func TestGateOff(t *testing.T) {
	v := handler(t, ValidatingName, false)
	if resp := v(t.Context(), request(admissionv1.Create, job(`{"image":"nginx"}`), "")); resp.Allowed || resp.Result.Code != http.StatusForbidden {
		t.Errorf("CREATE with the gate off: %+v, want 403", resp.Result)
	}
	withFinalizer := `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"ImagePullJob","metadata":{"name":"job","namespace":"ns","finalizers":["apps.kruise.io/deletion-protection"]},"spec":{"image":"nginx"}}`
	if resp := v(t.Context(), request(admissionv1.Update, job(`{"image":"nginx"}`), withFinalizer)); !resp.Allowed {
		t.Errorf("removing the finalizer with the gate off: %+v, want allowed", resp.Result)
	}
	if resp := v(t.Context(), request(admissionv1.Update, job(`{"image":"nginx:2"}`), job(`{"image":"nginx"}`))); resp.Allowed || resp.Result.Code != http.StatusForbidden {
		t.Errorf("changing the spec with the gate off: %+v, want 403", resp.Result)
	}
}

// Both versions are defaulted with the same patch, both paths are served, and other
// versions are refused.
func TestVersionsAndPaths(t *testing.T) {
	object := job(`{"image":"nginx"}`)
	alpha := handler(t, MutatingName, true)(t.Context(), requestIn("v1alpha1", admissionv1.Create, object, ""))
	beta := handler(t, MutatingName, true)(t.Context(), requestIn("v1beta1", admissionv1.Create, object, ""))
	if !alpha.Allowed || !beta.Allowed || len(alpha.Patch) == 0 || string(alpha.Patch) != string(beta.Patch) {
		t.Errorf("v1alpha1 patch %s, v1beta1 patch %s: want the same defaults", alpha.Patch, beta.Patch)
	}
	for _, name := range []string{MutatingName, ValidatingName} {
		resp := handler(t, name, true)(t.Context(), requestIn("v2", admissionv1.Create, object, ""))
		if resp.Allowed || resp.Result.Code != http.StatusBadRequest {
			t.Errorf("%s: v2 request answered %+v, want 400", name, resp.Result)
		}
	}
	want := map[string][2]string{
		MutatingName:   {"/mutate-apps-kruise-io-imagepulljob", "/mutate-apps-kruise-io-v1alpha1-imagepulljob"},
		ValidatingName: {"/validate-apps-kruise-io-imagepulljob", "/validate-apps-kruise-io-v1alpha1-imagepulljob"},
	}
	for _, r := range Registrations(gates(t, true)) {
		if w := want[r.Name]; r.Path != w[0] || len(r.LegacyPaths) != 1 || r.LegacyPaths[0] != w[1] {
			t.Errorf("%s served at %s and %v, want %v", r.Name, r.Path, r.LegacyPaths, w)
		}
		if v := r.Rules[0].APIVersions; strings.Join(v, ",") != "v1alpha1,v1beta1" {
			t.Errorf("%s versions %v, want v1alpha1 and v1beta1", r.Name, v)
		}
	}
}
