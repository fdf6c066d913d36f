package daemonset

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	"github.com/bosun-dev/bosun/pkg/webhook"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A DaemonSet as a user would write it: nothing defaulted.
const userDaemonSet = `{
  "apiVersion": "apps.kruise.io/v1alpha1",
  "kind": "DaemonSet",
  "metadata": {"name": "agent", "namespace": "kube-system"},
  "spec": {
    "selector": {"matchLabels": {"app": "agent"}},
    "template": {
      "metadata": {"labels": {"app": "agent"}},
      "spec": {"containers": [{"name": "agent", "image": "registry.example/agent:1"}]}
    }
  }
}`

func newTestHandler(t *testing.T) http.Handler {
	t.Helper()
	s := webhook.NewServer(webhook.ServerOptions{})
	for _, r := range Registrations() {
		if err := s.Register(r); err != nil {
			t.Fatalf("Register: %v", err)
		}
	}
	return s.Handler()
}

// review sends an admission request for object (and oldObject, on UPDATE) to path and
// returns the response.
func review(t *testing.T, path string, op admissionv1.Operation, object, oldObject string) *admissionv1.AdmissionResponse {
	t.Helper()
	req := &admissionv1.AdmissionRequest{
		UID:       types.UID("uid-1"),
		Kind:      metav1.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "DaemonSet"},
		Resource:  metav1.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "daemonsets"},
		Namespace: "kube-system",
		Name:      "agent",
		Operation: op,
	}
	// A nil Raw is encoded as null, as the API server sends a missing object.
	if object != "" {
		req.Object = runtime.RawExtension{Raw: []byte(object)}
	}
	if oldObject != "" {
		req.OldObject = runtime.RawExtension{Raw: []byte(oldObject)}
	}
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
	if err != nil {
		t.Fatalf("encoding the review: %v", err)
	}
	r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	newTestHandler(t).ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("HTTP status %d, want 200; body: %s", w.Code, w.Body)
	}
	var answer admissionv1.AdmissionReview
	if err := json.Unmarshal(w.Body.Bytes(), &answer); err != nil {
		t.Fatalf("decoding the answer: %v; body: %s", err, w.Body)
	}
	if answer.Response == nil || answer.Response.UID != req.UID {
		t.Fatalf("answer does not respond to the request: %s", w.Body)
	}
	return answer.Response
}

func TestRegistrations(t *testing.T) {
	regs := Registrations()
	if len(regs) != 2 {
		t.Fatalf("%d registrations, want 2", len(regs))
	}
	want := []struct {
		name, path, legacyPath string
		typ                    webhook.Type
	}{
		{"mdaemonset.kb.io", "/mutate-apps-kruise-io-daemonset", "/mutate-apps-kruise-io-v1alpha1-daemonset", webhook.Mutating},
		{"vdaemonset.kb.io", "/validate-apps-kruise-io-daemonset", "/validate-apps-kruise-io-v1alpha1-daemonset", webhook.Validating},
	}
	for i, w := range want {
		r := regs[i]
		if r.Name != w.name || r.Path != w.path || r.Type != w.typ {
			t.Errorf("registration %d is %s %s %s, want %s %s %s", i, r.Name, r.Path, r.Type, w.name, w.path, w.typ)
		}
		if strings.Join(r.LegacyPaths, ",") != w.legacyPath {
			t.Errorf("registration %d is also served at %v, want %s", i, r.LegacyPaths, w.legacyPath)
		}
		if err := r.Validate(); err != nil {
			t.Errorf("registration %d: %v", i, err)
		}
		if len(r.Rules) != 1 {
			t.Fatalf("registration %d has %d rules, want 1", i, len(r.Rules))
		}
		rule := r.Rules[0]
		ops := rule.Operations
		if len(ops) != 2 || ops[0] != admissionregistrationv1.Create || ops[1] != admissionregistrationv1.Update {
			t.Errorf("registration %d operations %v, want CREATE and UPDATE", i, ops)
		}
		if strings.Join(rule.APIGroups, ",") != "apps.kruise.io" || strings.Join(rule.APIVersions, ",") != "v1alpha1,v1beta1" || strings.Join(rule.Resources, ",") != "daemonsets" {
			t.Errorf("registration %d rule %+v, want apps.kruise.io v1alpha1 and v1beta1 daemonsets", i, rule.Rule)
		}
	}
}

type patchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value"`
}

func TestMutateCreate(t *testing.T) {
	resp := review(t, MutatingPath, admissionv1.Create, userDaemonSet, "")
	if !resp.Allowed {
		t.Fatalf("denied: %+v", resp.Result)
	}
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("patch type %v, want JSONPatch", resp.PatchType)
	}
	var ops []patchOp
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		t.Fatalf("decoding the patch: %v; patch: %s", err, resp.Patch)
	}
	byPath := map[string]patchOp{}
	for _, op := range ops {
		byPath[op.Path] = op
	}
	want := map[string]string{
		"/spec/burstReplicas":        `250`,
		"/spec/revisionHistoryLimit": `10`,
		"/spec/updateStrategy":       `{"type":"RollingUpdate","rollingUpdate":{"rollingUpdateType":"Standard","maxUnavailable":1,"maxSurge":0}}`,
	}
	for path, value := range want {
		op, ok := byPath[path]
		if !ok {
			t.Errorf("no operation on %s; patch: %s", path, resp.Patch)
			continue
		}
		if op.Op != "add" {
			t.Errorf("%s: op %q, want add", path, op.Op)
		}
		var got, wantValue any
		if err := json.Unmarshal(op.Value, &got); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if err := json.Unmarshal([]byte(value), &wantValue); err != nil {
			t.Fatal(err)
		}
		gotJSON, _ := json.Marshal(got)
		wantJSON, _ := json.Marshal(wantValue)
		if !bytes.Equal(gotJSON, wantJSON) {
			t.Errorf("%s: value %s, want %s", path, gotJSON, wantJSON)
		}
	}
	for _, op := range ops {
		if op.Op == "remove" {
			t.Errorf("the patch removes %s from the user's object", op.Path)
		}
		if strings.HasPrefix(op.Path, "/spec/template/spec") {
			t.Errorf("the patch changes the pod template: %s %s", op.Op, op.Path)
		}
	}
}

func TestMutateAlreadyDefaulted(t *testing.T) {
	ds := validDaemonSet()
	raw, err := json.Marshal(ds)
	if err != nil {
		t.Fatal(err)
	}
	resp := review(t, MutatingPath, admissionv1.Update, string(raw), string(raw))
	if !resp.Allowed || len(resp.Patch) != 0 {
		t.Errorf("defaulted object: allowed %t, patch %s; want allowed without patch", resp.Allowed, resp.Patch)
	}
}

func TestBadObjects(t *testing.T) {
	tests := []struct {
		name    string
		object  string
		wantMsg string
	}{
		{"unknown field", strings.Replace(userDaemonSet, `"selector"`, `"replicas": 3, "selector"`, 1), `unknown field "spec.replicas"`},
		{"wrong type", strings.Replace(userDaemonSet, `"spec": {`, `"spec": {"minReadySeconds": "soon",`, 1), "minReadySeconds"},
		{"field name in the wrong case", strings.Replace(userDaemonSet, `"selector"`, `"Selector"`, 1), `unknown field "spec.Selector"`},
		{"other kind", strings.Replace(userDaemonSet, `"kind": "DaemonSet"`, `"kind": "CloneSet"`, 1), "CloneSet"},
		{"null object", ``, "request.object is empty"},
	}
	for _, tt := range tests {
		for _, path := range []string{MutatingPath, ValidatingPath} {
			t.Run(tt.name+" "+path, func(t *testing.T) {
				resp := review(t, path, admissionv1.Create, tt.object, "")
				if resp.Allowed {
					t.Fatalf("allowed, want a 400 denial")
				}
				if resp.Result == nil || resp.Result.Code != http.StatusBadRequest {
					t.Fatalf("result %+v, want code 400", resp.Result)
				}
				if !strings.Contains(resp.Result.Message, tt.wantMsg) {
					t.Errorf("message %q does not contain %q", resp.Result.Message, tt.wantMsg)
				}
			})
		}
	}
}

func TestValidateCreate(t *testing.T) {
	// The mutating webhook runs first: validate what it produces.
	defaulted := validDaemonSet()
	raw, _ := json.Marshal(defaulted)
	if resp := review(t, ValidatingPath, admissionv1.Create, string(raw), ""); !resp.Allowed {
		t.Fatalf("valid DaemonSet denied: %+v", resp.Result)
	}

	bad := validDaemonSet()
	bad.Spec.Template.Spec.RestartPolicy = "OnFailure"
	bad.Spec.UpdateStrategy.RollingUpdate.Partition = intOrStr(intstr.FromString("120%"))
	raw, _ = json.Marshal(bad)
	resp := review(t, ValidatingPath, admissionv1.Create, string(raw), "")
	checkInvalid(t, resp, "spec.template.spec.restartPolicy", "spec.updateStrategy.rollingUpdate.partition")
}

func TestValidateUpdateHandler(t *testing.T) {
	oldDS := validDaemonSet()
	oldRaw, _ := json.Marshal(oldDS)

	newDS := oldDS.DeepCopy()
	newDS.Spec.Template.Spec.Containers[0].Image = "registry.example/agent:2"
	newRaw, _ := json.Marshal(newDS)
	if resp := review(t, ValidatingPath, admissionv1.Update, string(newRaw), string(oldRaw)); !resp.Allowed {
		t.Fatalf("image change denied: %+v", resp.Result)
	}

	newDS.Spec.Selector.MatchLabels["tier"] = "node"
	newDS.Spec.Template.Labels["tier"] = "node"
	newRaw, _ = json.Marshal(newDS)
	resp := review(t, ValidatingPath, admissionv1.Update, string(newRaw), string(oldRaw))
	checkInvalid(t, resp, "spec.selector")

	resp = review(t, ValidatingPath, admissionv1.Update, string(newRaw), `{"spec": 1}`)
	if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusBadRequest || !strings.Contains(resp.Result.Message, "request.oldObject") {
		t.Errorf("bad oldObject: %+v, want a 400 naming request.oldObject", resp.Result)
	}
}

func TestDeleteIsAllowed(t *testing.T) {
	for _, path := range []string{MutatingPath, ValidatingPath} {
		if resp := review(t, path, admissionv1.Delete, "", ""); !resp.Allowed {
			t.Errorf("%s: DELETE denied: %+v", path, resp.Result)
		}
	}
}

// checkInvalid fails unless resp is a 422 for DaemonSet agent with a cause for each field.
func checkInvalid(t *testing.T, resp *admissionv1.AdmissionResponse, fields ...string) {
	t.Helper()
	if resp.Allowed {
		t.Fatalf("allowed, want a 422 denial")
	}
	status := resp.Result
	if status == nil || status.Code != http.StatusUnprocessableEntity || status.Reason != metav1.StatusReasonInvalid {
		t.Fatalf("result %+v, want 422 Invalid", status)
	}
	if status.Details == nil || status.Details.Group != "apps.kruise.io" || status.Details.Kind != "DaemonSet" || status.Details.Name != "agent" {
		t.Fatalf("details %+v, want apps.kruise.io DaemonSet agent", status.Details)
	}
	causes := map[string]bool{}
	for _, c := range status.Details.Causes {
		causes[c.Field] = true
	}
	for _, f := range fields {
		if !causes[f] {
			t.Errorf("no cause for %s; causes: %+v", f, status.Details.Causes)
		}
		if !strings.Contains(status.Message, f) {
			t.Errorf("message %q does not name %s", status.Message, f)
		}
	}
	if len(status.Details.Causes) != len(fields) {
		t.Errorf("%d causes, want %d: %+v", len(status.Details.Causes), len(fields), status.Details.Causes)
	}
}

func TestMutatePartialUpdateStrategy(t *testing.T) {
	object := strings.Replace(userDaemonSet, `"selector"`, `"updateStrategy": {"rollingUpdate": {"partition": 1, "rollingUpdateType": "Surging"}}, "selector"`, 1)
	resp := review(t, MutatingPath, admissionv1.Create, object, "")
	if !resp.Allowed {
		t.Fatalf("denied: %+v", resp.Result)
	}
	patched := applyAdditions(t, object, resp.Patch)
	spec := patched["spec"].(map[string]any)
	got, err := json.Marshal(map[string]any{
		"updateStrategy": spec["updateStrategy"], "burstReplicas": spec["burstReplicas"], "revisionHistoryLimit": spec["revisionHistoryLimit"],
	})
	if err != nil {
		t.Fatal(err)
	}
	// The user's partition stays; Surging becomes Standard with one surge.
	want := `{"burstReplicas":250,"revisionHistoryLimit":10,"updateStrategy":{"rollingUpdate":{"maxSurge":1,"maxUnavailable":0,"partition":1,"rollingUpdateType":"Standard"},"type":"RollingUpdate"}}`
	if string(got) != want {
		t.Errorf("defaulted fields\n%s\nwant\n%s\npatch: %s", got, want, resp.Patch)
	}
}

func TestMutateEmptySpecIsSetWhole(t *testing.T) {
	resp := review(t, MutatingPath, admissionv1.Create, `{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "DaemonSet", "metadata": {"name": "empty"}, "spec": {}}`, "")
	if !resp.Allowed {
		t.Fatalf("denied: %+v", resp.Result)
	}
	var ops []patchOp
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		t.Fatal(err)
	}
	if len(ops) != 1 || ops[0].Op != "add" || ops[0].Path != "/spec" {
		t.Fatalf("patch %s, want one add of /spec", resp.Patch)
	}
	spec := applyAdditions(t, `{"metadata": {"name": "empty"}}`, resp.Patch)["spec"].(map[string]any)
	if spec["burstReplicas"] != float64(250) || spec["revisionHistoryLimit"] != float64(10) || spec["updateStrategy"] == nil {
		t.Errorf("spec after the patch %v, want the defaults", spec)
	}
}

// applyAdditions applies a patch of "add" operations on members of objects, as the API
// server would, and returns the patched object.
func applyAdditions(t *testing.T, object string, patch []byte) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(object), &doc); err != nil {
		t.Fatal(err)
	}
	var ops []struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(patch, &ops); err != nil {
		t.Fatalf("decoding the patch: %v", err)
	}
	for _, op := range ops {
		if op.Op != "add" {
			t.Fatalf("operation %s %s: the defaulting patch only adds", op.Op, op.Path)
		}
		segments := strings.Split(strings.TrimPrefix(op.Path, "/"), "/")
		parent := doc
		for _, segment := range segments[:len(segments)-1] {
			next, ok := parent[segment].(map[string]any)
			if !ok {
				t.Fatalf("add %s: %s does not exist", op.Path, segment)
			}
			parent = next
		}
		var value any
		if err := json.Unmarshal(op.Value, &value); err != nil {
			t.Fatal(err)
		}
		parent[segments[len(segments)-1]] = value
	}
	return doc
}

func TestDecodeRefusesDuplicateFields(t *testing.T) {
	_, err := webhook.DecodeStrictNew[appsv1alpha1.DaemonSet]([]byte(`{"spec": {"minReadySeconds": 1, "minReadySeconds": 2}}`), "object", daemonSetKind)
	if err == nil || !strings.Contains(err.Error(), `duplicate field "spec.minReadySeconds"`) {
		t.Errorf("decode: %v, want a duplicate field error", err)
	}
}
