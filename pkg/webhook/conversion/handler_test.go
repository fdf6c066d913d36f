package conversion

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
)

// TestRoundTripEveryKind converts an object of every kind up and down through the handler:
// each conversion is the api module's, changes apiVersion and nothing of kind, name,
// namespace, uid and labels, and converting back gives the object sent.
func TestRoundTripEveryKind(t *testing.T) {
	h := newTestHandler(t)
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range kindFixtures() {
		t.Run(f.kind, func(t *testing.T) {
			for _, dir := range []struct {
				name, src, from, to string
				want                map[string]string
			}{
				{"up", f.alpha, f.alphaVer, f.betaVer, f.wantUp},
				{"down", f.beta, f.betaVer, f.alphaVer, f.wantDown},
			} {
				t.Run(dir.name, func(t *testing.T) {
					src := []byte(dir.src)
					converted := convertOK(t, h, dir.to, dir.src)[0]
					checkSameObject(t, src, converted, dir.to)
					for path, want := range dir.want {
						if got := field(t, converted, path); got == "" || !sameJSON(t, []byte(got), []byte(want)) {
							t.Errorf("%s of the converted object is %s, want %s", path, got, want)
						}
					}

					gv, _ := schema.ParseGroupVersion(dir.to)
					want, err := scheme.New(gv.WithKind(f.kind))
					if err != nil {
						t.Fatal(err)
					}
					if err := scheme.Convert(typed(t, scheme, src), want, nil); err != nil {
						t.Fatal(err)
					}
					want.GetObjectKind().SetGroupVersionKind(gv.WithKind(f.kind))
					if got := typed(t, scheme, converted); !apiequality.Semantic.DeepEqual(got, want) {
						t.Errorf("the handler converted otherwise than the api module (-module +handler):\n%s", cmp.Diff(want, got))
					}

					back := convertOK(t, h, dir.from, string(converted))[0]
					checkSameObject(t, src, back, dir.from)
					if got, want := typed(t, scheme, back), typed(t, scheme, src); !apiequality.Semantic.DeepEqual(got, want) {
						t.Errorf("the round trip changed the object (-sent +back):\n%s", cmp.Diff(want, got))
					}
				})
			}
		})
	}
}

// checkSameObject checks that converted is the object src in version desired: same kind,
// name, namespace, uid and labels.
func checkSameObject(t *testing.T, src, converted []byte, desired string) {
	t.Helper()
	if got := field(t, converted, "apiVersion"); got != fmt.Sprintf("%q", desired) {
		t.Errorf("apiVersion %s, want %q", got, desired)
	}
	for _, path := range []string{"kind", "metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels"} {
		want, got := field(t, src, path), field(t, converted, path)
		if (want == "") != (got == "") || (want != "" && !sameJSON(t, []byte(want), []byte(got))) {
			t.Errorf("%s changed from %s to %s", path, want, got)
		}
	}
}

// TestOrderAndCount sends a list of objects of several kinds and versions, as a LIST of
// mixed storage versions would: they come back in order, one for one, all in the desired
// version; those already in it as they were sent.
func TestOrderAndCount(t *testing.T) {
	h := newTestHandler(t)
	fixtures := map[string]kindFixture{}
	for _, f := range kindFixtures() {
		fixtures[f.kind] = f
	}
	var objects []string
	for i, src := range []string{
		fixtures["DaemonSet"].alpha, fixtures["NodeImage"].alpha, fixtures["DaemonSet"].beta,
		fixtures["ImagePullJob"].alpha, fixtures["ImageListPullJob"].beta, fixtures["ContainerRecreateRequest"].alpha,
		fixtures["DaemonSet"].alpha, fixtures["ContainerRecreateRequest"].beta, fixtures["NodeImage"].beta,
	} {
		objects = append(objects, setField(t, src, "metadata.name", fmt.Sprintf(`"object-%d"`, i)))
	}

	converted := convertOK(t, h, appsBeta, objects...)
	for i, obj := range converted {
		checkSameObject(t, []byte(objects[i]), obj, appsBeta)
		if got := field(t, obj, "metadata.name"); got != fmt.Sprintf(`"object-%d"`, i) {
			t.Errorf("object %d is named %s", i, got)
		}
		if field(t, []byte(objects[i]), "apiVersion") == `"`+appsBeta+`"` && !sameJSON(t, obj, []byte(objects[i])) {
			t.Errorf("object %d, already %s, changed:\nsent %s\ngot  %s", i, appsBeta, objects[i], obj)
		}
	}

	// An empty review is answered with an empty list.
	if got := convertOK(t, h, appsAlpha); len(got) != 0 {
		t.Errorf("an empty review got %d objects", len(got))
	}
}

// TestSameVersionIsIdentity: an object already in the desired version comes back as sent,
// fields this build does not know and values it would not decode included.
func TestSameVersionIsIdentity(t *testing.T) {
	h := newTestHandler(t)
	for _, obj := range []string{
		`{"apiVersion":"apps.kruise.io/v1beta1","kind":"DaemonSet","metadata":{"name":"a","labels":{"x":"y"},
			"annotations":{"conversion.bosun.dev/v1alpha1":"{not json","daemonset.kruise.io/progressive-create-pod":"true"}},
			"spec":{"futureField":[1, 2.50, 1e3],"minReadySeconds":"not a number","template":{"spec":{"containers":"none"}}},
			"status":{"daemonSetHash":"ignored-by-v1beta1"}}`,
		`{"apiVersion":"policy.kruise.io/v1beta1","kind":"PodUnavailableBudget","metadata":{"name":"b"},"spec":{"maxUnavailable":true}}`,
	} {
		var desired string
		if strings.Contains(obj, "policy.kruise.io") {
			desired = policyBeta
		} else {
			desired = appsBeta
		}
		got := convertOK(t, h, desired, obj)[0]
		if !sameJSON(t, got, []byte(obj)) {
			t.Errorf("converting into its own version changed the object:\nsent %s\ngot  %s", obj, got)
		}
	}
}

// TestRefusals: what is not a POSTed ConversionReview request gets an HTTP error, not a
// review.
func TestRefusals(t *testing.T) {
	h := newTestHandler(t)
	valid := string(reviewBody(t, "uid-1", appsBeta))
	tests := []struct {
		name        string
		method      string
		contentType string
		body        string
		tooLong     bool
		wantStatus  int
		wantMessage string
	}{
		{name: "GET", method: http.MethodGet, body: valid, wantStatus: http.StatusMethodNotAllowed, wantMessage: "method GET is not allowed"},
		{name: "YAML", contentType: "application/yaml", body: valid, wantStatus: http.StatusUnsupportedMediaType, wantMessage: `Content-Type "application/yaml" is not application/json`},
		{name: "too large", body: valid, tooLong: true, wantStatus: http.StatusRequestEntityTooLarge, wantMessage: "request body larger than 134217728 bytes"},
		{name: "empty", body: "", wantStatus: http.StatusBadRequest, wantMessage: "bad ConversionReview: empty body"},
		{name: "malformed", body: `{"apiVersion":`, wantStatus: http.StatusBadRequest, wantMessage: "bad ConversionReview: malformed JSON"},
		{name: "trailing data", body: valid + "{}", wantStatus: http.StatusBadRequest, wantMessage: "bad ConversionReview: malformed JSON"},
		{name: "AdmissionReview", body: strings.Replace(valid, `"ConversionReview"`, `"AdmissionReview"`, 1), wantStatus: http.StatusBadRequest, wantMessage: `kind "AdmissionReview" is not ConversionReview`},
		{name: "v1beta1 review", body: strings.Replace(valid, `"apiextensions.k8s.io/v1"`, `"apiextensions.k8s.io/v1beta1"`, 1), wantStatus: http.StatusBadRequest, wantMessage: `apiVersion "apiextensions.k8s.io/v1beta1" is not apiextensions.k8s.io/v1`},
		{name: "admission review", body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1"}}`, wantStatus: http.StatusBadRequest, wantMessage: `apiVersion "admission.k8s.io/v1" is not apiextensions.k8s.io/v1`},
		{name: "response only", body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"1"}}`, wantStatus: http.StatusBadRequest, wantMessage: "no request"},
		{name: "no uid", body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"desiredAPIVersion":"apps.kruise.io/v1beta1","objects":[]}}`, wantStatus: http.StatusBadRequest, wantMessage: "request.uid is empty"},
		{name: "no desired version", body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"1","objects":[]}}`, wantStatus: http.StatusBadRequest, wantMessage: "request.desiredAPIVersion is empty"},
		{name: "objects not a list", body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"1","desiredAPIVersion":"apps.kruise.io/v1beta1","objects":{}}}`, wantStatus: http.StatusBadRequest, wantMessage: "bad ConversionReview: malformed JSON"},
		{name: "field names are case-sensitive", body: `{"APIVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"1","desiredAPIVersion":"apps.kruise.io/v1beta1"}}`, wantStatus: http.StatusBadRequest, wantMessage: `apiVersion "" is not`},
	}
	before := readMetrics(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			r := httptest.NewRequestWithContext(testContext(t), method, Path, strings.NewReader(tt.body))
			r.Header.Set("Content-Type", "application/json")
			if tt.contentType != "" {
				r.Header.Set("Content-Type", tt.contentType)
			}
			if tt.tooLong {
				r.ContentLength = maxRequestBytes + 1
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.wantStatus {
				t.Errorf("HTTP status %d, want %d; body: %s", w.Code, tt.wantStatus, w.Body)
			}
			if !strings.Contains(w.Body.String(), tt.wantMessage) {
				t.Errorf("body %q does not say %q", w.Body, tt.wantMessage)
			}
			if tt.wantStatus == http.StatusMethodNotAllowed && w.Header().Get("Allow") != http.MethodPost {
				t.Errorf("Allow header %q, want POST", w.Header().Get("Allow"))
			}
		})
	}
	got := readMetrics(t).minus(before)
	want := conversionMetrics{
		requests: map[string]float64{
			"unknown unknown 405": 1, "unknown unknown 415": 1, "unknown unknown 413": 1, "unknown unknown 400": float64(len(tests) - 3),
		},
		dropped:   map[string]float64{},
		durations: uint64(len(tests)),
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(conversionMetrics{})); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}

// TestBodyOverTheLimitWithoutLength: a body longer than the limit is refused even when
// its length was not announced.
func TestBodyOverTheLimitWithoutLength(t *testing.T) {
	h := newTestHandler(t)
	body := append(reviewBody(t, "uid-1", appsBeta), bytes.Repeat([]byte(" "), maxRequestBytes)...)
	r := httptest.NewRequestWithContext(testContext(t), http.MethodPost, Path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.ContentLength = -1
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("HTTP status %d, want 413", w.Code)
	}
}

// TestFailures: a review fails, as a whole, only for an object or desired version of a
// group, kind or version the handler does not convert, or an object that does not decode
// into its type.
func TestFailures(t *testing.T) {
	h := newTestHandler(t)
	ds := kindFixtures()[0].alpha
	pub := kindFixtures()[5].alpha
	tests := []struct {
		name        string
		desired     string
		objects     []string
		wantMessage string
	}{
		{"unknown desired version", "apps.kruise.io/v2", []string{ds}, `desiredAPIVersion "apps.kruise.io/v2" is not a version this webhook converts to`},
		{"unknown desired group", "apps/v1", []string{ds}, `desiredAPIVersion "apps/v1" is not a version`},
		{"unparseable desired version", "a/b/c", []string{ds}, `desiredAPIVersion "a/b/c" is not a version`},
		{"unknown kind", appsBeta, []string{setField(t, ds, "kind", `"StatefulSet"`)}, `object 0: cannot convert apps.kruise.io/v1alpha1 StatefulSet "kube-system/agent": not a kind and version this webhook converts`},
		{"unknown version", appsBeta, []string{setField(t, ds, "apiVersion", `"apps.kruise.io/v1"`)}, `object 0: cannot convert apps.kruise.io/v1 DaemonSet "kube-system/agent": not a kind and version`},
		{"unknown group", appsBeta, []string{setField(t, ds, "apiVersion", `"apps/v1"`)}, `object 0: cannot convert apps/v1 DaemonSet`},
		{"list kind", appsBeta, []string{`{"apiVersion":"apps.kruise.io/v1alpha1","kind":"DaemonSetList","items":[]}`}, `not a kind and version this webhook converts`},
		{"no apiVersion", appsBeta, []string{setField(t, ds, "apiVersion", "")}, `object 0: cannot convert  DaemonSet "kube-system/agent"`},
		{"bad apiVersion", appsBeta, []string{setField(t, ds, "apiVersion", `"a/b/c"`)}, `unexpected GroupVersion string: a/b/c`},
		{"other group", appsBeta, []string{pub}, `object 0: cannot convert policy.kruise.io/v1alpha1 PodUnavailableBudget "default/web" to apps.kruise.io/v1beta1: another API group`},
		{"not an object", appsBeta, []string{`[1,2]`}, `object 0: cannot convert: not a Kubernetes object`},
		{"a string", appsBeta, []string{`"DaemonSet"`}, `object 0: cannot convert: not a Kubernetes object`},
		{"kind not a string", appsBeta, []string{setField(t, ds, "kind", `7`)}, `object 0: cannot convert: not a Kubernetes object: kind: json: cannot unmarshal number`},
		{"spec not an object, other kind", policyBeta, []string{setField(t, pub, "spec", `"big"`)}, `PodUnavailableBudget "default/web": it does not decode`},
		{"null", appsBeta, []string{`null`}, `object 0: cannot convert: not a Kubernetes object: not a JSON object`},
		{"spec not an object", appsBeta, []string{setField(t, ds, "spec", `"big"`)}, `DaemonSet "kube-system/agent": spec: not a JSON object`},
		{"wrong type", appsBeta, []string{setField(t, ds, "spec.minReadySeconds", `"five"`)}, `object 0: cannot convert apps.kruise.io/v1alpha1 DaemonSet "kube-system/agent": it does not decode`},
		{"wrong type in metadata", policyBeta, []string{setField(t, pub, "metadata.labels", `["a"]`)}, `it does not decode`},
		{"bad time", appsBeta, []string{setField(t, ds, "metadata.creationTimestamp", `"yesterday"`)}, `it does not decode`},
		{"second object", appsBeta, []string{ds, setField(t, ds, "status.numberReady", `true`)}, `object 1: cannot convert`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := convertFails(t, h, tt.desired, tt.objects...); !strings.Contains(got, tt.wantMessage) {
				t.Errorf("message %q does not say %q", got, tt.wantMessage)
			}
		})
	}
}

// TestFieldValuesNeverFail: objects that decode convert, whatever their values: carriers
// that do not parse, values admission would refuse, reserved annotations that are not
// JSON, pod templates that are not pod templates.
func TestFieldValuesNeverFail(t *testing.T) {
	h := newTestHandler(t)
	objects := []struct{ desired, obj string }{
		{policyBeta, `{"apiVersion":"policy.kruise.io/v1alpha1","kind":"PodUnavailableBudget","metadata":{"name":"p","namespace":"n",
			"annotations":{"kruise.io/pub-protect-operations":",,NOPE, ","pub.kruise.io/protect-total-replicas":"abc",
				"conversion.bosun.dev/v1beta1":"{broken","conversion.bosun.dev/v1alpha1":"[]"}},
			"spec":{"maxUnavailable":"250%","minAvailable":-3}}`},
		{policyAlpha, `{"apiVersion":"policy.kruise.io/v1beta1","kind":"PodUnavailableBudget","metadata":{"name":"p","namespace":"n"},
			"spec":{"protectOperations":["DELETE,EVICT",""," x"],"protectTotalReplicas":-2147483648,"ignoredPodSelector":{}}}`},
		{appsBeta, `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"DaemonSet","metadata":{"name":"d","namespace":"n",
			"annotations":{"daemonset.kruise.io/progressive-create-pod":"TRUE"}},
			"spec":{"minReadySeconds":-5,"updateStrategy":{"type":"Bogus","rollingUpdate":{"rollingUpdateType":"surging","maxSurge":"x%"}},
				"template":{"spec":{"containers":"not a list","restartPolicy":7}}}}`},
		{appsAlpha, `{"apiVersion":"apps.kruise.io/v1beta1","kind":"ContainerRecreateRequest","metadata":{"name":"c","namespace":"n",
			"annotations":{"crr.apps.kruise.io/unready-acquired":"not a time","crr.apps.kruise.io/sync-container-statuses":"{"}},
			"status":{"conditions":[{"type":"PreRecreateGrace","status":"Unknown","lastTransitionTime":"2026-01-02T03:04:05Z","reason":"","message":"x"}]}}`},
	}
	for _, o := range objects {
		convertOK(t, h, o.desired, o.obj)
	}
}

// TestReservedAnnotations: what the target version cannot hold is kept in the reserved
// annotation on the way down, and restored, the annotation consumed, on the way back.
func TestReservedAnnotations(t *testing.T) {
	h := newTestHandler(t)
	reserved := appsv1alpha1.V1beta1ConversionAnnotation
	for _, tt := range []struct {
		name, obj, down, up string
		// item is an item the reserved annotation must restore.
		item string
		// fields are v1beta1-only fields that must survive the round trip.
		fields []string
	}{{
		name: "PodUnavailableBudget ignoredPodSelector",
		obj: `{"apiVersion":"policy.kruise.io/v1beta1","kind":"PodUnavailableBudget","metadata":{"name":"p","namespace":"n","uid":"u-1","labels":{"a":"b"}},
			"spec":{"selector":{"matchLabels":{"app":"web"}},"maxUnavailable":1,"ignoredPodSelector":{"matchLabels":{"canary":"true"}}}}`,
		down: policyAlpha, up: policyBeta, item: "spec.ignoredPodSelector",
		fields: []string{"spec.ignoredPodSelector"},
	}, {
		name: "DaemonSet partitionedScaling without the annotation",
		obj: `{"apiVersion":"apps.kruise.io/v1beta1","kind":"DaemonSet","metadata":{"name":"d","namespace":"n","uid":"u-2"},
			"spec":{"selector":{"matchLabels":{"app":"d"}},"template":{"spec":{"containers":[{"name":"c","image":"i"}]}},
				"scaleStrategy":{"partitionedScaling":true}}}`,
		down: appsAlpha, up: appsBeta, item: "metadata.annotations[daemonset.kruise.io/progressive-create-pod]",
		fields: []string{"spec.scaleStrategy"},
	}, {
		name: "DaemonSet empty scaleStrategy",
		obj: `{"apiVersion":"apps.kruise.io/v1beta1","kind":"DaemonSet","metadata":{"name":"d","namespace":"n","uid":"u-3"},
			"spec":{"selector":{"matchLabels":{"app":"d"}},"template":{"spec":{"containers":[{"name":"c","image":"i"}]}},
				"scaleStrategy":{}}}`,
		down: appsAlpha, up: appsBeta, item: "spec.scaleStrategy",
		fields: []string{"spec.scaleStrategy"},
	}, {
		// The carrier is a label: the down conversion adds it, the up conversion takes it
		// away again.
		name: "CloneSet excludePreparingDelete without its label",
		obj: `{"apiVersion":"apps.kruise.io/v1beta1","kind":"CloneSet","metadata":{"name":"c","namespace":"n","uid":"u-4","labels":{"app":"c"}},
			"spec":{"selector":{"matchLabels":{"app":"c"}},"template":{"spec":{"containers":[{"name":"c","image":"i"}]}},
				"scaleStrategy":{"excludePreparingDelete":true},"updateStrategy":{"type":"RollingUpdate"}}}`,
		down: appsAlpha, up: appsBeta, item: "metadata.labels[apps.kruise.io/cloneset-scaling-exclude-preparing-delete]",
		fields: []string{"spec.scaleStrategy", "spec.updateStrategy", "metadata.labels"},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			down := convertOK(t, h, tt.down, tt.obj)[0]
			value := field(t, down, "metadata.annotations."+strings.ReplaceAll(reserved, ".", `\.`))
			if value == "" {
				t.Fatalf("the down conversion wrote no %s: %s", reserved, down)
			}
			var text string
			if err := json.Unmarshal([]byte(value), &text); err != nil {
				t.Fatal(err)
			}
			var records map[string]json.RawMessage
			if err := json.Unmarshal([]byte(text), &records); err != nil {
				t.Fatalf("%s is not a JSON object: %q", reserved, text)
			}
			if _, ok := records[tt.item]; !ok {
				t.Errorf("%s %s has no record of %s", reserved, text, tt.item)
			}

			up := convertOK(t, h, tt.up, string(down))[0]
			if got := field(t, up, "metadata.annotations"); strings.Contains(got, "conversion.bosun.dev/") {
				t.Errorf("the up conversion kept a reserved annotation: %s", got)
			}
			if got := field(t, up, "metadata.annotations"); got != "" && got != "{}" {
				t.Errorf("the round trip left annotations %s on an object that had none", got)
			}
			for _, path := range tt.fields {
				if want, got := field(t, []byte(tt.obj), path), field(t, up, path); got == "" || !sameJSON(t, []byte(want), []byte(got)) {
					t.Errorf("%s came back as %s, want %s", path, got, want)
				}
			}
		})
	}
}

// TestDaemonSetTemplateIsCarriedAsSent: the pod template of an Advanced DaemonSet is
// stored schemaless with unknown fields kept; a conversion keeps it as the API server sent
// it, fields this build's pod type lacks and values it could not decode included.
func TestDaemonSetTemplateIsCarriedAsSent(t *testing.T) {
	h := newTestHandler(t)
	newer := `{"metadata":{"labels":{"app":"agent"},"futureMetadata":"m"},
		"spec":{"futurePodField":{"nested":[1,2.5,"x",null,{"deep":true}]},
			"containers":[{"name":"agent","image":"registry.example/agent:1.0","futureContainerField":"kept",
				"resources":{"limits":{"cpu":"500m","memory":"1Gi"}}}],
			"hostNetwork":true}}`

	// Why it is carried: the Go type drops what it does not know.
	var pod corev1.PodTemplateSpec
	if err := json.Unmarshal([]byte(newer), &pod); err != nil {
		t.Fatal(err)
	}
	if reencoded, _ := json.Marshal(&pod); bytes.Contains(reencoded, []byte("futurePodField")) {
		t.Fatal("the pod template's Go type kept an unknown field; this test no longer shows why the template is carried")
	}

	for _, template := range []string{newer, `{"spec":{"containers":"not a list","priority":"high"}}`, `null`, `{}`} {
		for _, f := range kindFixtures()[:1] {
			for _, dir := range []struct{ src, to, back string }{
				{f.alpha, appsBeta, appsAlpha},
				{f.beta, appsAlpha, appsBeta},
			} {
				src := setField(t, dir.src, "spec.template", template)
				converted := convertOK(t, h, dir.to, src)[0]
				if got := field(t, converted, "spec.template"); !sameJSON(t, []byte(got), []byte(template)) {
					t.Errorf("converting into %s changed the template\nsent %s\ngot  %s", dir.to, template, got)
				}
				back := convertOK(t, h, dir.back, string(converted))[0]
				if got := field(t, back, "spec.template"); !sameJSON(t, []byte(got), []byte(template)) {
					t.Errorf("the round trip changed the template\nsent %s\ngot  %s", template, got)
				}
				// The rest of the object is converted all the same.
				if field(t, converted, "spec.selector") == "" || field(t, converted, "status") == "" {
					t.Errorf("the conversion lost the rest of the spec or the status: %s", converted)
				}
			}
		}
	}

	// Without a template, or a spec, there is none afterwards either.
	for _, src := range []string{
		setField(t, kindFixtures()[0].alpha, "spec.template", ""),
		setField(t, kindFixtures()[0].alpha, "spec", ""),
		setField(t, kindFixtures()[0].alpha, "spec", "null"),
	} {
		converted := convertOK(t, h, appsBeta, src)[0]
		if got := field(t, converted, "spec.template"); got != "" {
			t.Errorf("a DaemonSet sent without a template got %s", got)
		}
	}
}

// TestCloneSetTemplatesAreCarriedAsSent: a CloneSet's pod template and volume claim
// templates are stored schemaless with unknown fields kept; a conversion keeps them as the
// API server sent them, absent ones staying absent.
func TestCloneSetTemplatesAreCarriedAsSent(t *testing.T) {
	h := newTestHandler(t)
	var f kindFixture
	for _, fx := range kindFixtures() {
		if fx.kind == "CloneSet" {
			f = fx
		}
	}
	template := `{"metadata":{"labels":{"app":"web"},"futureMetadata":"m"},
		"spec":{"futurePodField":{"nested":[1,2.5,"x",null]},"containers":[{"name":"app","image":"web:1","futureContainerField":"kept"}]}}`
	claims := `[{"metadata":{"name":"data","futureMetadata":1},"spec":{"accessModes":["ReadWriteOnce"],
		"resources":{"requests":{"storage":"1Gi"}},"futureClaimField":{"a":"b"}},"status":{"phase":7}}]`

	// Why they are carried: the Go type drops what it does not know.
	var pvcs []corev1.PersistentVolumeClaim
	if err := json.Unmarshal([]byte(claims), &pvcs); err == nil {
		if reencoded, _ := json.Marshal(pvcs); bytes.Contains(reencoded, []byte("futureClaimField")) {
			t.Fatal("the claim's Go type kept an unknown field; this test no longer shows why the claims are carried")
		}
	}

	for _, sent := range []struct{ template, claims string }{
		{template, claims},
		{template, `[]`},
		{template, ``},
		{`{"spec":{"containers":"not a list"}}`, `[{"spec":{"resources":"much"}}]`},
		{`{}`, `null`},
	} {
		for _, dir := range []struct{ src, to, back string }{
			{f.alpha, appsBeta, appsAlpha},
			{f.beta, appsAlpha, appsBeta},
		} {
			src := setField(t, dir.src, "spec.template", sent.template)
			src = setField(t, src, "spec.volumeClaimTemplates", sent.claims)
			converted := convertOK(t, h, dir.to, src)[0]
			back := convertOK(t, h, dir.back, string(converted))[0]
			for _, obj := range []json.RawMessage{converted, back} {
				if got := field(t, obj, "spec.template"); !sameJSON(t, []byte(got), []byte(sent.template)) {
					t.Errorf("the template changed\nsent %s\ngot  %s", sent.template, got)
				}
				got := field(t, obj, "spec.volumeClaimTemplates")
				if (got == "") != (sent.claims == "") || (got != "" && !sameJSON(t, []byte(got), []byte(sent.claims))) {
					t.Errorf("the volume claim templates changed\nsent %s\ngot  %s", sent.claims, got)
				}
			}
			// The rest of the object is converted all the same.
			if field(t, converted, "spec.updateStrategy.type") == "" || field(t, converted, "status") == "" {
				t.Errorf("the conversion lost the rest of the spec or the status: %s", converted)
			}
		}
	}
}

// TestMetrics: each review counts once by kind, desired version and code, with its
// duration; dropped reserved-annotation records count by kind.
func TestMetrics(t *testing.T) {
	h := newTestHandler(t)
	f := kindFixtures()
	ds, pub := f[0].alpha, f[5].beta
	broken := setField(t, ds, `metadata.annotations.conversion\.bosun\.dev/v1beta1`, `"{not json"`)
	before := readMetrics(t)

	convertOK(t, h, appsBeta, ds, ds)
	convertOK(t, h, policyAlpha, pub)
	converted := convertOK(t, h, appsBeta, broken)[0]
	convertOK(t, h, appsBeta)
	convertFails(t, h, "apps.kruise.io/v9", ds)
	convertFails(t, h, appsBeta, setField(t, ds, "kind", `"StatefulSet"`))
	convertFails(t, h, appsBeta, setField(t, ds, "spec", `[]`))
	post(testContext(t), h, []byte("{"))

	if got := field(t, converted, "metadata.annotations"); strings.Contains(got, "conversion.bosun.dev/v1beta1") {
		t.Errorf("the unparseable reserved annotation was kept: %s", got)
	}
	got := readMetrics(t).minus(before)
	want := conversionMetrics{
		requests: map[string]float64{
			"DaemonSet v1beta1 200":             2,
			"PodUnavailableBudget v1alpha1 200": 1,
			"unknown v1beta1 200":               1,
			"unknown unknown 422":               1,
			"unknown v1beta1 422":               1,
			"DaemonSet v1beta1 422":             1,
			"unknown unknown 400":               1,
		},
		dropped:   map[string]float64{"DaemonSet": 1},
		durations: 8,
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(conversionMetrics{})); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}

// TestConcurrentReviews converts from many goroutines at once: the handler shares nothing
// between requests (run with -race).
func TestConcurrentReviews(t *testing.T) {
	h := newTestHandler(t)
	f := kindFixtures()
	done := make(chan struct{})
	for i := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			fx := f[i%len(f)]
			for range 20 {
				up := convertOK(t, h, fx.betaVer, fx.alpha)[0]
				back := convertOK(t, h, fx.alphaVer, string(up))[0]
				checkSameObject(t, []byte(fx.alpha), back, fx.alphaVer)
			}
		}()
	}
	for range 8 {
		<-done
	}
}
