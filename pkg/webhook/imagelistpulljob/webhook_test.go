package imagelistpulljob

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/featuregate"

	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/webhook"
	"github.com/bosun-dev/bosun/pkg/webhook/webhooktest"
)

func request(op admissionv1.Operation, object, oldObject string) *admissionv1.AdmissionRequest {
	req := &admissionv1.AdmissionRequest{
		Kind:      metav1.GroupVersionKind{Group: "apps.kruise.io", Version: "v1beta1", Kind: "ImageListPullJob"},
		Resource:  metav1.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "imagelistpulljobs"},
		Namespace: "ns", Name: "list", Operation: op,
		Object: runtime.RawExtension{Raw: []byte(object)},
	}
	if oldObject != "" {
		req.OldObject = runtime.RawExtension{Raw: []byte(oldObject)}
	}
	return req
}

// requestIn is request in version: the objects, written in v1beta1, are rewritten into it.
func requestIn(version string, op admissionv1.Operation, object, oldObject string) *admissionv1.AdmissionRequest {
	in := func(s string) string {
		return strings.ReplaceAll(s, `"apps.kruise.io/v1beta1"`, `"apps.kruise.io/`+version+`"`)
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

func registration(t *testing.T, name string, on bool) webhook.Registration {
	t.Helper()
	for _, r := range Registrations(gates(t, on)) {
		if r.Name == name {
			if err := r.Validate(); err != nil {
				t.Fatal(err)
			}
			return r
		}
	}
	t.Fatalf("no webhook %s", name)
	return webhook.Registration{}
}

func handler(t *testing.T, name string, on bool) func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return registration(t, name, on).Handler.Handle
}

func listJob(spec string) string {
	return `{"apiVersion":"apps.kruise.io/v1beta1","kind":"ImageListPullJob","metadata":{"name":"list","namespace":"ns"},"spec":` + spec + `}`
}

func listJobWithAnnotation(value, spec string) string {
	return `{"apiVersion":"apps.kruise.io/v1beta1","kind":"ImageListPullJob","metadata":{"name":"list","namespace":"ns","annotations":{"imagelistpulljob.bosun.dev/max-active-images":` +
		value + `}},"spec":` + spec + `}`
}

func TestRegistrations(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		typ        webhook.Type
	}{
		{"mimagelistpulljob-v1beta1.kb.io", "/mutate-apps-kruise-io-imagelistpulljob", webhook.Mutating},
		{"vimagelistpulljob-v1beta1.kb.io", "/validate-apps-kruise-io-imagelistpulljob", webhook.Validating},
	} {
		r := registration(t, tc.name, true)
		if r.Path != tc.path || r.Type != tc.typ {
			t.Errorf("%s at %s (%s), want %s (%s)", r.Name, r.Path, r.Type, tc.path, tc.typ)
		}
		want := admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps.kruise.io"}, APIVersions: []string{"v1alpha1", "v1beta1"}, Resources: []string{"imagelistpulljobs"}},
		}
		if len(r.Rules) != 1 || fmt.Sprint(r.Rules[0]) != fmt.Sprint(want) {
			t.Errorf("%s rules %+v, want [%+v]", r.Name, r.Rules, want)
		}
	}
}

func patchOf(t *testing.T, resp *admissionv1.AdmissionResponse) map[string]string {
	t.Helper()
	if !resp.Allowed {
		t.Fatalf("denied: %v", resp.Result)
	}
	got := map[string]string{}
	if len(resp.Patch) == 0 {
		return got
	}
	var ops []struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		got[op.Path] = string(op.Value)
	}
	return got
}

func TestMutateDefaults(t *testing.T) {
	mutate := handler(t, MutatingName, true)
	got := patchOf(t, mutate(t.Context(), request(admissionv1.Create, listJob(`{"images":["nginx"],"completionPolicy":{"ttlSecondsAfterFinished":5}}`), "")))
	want := map[string]string{
		"/spec/completionPolicy": `{"type":"Always","ttlSecondsAfterFinished":5}`,
		"/spec/pullPolicy":       `{"timeoutSeconds":600,"backoffLimit":3}`,
	}
	if len(got) != len(want) {
		t.Errorf("patch %v, want %v (no imagePullPolicy, no finalizer)", got, want)
	}
	for path, value := range want {
		if got[path] != value {
			t.Errorf("patch %s = %s, want %s", path, got[path], value)
		}
	}

	// Already defaulted: nothing to change, on CREATE or UPDATE.
	defaulted := listJob(`{"images":["nginx"],"completionPolicy":{"type":"Never"},"pullPolicy":{"timeoutSeconds":60,"backoffLimit":0}}`)
	if got := patchOf(t, mutate(t.Context(), request(admissionv1.Update, defaulted, defaulted))); len(got) != 0 {
		t.Errorf("patch of a defaulted list job %v, want none", got)
	}

	// An empty spec is set whole.
	got = patchOf(t, mutate(t.Context(), request(admissionv1.Create, `{"apiVersion":"apps.kruise.io/v1beta1","kind":"ImageListPullJob","metadata":{"name":"list"}}`, "")))
	if _, ok := got["/spec"]; !ok || len(got) != 1 {
		t.Errorf("patch of an empty spec %v, want /spec alone", got)
	}
}

func TestValidate(t *testing.T) {
	many := make([]string, MaxImages+1)
	for i := range many {
		many[i] = fmt.Sprintf(`"img%d"`, i)
	}
	for _, tc := range []struct {
		name, object string
		wantFields   []string // empty: allowed
	}{
		{"minimal", listJob(`{"images":["nginx"]}`), nil},
		{"full", listJob(`{"images":["nginx:1.25","reg.io/team/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"],
			"pullSecrets":["reg"],"selector":{"names":["n1","n2"]},"parallelism":"2","pullPolicy":{"timeoutSeconds":10,"backoffLimit":1},
			"completionPolicy":{"type":"Always","activeDeadlineSeconds":15,"ttlSecondsAfterFinished":5},"sandboxConfig":{"labels":{"a":"b"}},
			"imagePullPolicy":"Always"}`), nil},
		{"255 images", listJob(`{"images":[` + strings.Join(many[:MaxImages], ",") + `]}`), nil},
		{"no images", listJob(`{"images":[]}`), []string{"spec.images"}},
		{"256 images", listJob(`{"images":[` + strings.Join(many, ",") + `]}`), []string{"spec.images"}},
		{"duplicate image", listJob(`{"images":["nginx","redis","nginx"]}`), []string{"spec.images[2]"}},
		{"bad image", listJob(`{"images":["nginx","Nginx:1"]}`), []string{"spec.images[1]"}},
		{"empty image", listJob(`{"images":[""]}`), []string{"spec.images[0]"}},
		{"selector and podSelector", listJob(`{"images":["nginx"],"selector":{"matchLabels":{"a":"b"}},"podSelector":{"matchLabels":{"a":"b"}}}`), []string{"spec.podSelector"}},
		{"names and labels", listJob(`{"images":["nginx"],"selector":{"names":["n1"],"matchLabels":{"a":"b"}}}`), []string{"spec.selector.names"}},
		{"duplicate names", listJob(`{"images":["nginx"],"selector":{"names":["n1","n1"]}}`), []string{"spec.selector.names[1]"}},
		{"percent parallelism", listJob(`{"images":["nginx"],"parallelism":"50%"}`), []string{"spec.parallelism"}},
		{"negative parallelism", listJob(`{"images":["nginx"],"parallelism":-1}`), []string{"spec.parallelism"}},
		// OpenKruise admits this one; its children are then refused forever.
		{"deadline below timeout", listJob(`{"images":["nginx"],"pullPolicy":{"timeoutSeconds":10},"completionPolicy":{"type":"Always","activeDeadlineSeconds":5}}`), []string{"spec.completionPolicy.activeDeadlineSeconds"}},
		{"deadline below default timeout", listJob(`{"images":["nginx"],"completionPolicy":{"activeDeadlineSeconds":599}}`), []string{"spec.completionPolicy.activeDeadlineSeconds"}},
		{"never with ttl", listJob(`{"images":["nginx"],"completionPolicy":{"type":"Never","ttlSecondsAfterFinished":5}}`), []string{"spec.completionPolicy.ttlSecondsAfterFinished"}},
		{"bad pull policy", listJob(`{"images":["nginx"],"imagePullPolicy":"Never"}`), []string{"spec.imagePullPolicy"}},
		{"bad pull secret", listJob(`{"images":["nginx"],"pullSecrets":["Reg"]}`), []string{"spec.pullSecrets[0]"}},
		{"max active images", listJobWithAnnotation(`"3"`, `{"images":["nginx"]}`), nil},
		{"max active images zero", listJobWithAnnotation(`"0"`, `{"images":["nginx"]}`), []string{"metadata.annotations[imagelistpulljob.bosun.dev/max-active-images]"}},
		{"max active images not a number", listJobWithAnnotation(`"two"`, `{"images":["nginx"]}`), []string{"metadata.annotations[imagelistpulljob.bosun.dev/max-active-images]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The same answer in both versions.
			for _, version := range []string{"v1beta1", "v1alpha1"} {
				resp := handler(t, ValidatingName, true)(t.Context(), requestIn(version, admissionv1.Create, tc.object, ""))
				webhooktest.ExpectRefusedFields(t, version, resp, tc.wantFields)
			}
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	validate := handler(t, ValidatingName, true)
	old := listJob(`{"images":["nginx"],"pullSecrets":["a"]}`)
	if resp := validate(t.Context(), request(admissionv1.Update, listJob(`{"images":["nginx","redis"],"pullSecrets":["b"]}`), old)); !resp.Allowed {
		t.Errorf("changing images and pullSecrets: %+v, want allowed", resp.Result)
	}
	if resp := validate(t.Context(), request(admissionv1.Update, listJob(`{"images":["nginx","nginx"]}`), old)); resp.Allowed || resp.Result.Code != http.StatusBadRequest {
		t.Errorf("an invalid change: %+v, want 400", resp.Result)
	}
	// A list job written invalid while the webhook was away can still be labelled.
	invalidStored := listJob(`{"images":["Nginx"]}`)
	labelled := `{"apiVersion":"apps.kruise.io/v1beta1","kind":"ImageListPullJob","metadata":{"name":"list","namespace":"ns","labels":{"controller-revision-hash":"h"}},"spec":{"images":["Nginx"]}}`
	if resp := validate(t.Context(), request(admissionv1.Update, labelled, invalidStored)); !resp.Allowed {
		t.Errorf("labelling a stored list job: %+v, want allowed", resp.Result)
	}
	// but not given a bad limit.
	if resp := validate(t.Context(), request(admissionv1.Update, listJobWithAnnotation(`"-1"`, `{"images":["nginx"]}`), listJob(`{"images":["nginx"]}`))); resp.Allowed {
		t.Error("adding an invalid max-active-images: allowed, want 400")
	}
}

func TestGateOff(t *testing.T) {
	validate := handler(t, ValidatingName, false)
	if resp := validate(t.Context(), request(admissionv1.Create, listJob(`{"images":["nginx"]}`), "")); resp.Allowed || resp.Result.Code != http.StatusForbidden {
		t.Errorf("CREATE with the gate off: %+v, want 403", resp.Result)
	}
	if resp := validate(t.Context(), request(admissionv1.Update, listJob(`{"images":["nginx","redis"]}`), listJob(`{"images":["nginx"]}`))); resp.Allowed || resp.Result.Code != http.StatusForbidden {
		t.Errorf("changing the spec with the gate off: %+v, want 403", resp.Result)
	}
	labelled := `{"apiVersion":"apps.kruise.io/v1beta1","kind":"ImageListPullJob","metadata":{"name":"list","namespace":"ns","labels":{"controller-revision-hash":"h"}},"spec":{"images":["nginx"]}}`
	if resp := validate(t.Context(), request(admissionv1.Update, labelled, listJob(`{"images":["nginx"]}`))); !resp.Allowed {
		t.Errorf("labelling with the gate off: %+v, want allowed", resp.Result)
	}
}

// A request of another kind or version is a misconfiguration: refused, not judged.
func TestOtherKindRefused(t *testing.T) {
	req := request(admissionv1.Create, listJob(`{"images":["nginx"]}`), "")
	req.Kind.Version = "v1alpha1"
	if resp := handler(t, ValidatingName, true)(t.Context(), req); resp.Allowed || resp.Result.Code != http.StatusBadRequest {
		t.Errorf("a v1alpha1 request: %+v, want 400", resp.Result)
	}
}

// v1alpha1 list jobs are defaulted with the same patch as v1beta1 ones.
func TestV1alpha1Defaults(t *testing.T) {
	object := listJob(`{"images":["nginx"]}`)
	alpha := handler(t, MutatingName, true)(t.Context(), requestIn("v1alpha1", admissionv1.Create, object, ""))
	beta := handler(t, MutatingName, true)(t.Context(), requestIn("v1beta1", admissionv1.Create, object, ""))
	if !alpha.Allowed || !beta.Allowed || len(alpha.Patch) == 0 || string(alpha.Patch) != string(beta.Patch) {
		t.Errorf("v1alpha1 patch %s, v1beta1 patch %s: want the same defaults", alpha.Patch, beta.Patch)
	}
}
