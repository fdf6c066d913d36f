package nodeimage

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/featuregate"

	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/webhook"
)

// A NodeImage as the ImagePullJob controller or a user writes it: no createdAt on the
// first tag, a partial pull policy on the second, everything set on the third.
const userNodeImage = `{
  "apiVersion": "apps.kruise.io/v1alpha1",
  "kind": "NodeImage",
  "metadata": {"name": "node-a"},
  "spec": {
    "images": {
      "nginx": {"tags": [
        {"tag": "1.25", "pullPolicy": {"ttlSecondsAfterFinished": 300}},
        {"tag": "1.26", "pullPolicy": {"ttlSecondsAfterFinished": 300, "timeoutSeconds": 30}, "imagePullPolicy": "Always"}
      ]},
      "reg.io/team/app": {"tags": [
        {"tag": "v1", "createdAt": "2025-01-02T03:04:05Z", "version": 2,
         "pullPolicy": {"ttlSecondsAfterFinished": 60, "timeoutSeconds": 10, "backoffLimit": 0}}
      ]}
    }
  }
}`

func newGates(t *testing.T, daemon bool) featuregate.FeatureGate {
	t.Helper()
	gates := features.NewFeatureGate()
	if err := gates.SetFromMap(map[string]bool{string(features.KruiseDaemon): daemon}); err != nil {
		t.Fatal(err)
	}
	return gates
}

func request(op admissionv1.Operation, object string) *admissionv1.AdmissionRequest {
	return &admissionv1.AdmissionRequest{
		Kind:      metav1.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "NodeImage"},
		Name:      "node-a",
		Operation: op,
		Object:    runtime.RawExtension{Raw: []byte(object)},
		OldObject: runtime.RawExtension{Raw: []byte(object)},
	}
}

func handler(t *testing.T, gates featuregate.FeatureGate, typ webhook.Type) webhook.Handler {
	t.Helper()
	for _, r := range Registrations(gates) {
		if err := r.Validate(); err != nil {
			t.Fatal(err)
		}
		if r.Type == typ {
			return r.Handler
		}
	}
	t.Fatalf("no %s webhook", typ)
	return nil
}

// applyAdditions applies the "add" operations of a JSON patch to doc, for object members
// (the only kind of path the webhook writes).
func applyAdditions(t *testing.T, doc map[string]any, patch []byte) {
	t.Helper()
	var ops []struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(patch, &ops); err != nil {
		t.Fatal(err)
	}
	unescape := strings.NewReplacer("~1", "/", "~0", "~")
	for _, op := range ops {
		if op.Op != "add" {
			t.Fatalf("operation %s, want add", op.Op)
		}
		tokens := strings.Split(strings.TrimPrefix(op.Path, "/"), "/")
		var parent any = doc
		for _, token := range tokens[:len(tokens)-1] {
			token = unescape.Replace(token)
			switch p := parent.(type) {
			case map[string]any:
				parent = p[token]
			case []any:
				i, err := strconv.Atoi(token)
				if err != nil {
					t.Fatalf("path %s: %v", op.Path, err)
				}
				parent = p[i]
			}
		}
		last, ok := parent.(map[string]any)
		if !ok {
			t.Fatalf("path %s does not end in an object member", op.Path)
		}
		var value any
		if err := json.Unmarshal(op.Value, &value); err != nil {
			t.Fatal(err)
		}
		last[unescape.Replace(tokens[len(tokens)-1])] = value
	}
}

func TestMutateDefaultsEveryTag(t *testing.T) {
	before := time.Now().Add(-time.Second)
	for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
		resp := handler(t, nil, webhook.Mutating).Handle(context.Background(), request(op, userNodeImage))
		if !resp.Allowed || resp.Patch == nil {
			t.Fatalf("%s: response %+v, want allowed with a patch", op, resp)
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(userNodeImage), &doc); err != nil {
			t.Fatal(err)
		}
		applyAdditions(t, doc, resp.Patch)
		raw, _ := json.Marshal(doc)
		var ni appsv1alpha1.NodeImage
		if err := json.Unmarshal(raw, &ni); err != nil {
			t.Fatal(err)
		}
		nginx := ni.Spec.Images["nginx"].Tags
		if nginx[0].CreatedAt == nil || nginx[0].CreatedAt.Time.Before(before.Truncate(time.Second)) {
			t.Errorf("%s: nginx:1.25 createdAt = %v, want now", op, nginx[0].CreatedAt)
		}
		if p := nginx[0].PullPolicy; *p.TimeoutSeconds != 600 || *p.BackoffLimit != 3 || *p.TTLSecondsAfterFinished != 300 {
			t.Errorf("%s: nginx:1.25 pullPolicy = %+v, want 600/3 with the ttl kept", op, p)
		}
		if p := nginx[1].PullPolicy; *p.TimeoutSeconds != 30 || *p.BackoffLimit != 3 {
			t.Errorf("%s: nginx:1.26 pullPolicy = %+v, want the user's timeout and backoff 3", op, p)
		}
		if nginx[1].ImagePullPolicy != appsv1alpha1.PullAlways || nginx[0].ImagePullPolicy != "" {
			t.Errorf("%s: imagePullPolicy changed: %q %q", op, nginx[0].ImagePullPolicy, nginx[1].ImagePullPolicy)
		}
		app := ni.Spec.Images["reg.io/team/app"].Tags[0]
		if !app.CreatedAt.Time.Equal(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)) || *app.PullPolicy.TimeoutSeconds != 10 ||
			*app.PullPolicy.BackoffLimit != 0 || app.Version != 2 {
			t.Errorf("%s: a fully set tag changed: %+v %+v", op, app, app.PullPolicy)
		}
		if strings.Contains(string(resp.Patch), "reg.io") {
			t.Errorf("%s: the patch touches the fully set image: %s", op, resp.Patch)
		}
	}
}

// A tag sent as null, which the API server passes on to the webhook (only validation,
// after it, refuses it), cannot take members: the image's tags are set whole, and the
// patch applies (found by sweeping the fuzz seeds' fields with null).
func TestMutateNullTag(t *testing.T) {
	const object = `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"NodeImage","metadata":{"name":"node-a"},
	  "spec":{"images":{"nginx":{"tags":[{"tag":"1.25"},null]},
	    "reg.io/app":{"tags":[{"tag":"v1","pullPolicy":{"ttlSecondsAfterFinished":60}}]}}}}`
	resp := handler(t, nil, webhook.Mutating).Handle(context.Background(), request(admissionv1.Create, object))
	if !resp.Allowed || resp.Patch == nil {
		t.Fatalf("response %+v, want allowed with a patch", resp)
	}
	patch, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := patch.Apply([]byte(object))
	if err != nil {
		t.Fatalf("the patch %s does not apply: %v", resp.Patch, err)
	}
	var ni appsv1alpha1.NodeImage
	if err := json.Unmarshal(patched, &ni); err != nil {
		t.Fatal(err)
	}
	nginx := ni.Spec.Images["nginx"].Tags
	if len(nginx) != 2 || nginx[0].Tag != "1.25" || nginx[0].CreatedAt == nil || nginx[1].CreatedAt == nil || nginx[1].PullPolicy == nil {
		t.Errorf("nginx tags after the patch: %+v", nginx)
	}
	if !strings.Contains(string(resp.Patch), `"path":"/spec/images/reg.io~1app/tags/0/createdAt"`) {
		t.Errorf("the image without a null tag is not patched member by member: %s", resp.Patch)
	}
}

func TestMutateLeavesDefaultedObjectsAlone(t *testing.T) {
	const defaulted = `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"NodeImage","metadata":{"name":"node-a"},
	  "spec":{"images":{"nginx":{"tags":[{"tag":"1","createdAt":"2025-01-02T03:04:05Z",
	  "pullPolicy":{"ttlSecondsAfterFinished":1,"timeoutSeconds":600,"backoffLimit":3}}]}}}}`
	for _, object := range []string{defaulted, `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"NodeImage","metadata":{"name":"node-a"}}`} {
		resp := handler(t, nil, webhook.Mutating).Handle(context.Background(), request(admissionv1.Create, object))
		if !resp.Allowed || resp.Patch != nil {
			t.Errorf("response %+v, want allowed without a patch", resp)
		}
	}
}

func TestValidate(t *testing.T) {
	tag := func(mutate func(*appsv1alpha1.ImageTagSpec)) appsv1alpha1.ImageTagSpec {
		ttl := int32(60)
		tag := appsv1alpha1.ImageTagSpec{Tag: "1", CreatedAt: &metav1.Time{Time: time.Now()},
			PullPolicy: &appsv1alpha1.ImageTagPullPolicy{TTLSecondsAfterFinished: &ttl}}
		if mutate != nil {
			mutate(&tag)
		}
		return tag
	}
	images := func(tags ...appsv1alpha1.ImageTagSpec) map[string]appsv1alpha1.ImageSpec {
		return map[string]appsv1alpha1.ImageSpec{"nginx": {Tags: tags}}
	}
	tooMany := map[string]appsv1alpha1.ImageSpec{}
	for i := range MaxImages + 1 {
		tooMany["img"+strconv.Itoa(i)] = appsv1alpha1.ImageSpec{Tags: []appsv1alpha1.ImageTagSpec{tag(nil)}}
	}
	exactly := map[string]appsv1alpha1.ImageSpec{}
	for i := range MaxImages {
		exactly["img"+strconv.Itoa(i)] = appsv1alpha1.ImageSpec{Tags: []appsv1alpha1.ImageTagSpec{tag(nil)}}
	}
	other := tag(nil)
	other.Tag = "2"
	for _, tc := range []struct {
		name   string
		images map[string]appsv1alpha1.ImageSpec
		// fields are the paths of the expected errors; none for a valid object.
		fields []string
	}{
		{"empty", nil, nil},
		{"valid", images(tag(nil), other, tag(func(t *appsv1alpha1.ImageTagSpec) {
			t.Tag, t.ImagePullPolicy, t.Version = "sha256:ab", appsv1alpha1.PullIfNotPresent, 3
		})), nil},
		{"256 images", exactly, nil},
		{"257 images", tooMany, []string{"spec.images"}},
		{"empty image name", map[string]appsv1alpha1.ImageSpec{"": {Tags: []appsv1alpha1.ImageTagSpec{tag(nil)}}}, []string{"spec.images"}},
		{"empty tag", images(tag(func(t *appsv1alpha1.ImageTagSpec) { t.Tag = "" })), []string{"spec.images[nginx].tags[0].tag"}},
		{"duplicate tag", images(tag(nil), other, tag(nil)), []string{"spec.images[nginx].tags[2].tag"}},
		{"negative version", images(tag(func(t *appsv1alpha1.ImageTagSpec) { t.Version = -1 })), []string{"spec.images[nginx].tags[0].version"}},
		{"no createdAt", images(tag(func(t *appsv1alpha1.ImageTagSpec) { t.CreatedAt = nil })), []string{"spec.images[nginx].tags[0].createdAt"}},
		{"no pullPolicy", images(tag(func(t *appsv1alpha1.ImageTagSpec) { t.PullPolicy = nil })), []string{"spec.images[nginx].tags[0].pullPolicy"}},
		{"no ttl", images(tag(func(t *appsv1alpha1.ImageTagSpec) { t.PullPolicy.TTLSecondsAfterFinished = nil })),
			[]string{"spec.images[nginx].tags[0].pullPolicy.ttlSecondsAfterFinished"}},
		{"imagePullPolicy Never", images(tag(func(t *appsv1alpha1.ImageTagSpec) { t.ImagePullPolicy = "Never" })),
			[]string{"spec.images[nginx].tags[0].imagePullPolicy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ni := &appsv1alpha1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Spec: appsv1alpha1.NodeImageSpec{Images: tc.images}}
			hub := &appsv1beta1.NodeImage{}
			appsv1alpha1.ConvertNodeImageToV1beta1(ni.DeepCopy(), hub)
			errs := Validate(hub)
			var got []string
			for _, err := range errs {
				got = append(got, err.Field)
			}
			if strings.Join(got, ",") != strings.Join(tc.fields, ",") {
				t.Errorf("errors on %v (%v), want %v", got, errs, tc.fields)
			}
			if tc.name == "empty tag" || tc.name == "empty" {
				return
			}
			// Through the webhook: 400 naming the fields, on CREATE and UPDATE alike, in
			// both versions.
			ni.TypeMeta = metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "NodeImage"}
			hub.TypeMeta = metav1.TypeMeta{APIVersion: "apps.kruise.io/v1beta1", Kind: "NodeImage"}
			for _, obj := range []runtime.Object{ni, hub} {
				raw, _ := json.Marshal(obj)
				version := obj.GetObjectKind().GroupVersionKind().Version
				for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
					req := request(op, string(raw))
					req.Kind.Version = version
					resp := handler(t, newGates(t, true), webhook.Validating).Handle(context.Background(), req)
					if len(tc.fields) == 0 {
						if !resp.Allowed {
							t.Errorf("%s %s denied: %+v", version, op, resp.Result)
						}
						continue
					}
					if resp.Allowed || resp.Result.Code != http.StatusBadRequest || resp.Result.Details == nil ||
						len(resp.Result.Details.Causes) != len(tc.fields) || resp.Result.Details.Causes[0].Field != tc.fields[0] {
						t.Errorf("%s %s answered %+v, want 400 naming %v", version, op, resp.Result, tc.fields)
					}
				}
			}
		})
	}
}

func TestValidateWithTheDaemonOff(t *testing.T) {
	v := handler(t, newGates(t, false), webhook.Validating)
	resp := v.Handle(context.Background(), request(admissionv1.Create, `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"NodeImage","metadata":{"name":"node-a"}}`))
	if resp.Allowed || resp.Result.Code != http.StatusForbidden {
		t.Errorf("CREATE with KruiseDaemon off answered %+v, want 403", resp.Result)
	}
	// Existing NodeImages may still be changed (and emptied).
	resp = v.Handle(context.Background(), request(admissionv1.Update, `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"NodeImage","metadata":{"name":"node-a"}}`))
	if !resp.Allowed {
		t.Errorf("UPDATE with KruiseDaemon off answered %+v, want allowed", resp.Result)
	}
}

func TestRefusesWhatItCannotJudge(t *testing.T) {
	for _, typ := range []webhook.Type{webhook.Mutating, webhook.Validating} {
		h := handler(t, newGates(t, true), typ)
		req := request(admissionv1.Create, `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"NodeImage","metadata":{"name":"node-a"},"spec":{"unknown":1}}`)
		if resp := h.Handle(context.Background(), req); resp.Allowed || resp.Result.Code != http.StatusBadRequest {
			t.Errorf("%s: unknown field answered %+v, want 400", typ, resp)
		}
		req = request(admissionv1.Create, userNodeImage)
		req.Kind.Kind = "ImagePullJob"
		if resp := h.Handle(context.Background(), req); resp.Allowed || resp.Result.Code != http.StatusBadRequest {
			t.Errorf("%s: wrong kind answered %+v, want 400", typ, resp)
		}
		if resp := h.Handle(context.Background(), request(admissionv1.Delete, "")); !resp.Allowed {
			t.Errorf("%s: DELETE answered %+v, want allowed", typ, resp)
		}
	}
}

// Both versions get the same defaults; both paths are served; other versions are refused.
func TestVersionsAndPaths(t *testing.T) {
	paths := func(version string) []string {
		req := request(admissionv1.Create, strings.ReplaceAll(userNodeImage, "apps.kruise.io/v1alpha1", "apps.kruise.io/"+version))
		req.Kind.Version = version
		resp := handler(t, newGates(t, true), webhook.Mutating).Handle(context.Background(), req)
		if !resp.Allowed {
			t.Fatalf("%s denied: %+v", version, resp.Result)
		}
		var ops []struct {
			Op, Path string
		}
		if err := json.Unmarshal(resp.Patch, &ops); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, op := range ops {
			out = append(out, op.Op+" "+op.Path)
		}
		return out
	}
	alpha, beta := paths("v1alpha1"), paths("v1beta1")
	if len(alpha) == 0 || strings.Join(alpha, ";") != strings.Join(beta, ";") {
		t.Errorf("v1alpha1 patch %v, v1beta1 patch %v: want the same defaults", alpha, beta)
	}
	for _, typ := range []webhook.Type{webhook.Mutating, webhook.Validating} {
		req := request(admissionv1.Create, userNodeImage)
		req.Kind.Version = "v1"
		if resp := handler(t, newGates(t, true), typ).Handle(context.Background(), req); resp.Allowed || resp.Result.Code != http.StatusBadRequest {
			t.Errorf("%s: v1 request answered %+v, want 400", typ, resp.Result)
		}
	}
	for _, r := range Registrations(newGates(t, true)) {
		want := [2]string{ValidatingPath, LegacyValidatingPath}
		if r.Type == webhook.Mutating {
			want = [2]string{MutatingPath, LegacyMutatingPath}
		}
		if r.Path != want[0] || len(r.LegacyPaths) != 1 || r.LegacyPaths[0] != want[1] || !strings.HasSuffix(want[0], "-apps-kruise-io-nodeimage") {
			t.Errorf("%s served at %s and %v, want %v", r.Name, r.Path, r.LegacyPaths, want)
		}
	}
}
