package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The two-version resource of these tests: ConfigMaps of the core group in hub version v1
// and spoke version v0. A v0 ConfigMap names its owner in data key "legacy-owner", which
// converts to v1's "owner"; v0 defaults "mode" to "v0-auto" and v1 to "auto".
var spokeConfigMapKind = schema.GroupVersionKind{Version: "v0", Kind: "ConfigMap"}

func configMapUp(in, out *corev1.ConfigMap) {
	in.DeepCopyInto(out)
	out.APIVersion = "v1"
	if owner, ok := out.Data["legacy-owner"]; ok {
		delete(out.Data, "legacy-owner")
		out.Data["owner"] = owner
	}
}

func newTwoVersionWebhook() *configMapWebhook {
	w := newConfigMapWebhook()
	w.Spokes = []Spoke[corev1.ConfigMap, *corev1.ConfigMap]{
		NewSpoke(spokeConfigMapKind, func(req *admissionv1.AdmissionRequest, cm *corev1.ConfigMap) []Addition {
			w.seen = append(w.seen, "default v0 "+string(req.Operation)+" "+cm.Name)
			if _, ok := cm.Data["mode"]; ok {
				return nil
			}
			return []Addition{{Path: "/data/mode", Value: "v0-auto"}}
		}, configMapUp),
	}
	w.LegacyMutatingPaths = []string{"/mutate-v1-configmap"}
	w.LegacyValidatingPaths = []string{"/validate-v1-configmap"}
	return w
}

func versionedRequest(version string, op admissionv1.Operation, object, oldObject string) *admissionv1.AdmissionRequest {
	req := configMapRequest(op, object, oldObject)
	req.Kind.Version = version
	req.Resource.Version = version
	return req
}

func TestResourceWebhookVersionsRegistrations(t *testing.T) {
	w := newTwoVersionWebhook()
	regs := w.Registrations()
	if len(regs) != 2 {
		t.Fatalf("%d registrations, want 2", len(regs))
	}
	for i, want := range []struct{ path, legacy string }{{"/mutate-configmap", "/mutate-v1-configmap"}, {"/validate-configmap", "/validate-v1-configmap"}} {
		r := regs[i]
		if err := r.Validate(); err != nil {
			t.Error(err)
		}
		if r.Path != want.path || strings.Join(r.LegacyPaths, ",") != want.legacy {
			t.Errorf("registration %s at %s and %v, want %s and %s", r.Name, r.Path, r.LegacyPaths, want.path, want.legacy)
		}
		// Spokes first, the hub last.
		if got := r.Rules[0].APIVersions; strings.Join(got, ",") != "v0,v1" {
			t.Errorf("registration %s versions %v, want v0 and v1", r.Name, got)
		}
	}
}

func TestResourceWebhookDispatchesOnVersion(t *testing.T) {
	const mutating, validating = "mconfigmap.bosun.test", "vconfigmap.bosun.test"
	t.Run("spoke defaults", func(t *testing.T) {
		w := newTwoVersionWebhook()
		resp := w.handle(t, mutating, versionedRequest("v0", admissionv1.Create, `{"apiVersion":"v0","kind":"ConfigMap","metadata":{"name":"cm"},"data":{}}`, ""))
		if want := `[{"op":"add","path":"/data/mode","value":"v0-auto"}]`; !resp.Allowed || string(resp.Patch) != want {
			t.Errorf("response %+v patch %s, want allowed with %s", resp.Result, resp.Patch, want)
		}
		if diff := cmp.Diff([]string{"default v0 CREATE cm"}, w.seen); diff != "" {
			t.Errorf("defaults given (-want +got):\n%s", diff)
		}
	})
	t.Run("hub defaults", func(t *testing.T) {
		w := newTwoVersionWebhook()
		resp := w.handle(t, mutating, versionedRequest("v1", admissionv1.Create, `{"metadata":{"name":"cm"},"data":{}}`, ""))
		if want := `[{"op":"add","path":"/data/mode","value":"auto"}]`; !resp.Allowed || string(resp.Patch) != want {
			t.Errorf("response %+v patch %s, want allowed with %s", resp.Result, resp.Patch, want)
		}
	})
	t.Run("spoke judged as its conversion", func(t *testing.T) {
		w := newTwoVersionWebhook()
		resp := w.handle(t, validating, versionedRequest("v0", admissionv1.Update,
			`{"apiVersion":"v0","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"legacy-owner":"me"}}`,
			`{"apiVersion":"v0","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"legacy-owner":"me"}}`))
		if !resp.Allowed {
			t.Errorf("denied: %+v", resp.Result)
		}
		if diff := cmp.Diff([]string{"validate UPDATE ns/cm old owner me"}, w.seen); diff != "" {
			t.Errorf("Validate was given (-want +got):\n%s", diff)
		}
		// The same violation gets the same answer in both versions.
		v0 := w.handle(t, validating, versionedRequest("v0", admissionv1.Create, `{"apiVersion":"v0","kind":"ConfigMap","metadata":{"name":"cm"}}`, ""))
		v1 := w.handle(t, validating, versionedRequest("v1", admissionv1.Create, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`, ""))
		if diff := cmp.Diff(v1, v0); diff != "" || v0.Allowed || v0.Result.Code != http.StatusBadRequest {
			t.Errorf("v0 and v1 answers differ or allow (-v1 +v0):\n%s", diff)
		}
	})
	t.Run("spoke object of the hub version", func(t *testing.T) {
		w := newTwoVersionWebhook()
		resp := w.handle(t, validating, versionedRequest("v0", admissionv1.Create, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`, ""))
		if resp.Allowed || resp.Result.Code != http.StatusBadRequest || !strings.Contains(resp.Result.Message, "request.object is v1 ConfigMap, not a /v0, Kind=ConfigMap") {
			t.Errorf("response %+v, want a 400 naming the versions", resp.Result)
		}
	})
	for _, name := range []string{mutating, validating} {
		t.Run("unknown version "+name, func(t *testing.T) {
			w := newTwoVersionWebhook()
			resp := w.handle(t, name, versionedRequest("v2", admissionv1.Create, `{"metadata":{"name":"cm"}}`, ""))
			if resp.Allowed || resp.Result.Code != http.StatusBadRequest ||
				!strings.Contains(resp.Result.Message, "admits /v0, Kind=ConfigMap and /v1, Kind=ConfigMap only, not /v2, Kind=ConfigMap") {
				t.Errorf("response %+v, want a 400 naming the versions served", resp.Result)
			}
			if len(w.seen) != 0 {
				t.Errorf("functions called: %v", w.seen)
			}
		})
	}
}

func TestResourceWebhookReservedAnnotations(t *testing.T) {
	const reserved = `"annotations":{"conversion.bosun.dev/v0":"{}"}`
	for _, tc := range []struct {
		name, version string
		op            admissionv1.Operation
		object, old   string
		allowed       bool
	}{
		{"created in the hub", "v1", admissionv1.Create, `{"metadata":{"name":"cm",` + reserved + `},"data":{"owner":"me","mode":"m"}}`, "", false},
		{"created in the spoke", "v0", admissionv1.Create, `{"apiVersion":"v0","kind":"ConfigMap","metadata":{"name":"cm",` + reserved + `},"data":{"legacy-owner":"me","mode":"m"}}`, "", false},
		{"added on update", "v1", admissionv1.Update, `{"metadata":{"name":"cm",` + reserved + `},"data":{"owner":"me","mode":"m"}}`,
			`{"metadata":{"name":"cm"},"data":{"owner":"me"}}`, false},
		{"changed on update", "v1", admissionv1.Update, `{"metadata":{"name":"cm",` + reserved + `},"data":{"owner":"me","mode":"m"}}`,
			`{"metadata":{"name":"cm","annotations":{"conversion.bosun.dev/v0":"{\"a\":1}"}},"data":{"owner":"me"}}`, false},
		// A client writing back what it read keeps what a conversion recorded.
		{"kept on update", "v0", admissionv1.Update, `{"apiVersion":"v0","kind":"ConfigMap","metadata":{"name":"cm",` + reserved + `},"data":{"legacy-owner":"me","mode":"m"}}`,
			`{"apiVersion":"v0","kind":"ConfigMap","metadata":{"name":"cm",` + reserved + `},"data":{"legacy-owner":"me"}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newTwoVersionWebhook()
			for _, name := range []string{"mconfigmap.bosun.test", "vconfigmap.bosun.test"} {
				resp := w.handle(t, name, versionedRequest(tc.version, tc.op, tc.object, tc.old))
				if tc.allowed {
					if !resp.Allowed {
						t.Errorf("%s denied: %+v", name, resp.Result)
					}
					continue
				}
				if resp.Allowed || resp.Result.Code != http.StatusBadRequest ||
					!strings.Contains(resp.Result.Message, "annotation conversion.bosun.dev/v0 is reserved for version conversion") {
					t.Errorf("%s answered %+v, want a 400 naming the reserved annotation", name, resp.Result)
				}
			}
		})
	}
}

func TestResourceWebhookStaleCarriers(t *testing.T) {
	w := newTwoVersionWebhook()
	w.StaleCarriers = func(cm *corev1.ConfigMap) []StaleCarrier {
		if value, ok := cm.Annotations["example.com/owner"]; ok && value != cm.Data["owner"] {
			return []StaleCarrier{{Annotation: "example.com/owner", Warning: "removed example.com/owner"}}
		}
		return nil
	}
	stale := `{"metadata":{"name":"cm","annotations":{"example.com/owner":"you","keep":"x"}},"data":{"owner":"me"}}`
	resp := w.handle(t, "mconfigmap.bosun.test", versionedRequest("v1", admissionv1.Create, stale, ""))
	want := `[{"op":"remove","path":"/metadata/annotations/example.com~1owner"},{"op":"add","path":"/data/mode","value":"auto"}]`
	if !resp.Allowed || string(resp.Patch) != want {
		t.Errorf("response %+v patch %s, want allowed with %s", resp.Result, resp.Patch, want)
	}
	if diff := cmp.Diff([]string{"removed example.com/owner"}, resp.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	patched, err := applyJSONPatch([]byte(stale), resp.Patch)
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := json.Unmarshal(patched, &cm); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"keep": "x"}, cm.Annotations); diff != "" {
		t.Errorf("annotations after the patch (-want +got):\n%s", diff)
	}

	// An annotation that agrees, or one in the spoke version, is left alone.
	for _, req := range []*admissionv1.AdmissionRequest{
		versionedRequest("v1", admissionv1.Create, `{"metadata":{"name":"cm","annotations":{"example.com/owner":"me"}},"data":{"owner":"me","mode":"m"}}`, ""),
		versionedRequest("v0", admissionv1.Create, `{"apiVersion":"v0","kind":"ConfigMap","metadata":{"name":"cm","annotations":{"example.com/owner":"you"}},"data":{"legacy-owner":"me","mode":"m"}}`, ""),
	} {
		if resp := w.handle(t, "mconfigmap.bosun.test", req); !resp.Allowed || resp.Patch != nil || len(resp.Warnings) != 0 {
			t.Errorf("%s: response %+v patch %s warnings %v, want allowed unchanged", req.Kind.Version, resp.Result, resp.Patch, resp.Warnings)
		}
	}
}

func TestResourceWebhookMutateJudgesTheHub(t *testing.T) {
	w := newTwoVersionWebhook()
	w.Default = nil
	var got []string
	w.Mutate = func(_ context.Context, req *admissionv1.AdmissionRequest, cm, old *corev1.ConfigMap) *admissionv1.AdmissionResponse {
		seen := string(req.Operation) + " " + cm.Namespace + "/" + cm.Name + " owner " + cm.Data["owner"]
		if old != nil {
			seen += " old owner " + old.Data["owner"]
		}
		got = append(got, seen)
		return Allowed()
	}
	w.handle(t, "mconfigmap.bosun.test", versionedRequest("v0", admissionv1.Create, `{"apiVersion":"v0","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"legacy-owner":"a"}}`, ""))
	w.handle(t, "mconfigmap.bosun.test", versionedRequest("v1", admissionv1.Update, `{"metadata":{"name":"cm"},"data":{"owner":"b"}}`, `{"metadata":{"name":"cm"},"data":{"owner":"a"}}`))
	if diff := cmp.Diff([]string{"CREATE ns/cm owner a", "UPDATE ns/cm owner b old owner a"}, got); diff != "" {
		t.Errorf("Mutate was given (-want +got):\n%s", diff)
	}
	resp := w.handle(t, "mconfigmap.bosun.test", versionedRequest("v1", admissionv1.Update, `{"metadata":{"name":"cm"}}`, `{"dta":1}`))
	if resp.Allowed || resp.Result.Code != http.StatusBadRequest {
		t.Errorf("old object that does not decode answered %+v, want 400", resp.Result)
	}
}

func TestServerAnswersOnLegacyPaths(t *testing.T) {
	w := newTwoVersionWebhook()
	s := NewServer(ServerOptions{})
	for _, r := range w.Registrations() {
		if err := s.Register(r); err != nil {
			t.Fatal(err)
		}
	}
	req := versionedRequest("v1", admissionv1.Create, `{"metadata":{"name":"cm"},"data":{}}`, "")
	req.UID = "uid-1"
	for _, path := range []string{"/validate-configmap", "/validate-v1-configmap"} {
		resp := readResponse(t, post(testContext(t), s.Handler(), path, reviewBody(t, req)), "uid-1")
		if resp.Allowed || resp.Result.Code != http.StatusBadRequest || resp.Result.Message != "cm has no owner" {
			t.Errorf("%s answered %+v, want the webhook's 400", path, resp.Result)
		}
	}
	// The legacy paths are served, never written into a configuration.
	for _, r := range s.Registrations() {
		if strings.Contains(r.Path, "-v1-") {
			t.Errorf("registration %s points at legacy path %s", r.Name, r.Path)
		}
	}
	// A path is served by one webhook only, legacy or not.
	clash := newRegistration("clash.bosun.test", allow)
	clash.LegacyPaths = []string{"/mutate-v1-configmap"}
	if err := s.Register(clash); err == nil || !strings.Contains(err.Error(), `path /mutate-v1-configmap is already served by webhook "mconfigmap.bosun.test"`) {
		t.Errorf("Register of a clashing legacy path: %v", err)
	}
}

func TestRegistrationLegacyPathsAreValidated(t *testing.T) {
	r := newRegistration("legacy.bosun.test", allow)
	r.LegacyPaths = []string{"old-path"}
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), `path "old-path" must start with /`) {
		t.Errorf("Validate: %v, want the legacy path refused", err)
	}
	r.LegacyPaths = []string{"/legacy.bosun.test"}
	if err := NewServer(ServerOptions{}).Register(r); err == nil || !strings.Contains(err.Error(), "is listed twice") {
		t.Errorf("Register of a legacy path equal to the path: %v", err)
	}
}
