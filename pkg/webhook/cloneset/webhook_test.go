package cloneset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/webhook"
	"github.com/bosun-dev/bosun/pkg/webhook/webhooktest"
)

// fixture is the webhooks on a fake clientset holding pods, with their own feature gate.
type fixture struct {
	client *fake.Clientset
	gates  featuregate.MutableVersionedFeatureGate
}

func newFixture(pods ...*corev1.Pod) *fixture {
	objects := make([]runtime.Object, 0, len(pods))
	for _, p := range pods {
		objects = append(objects, p)
	}
	return &fixture{client: fake.NewClientset(objects...), gates: features.NewFeatureGate()}
}

// request is an admission request in version for object (and oldObject, on UPDATE), given
// as typed objects or raw JSON strings.
func request(t *testing.T, version string, op admissionv1.Operation, object, oldObject any) *admissionv1.AdmissionRequest {
	t.Helper()
	req := &admissionv1.AdmissionRequest{
		UID:       types.UID("request-uid"),
		Kind:      metav1.GroupVersionKind{Group: "apps.kruise.io", Version: version, Kind: "CloneSet"},
		Resource:  metav1.GroupVersionResource{Group: "apps.kruise.io", Version: version, Resource: "clonesets"},
		Namespace: "ns",
		Name:      "web",
		Operation: op,
	}
	encode := func(v any) []byte {
		if s, ok := v.(string); ok {
			return []byte(s)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	if object != nil {
		req.Object.Raw = encode(object)
	}
	if oldObject != nil {
		req.OldObject.Raw = encode(oldObject)
	}
	return req
}

// handle sends req to the webhook of type typ.
func (f *fixture) handle(t *testing.T, typ webhook.Type, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	t.Helper()
	for _, r := range Registrations(f.client.CoreV1(), f.gates) {
		if r.Type == typ {
			return r.Handler.Handle(t.Context(), req)
		}
	}
	t.Fatalf("no %s webhook", typ)
	return nil
}

// patched is req's object with resp's patch applied, as the API server stores it.
func patched(t *testing.T, req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse) []byte {
	t.Helper()
	if !resp.Allowed {
		t.Fatalf("denied: %v", resp.Result)
	}
	if len(resp.Patch) == 0 {
		return req.Object.Raw
	}
	patch, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		t.Fatalf("decoding the patch %s: %v", resp.Patch, err)
	}
	out, err := patch.Apply(req.Object.Raw)
	if err != nil {
		t.Fatalf("applying the patch %s: %v", resp.Patch, err)
	}
	return out
}

func TestRegistrations(t *testing.T) {
	regs := Registrations(nil, nil)
	want := []struct {
		name, path string
		typ        webhook.Type
	}{
		{"mcloneset.kb.io", "/mutate-apps-kruise-io-cloneset", webhook.Mutating},
		{"vcloneset.kb.io", "/validate-apps-kruise-io-cloneset", webhook.Validating},
	}
	if len(regs) != len(want) {
		t.Fatalf("%d registrations, want %d", len(regs), len(want))
	}
	for i, w := range want {
		r := regs[i]
		if r.Name != w.name || r.Path != w.path || r.Type != w.typ || len(r.LegacyPaths) != 0 {
			t.Errorf("registration %d is %s %s %s (also at %v), want %s %s %s only", i, r.Name, r.Path, r.Type, r.LegacyPaths, w.name, w.path, w.typ)
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
		if strings.Join(rule.APIGroups, ",") != "apps.kruise.io" || strings.Join(rule.APIVersions, ",") != "v1alpha1,v1beta1" || strings.Join(rule.Resources, ",") != "clonesets" {
			t.Errorf("registration %d rule %+v, want apps.kruise.io v1alpha1 and v1beta1 clonesets", i, rule.Rule)
		}
	}
}

// A v1alpha1 CloneSet as a user writes it: the spec's defaults are written, and the
// template's, each where it belongs; nothing the Go types merely add is.
const userAlpha = `{
  "apiVersion": "apps.kruise.io/v1alpha1",
  "kind": "CloneSet",
  "metadata": {"name": "web", "namespace": "ns"},
  "spec": {
    "selector": {"matchLabels": {"app": "web"}},
    "template": {
      "metadata": {"labels": {"app": "web"}},
      "spec": {"containers": [{"name": "web", "image": "registry.example/web:1", "ports": [{"containerPort": 80}]}]}
    }
  }
}`

func TestMutateCreate(t *testing.T) {
	f := newFixture()
	req := request(t, "v1alpha1", admissionv1.Create, userAlpha, nil)
	resp := f.handle(t, webhook.Mutating, req)
	var ops []struct{ Op, Path string }
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		t.Fatalf("decoding the patch: %v; patch: %s", err, resp.Patch)
	}
	for _, op := range ops {
		if op.Op != "add" || strings.HasPrefix(op.Path, "/spec/template/metadata") {
			t.Errorf("patch operation %s %s: only additions outside the template's metadata expected", op.Op, op.Path)
		}
	}
	want := `{
  "apiVersion": "apps.kruise.io/v1alpha1",
  "kind": "CloneSet",
  "metadata": {"name": "web", "namespace": "ns"},
  "spec": {
    "replicas": 1,
    "revisionHistoryLimit": 10,
    "selector": {"matchLabels": {"app": "web"}},
    "updateStrategy": {"type": "ReCreate", "partition": 0, "maxUnavailable": "20%", "maxSurge": 0},
    "template": {
      "metadata": {"labels": {"app": "web"}},
      "spec": {
        "containers": [{"name": "web", "image": "registry.example/web:1", "ports": [{"containerPort": 80, "protocol": "TCP"}],
          "imagePullPolicy": "Always", "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
        "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
        "securityContext": {}, "terminationGracePeriodSeconds": 30
      }
    }
  }
}`
	var got, wantJSON any
	if err := json.Unmarshal(patched(t, req, resp), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &wantJSON); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantJSON, got); diff != "" {
		t.Errorf("stored object (-want +got):\n%s", diff)
	}
}

// The same CloneSet written in v1beta1 is stored as the conversion of the v1alpha1 one.
func TestMutateCreateV1beta1(t *testing.T) {
	f := newFixture()
	alphaReq := request(t, "v1alpha1", admissionv1.Create, userAlpha, nil)
	var alpha appsv1alpha1.CloneSet
	if err := json.Unmarshal(patched(t, alphaReq, f.handle(t, webhook.Mutating, alphaReq)), &alpha); err != nil {
		t.Fatal(err)
	}
	var user appsv1alpha1.CloneSet
	if err := json.Unmarshal([]byte(userAlpha), &user); err != nil {
		t.Fatal(err)
	}
	betaReq := request(t, "v1beta1", admissionv1.Create, up(&user), nil)
	var beta appsv1beta1.CloneSet
	if err := json.Unmarshal(patched(t, betaReq, f.handle(t, webhook.Mutating, betaReq)), &beta); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(asJSON(t, up(&alpha)), asJSON(t, &beta)); diff != "" {
		t.Errorf("v1beta1 write stored differently from the v1alpha1 one (-v1alpha1 +v1beta1):\n%s", diff)
	}
}

// On UPDATE, the template gets the core defaults only when it changes; the spec's
// defaults always apply.
func TestMutateUpdateDefaultsChangedTemplatesOnly(t *testing.T) {
	old := validAlpha() // stored without template defaults, as with TemplateNoDefaults
	appsv1alpha1.SetObjectDefaults_CloneSet(old)
	for _, tc := range []struct {
		name      string
		mutate    func(*appsv1alpha1.CloneSet)
		templates bool
	}{
		{"template unchanged", func(cs *appsv1alpha1.CloneSet) {
			cs.Spec.Replicas = ptr.To[int32](9)
			cs.Spec.RevisionHistoryLimit = nil
		}, false},
		{"template changed", func(cs *appsv1alpha1.CloneSet) { cs.Spec.Template.Spec.Containers[0].Image = "registry.example/web:2" }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			cs := old.DeepCopy()
			tc.mutate(cs)
			req := request(t, "v1alpha1", admissionv1.Update, cs, old)
			var got appsv1alpha1.CloneSet
			if err := json.Unmarshal(patched(t, req, f.handle(t, webhook.Mutating, req)), &got); err != nil {
				t.Fatal(err)
			}
			if got.Spec.RevisionHistoryLimit == nil || *got.Spec.RevisionHistoryLimit != 10 {
				t.Errorf("revisionHistoryLimit %v, want the default 10", got.Spec.RevisionHistoryLimit)
			}
			if defaulted := got.Spec.Template.Spec.DNSPolicy == corev1.DNSClusterFirst; defaulted != tc.templates {
				t.Errorf("template defaulted: %t, want %t", defaulted, tc.templates)
			}
			if defaulted := got.Spec.VolumeClaimTemplates[0].Status.Phase == corev1.ClaimPending; defaulted != tc.templates {
				t.Errorf("claim template defaulted: %t, want %t", defaulted, tc.templates)
			}
		})
	}
}

// With TemplateNoDefaults the templates are left as written, on creation too.
func TestMutateTemplateNoDefaults(t *testing.T) {
	for _, version := range []string{"v1alpha1", "v1beta1"} {
		t.Run(version, func(t *testing.T) {
			f := newFixture()
			if err := f.gates.Set(string(features.TemplateNoDefaults) + "=true"); err != nil {
				t.Fatal(err)
			}
			var object any = validAlpha()
			if version == "v1beta1" {
				object = up(validAlpha())
			}
			req := request(t, version, admissionv1.Create, object, nil)
			resp := f.handle(t, webhook.Mutating, req)
			var ops []struct{ Path string }
			if err := json.Unmarshal(resp.Patch, &ops); err != nil {
				t.Fatal(err)
			}
			if len(ops) == 0 {
				t.Error("no defaults written at all")
			}
			for _, op := range ops {
				if strings.HasPrefix(op.Path, "/spec/template") || strings.HasPrefix(op.Path, "/spec/volumeClaimTemplates") {
					t.Errorf("the patch writes %s", op.Path)
				}
			}
		})
	}
}

// A v1beta1 write loses the pre-download annotations that disagree with their fields,
// with a warning each; an agreeing or fieldless annotation stays, and so does the
// exclude-preparing-delete label whatever it says.
func TestMutateRemovesStaleCarriers(t *testing.T) {
	f := newFixture()
	cs := validBeta()
	cs.Labels = map[string]string{appsv1beta1.CloneSetScalingExcludePreparingDeleteKey: "true"}
	cs.Annotations = map[string]string{
		appsv1beta1.ImagePreDownloadParallelismKey:      "4",
		appsv1beta1.ImagePreDownloadTimeoutSecondsKey:   "60",
		appsv1beta1.ImagePreDownloadMinUpdatedReadyPods: "2",
	}
	rollingUpdate(cs).InPlaceUpdateStrategy = &appsv1beta1.InPlaceUpdateStrategy{
		ImagePreDownloadParallelism:    intOrStr(intstr.FromInt32(5)),
		ImagePreDownloadTimeoutSeconds: ptr.To[int32](60),
	}
	req := request(t, "v1beta1", admissionv1.Create, cs, nil)
	resp := f.handle(t, webhook.Mutating, req)
	var got appsv1beta1.CloneSet
	if err := json.Unmarshal(patched(t, req, resp), &got); err != nil {
		t.Fatal(err)
	}
	wantAnnotations := map[string]string{
		appsv1beta1.ImagePreDownloadTimeoutSecondsKey:   "60",
		appsv1beta1.ImagePreDownloadMinUpdatedReadyPods: "2",
	}
	if diff := cmp.Diff(wantAnnotations, got.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if got.Labels[appsv1beta1.CloneSetScalingExcludePreparingDeleteKey] != "true" {
		t.Errorf("labels %v: the exclude-preparing-delete label was removed", got.Labels)
	}
	wantWarnings := []string{`metadata.annotations[apps.kruise.io/image-predownload-parallelism]: removed: "4" disagrees with spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy.imagePreDownloadParallelism, which takes precedence`}
	if diff := cmp.Diff(wantWarnings, resp.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}

	// A v1alpha1 write keeps its annotations: they are its fields.
	alpha := defaultedAlpha()
	alpha.Annotations = map[string]string{appsv1alpha1.ImagePreDownloadParallelismKey: "4"}
	alpha.Spec.UpdateStrategy.InPlaceUpdateStrategy = &appsv1alpha1.InPlaceUpdateStrategy{ImagePreDownloadParallelism: intOrStr(intstr.FromInt32(5))}
	alphaResp := f.handle(t, webhook.Mutating, request(t, "v1alpha1", admissionv1.Create, alpha, nil))
	if len(alphaResp.Patch) != 0 || len(alphaResp.Warnings) != 0 {
		t.Errorf("v1alpha1 write patched %s, warned %v; want neither", alphaResp.Patch, alphaResp.Warnings)
	}
}

func TestBadRequests(t *testing.T) {
	reserved := validBeta()
	reserved.Annotations = map[string]string{appsv1beta1.ConversionAnnotationPrefix + "v1alpha1": "{}"}
	for _, tc := range []struct {
		name    string
		version string
		object  any
		message string
	}{
		{"not JSON", "v1alpha1", `{"spec": `, "decoding request.object as a CloneSet"},
		{"unknown field", "v1beta1", `{"apiVersion":"apps.kruise.io/v1beta1","kind":"CloneSet","spec":{"replicas":1,"replica":2}}`, `unknown field "spec.replica"`},
		{"unknown template field", "v1alpha1", `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"CloneSet","spec":{"template":{"spec":{"containerz":[]}}}}`, `unknown field "spec.template.spec.containerz"`},
		{"another version", "v1", validBeta(), "this webhook admits apps.kruise.io/v1alpha1, Kind=CloneSet and apps.kruise.io/v1beta1, Kind=CloneSet only"},
		{"reserved annotation", "v1beta1", reserved, "metadata.annotations: annotation conversion.bosun.dev/v1alpha1 is reserved for version conversion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, typ := range []webhook.Type{webhook.Mutating, webhook.Validating} {
				resp := newFixture().handle(t, typ, request(t, tc.version, admissionv1.Create, tc.object, nil))
				if resp.Allowed || resp.Result.Code != http.StatusBadRequest || !strings.Contains(resp.Result.Message, tc.message) {
					t.Errorf("%s answered %v, want a 400 saying %q", typ, resp.Result, tc.message)
				}
			}
		})
	}
}

// Invalid objects get a 422 in both versions, named at the fields the client wrote; the
// answers agree for every rule, and so do the objects accepted.
func TestValidateBothVersions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*appsv1alpha1.CloneSet)
		// beta and alpha are the fields named in each version; empty when accepted.
		beta, alpha string
	}{
		{"valid", func(*appsv1alpha1.CloneSet) {}, "", ""},
		{"OnDelete", func(cs *appsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.Type = appsv1alpha1.OnDeleteCloneSetUpdateStrategyType
		}, "", ""},
		{"maxUnavailable 0 with maxSurge 1", func(cs *appsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.MaxUnavailable = intOrStr(intstr.FromInt32(0))
			cs.Spec.UpdateStrategy.MaxSurge = intOrStr(intstr.FromInt32(1))
		}, "", ""},
		{"empty selector", func(cs *appsv1alpha1.CloneSet) { cs.Spec.Selector = &metav1.LabelSelector{} }, "spec.selector", "spec.selector"},
		{"restartPolicy Never", func(cs *appsv1alpha1.CloneSet) { cs.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			"spec.template.spec.restartPolicy", "spec.template.spec.restartPolicy"},
		{"partition -1", func(cs *appsv1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Partition = intOrStr(intstr.FromInt32(-1)) },
			"spec.updateStrategy.rollingUpdate.partition", "spec.updateStrategy.partition"},
		{"maxUnavailable 0 with maxSurge 0", func(cs *appsv1alpha1.CloneSet) { cs.Spec.UpdateStrategy.MaxUnavailable = intOrStr(intstr.FromInt32(0)) },
			"spec.updateStrategy.rollingUpdate.maxUnavailable", "spec.updateStrategy.maxUnavailable"},
		{"InPlaceOnly with maxSurge 1", func(cs *appsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
			cs.Spec.UpdateStrategy.MaxSurge = intOrStr(intstr.FromInt32(1))
		}, "spec.updateStrategy.rollingUpdate.maxSurge", "spec.updateStrategy.maxSurge"},
		{"both priority kinds", func(cs *appsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.PriorityStrategy = &appsv1alpha1.UpdatePriorityStrategy{
				WeightPriority: []appsv1alpha1.UpdatePriorityWeightTerm{{Weight: 1, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}}},
				OrderPriority:  []appsv1alpha1.UpdatePriorityOrderTerm{{OrderedKey: "rank"}},
			}
		}, "spec.updateStrategy.rollingUpdate.priorityStrategy", "spec.updateStrategy.priorityStrategy"},
		{"duplicate scatter term", func(cs *appsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.ScatterStrategy = appsv1alpha1.UpdateScatterStrategy{{Key: "zone", Value: "z1"}, {Key: "zone", Value: "z1"}}
		}, "spec.updateStrategy.rollingUpdate.scatterStrategy[1]", "spec.updateStrategy.scatterStrategy[1]"},
		{"progressDeadlineSeconds within minReadySeconds", func(cs *appsv1alpha1.CloneSet) {
			cs.Spec.MinReadySeconds = 30
			cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](30)
		}, "spec.progressDeadlineSeconds", "spec.progressDeadlineSeconds"},
		{"negative pre-download field", func(cs *appsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.InPlaceUpdateStrategy = &appsv1alpha1.InPlaceUpdateStrategy{ImagePreDownloadTimeoutSeconds: ptr.To[int32](-1)}
		}, "spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy.imagePreDownloadTimeoutSeconds",
			"spec.updateStrategy.inPlaceUpdateStrategy.imagePreDownloadTimeoutSeconds"},
		{"negative pre-download annotation", func(cs *appsv1alpha1.CloneSet) {
			cs.Annotations = map[string]string{appsv1alpha1.ImagePreDownloadMinUpdatedReadyPods: "-1"}
		}, "metadata.annotations[apps.kruise.io/image-predownload-min-updated-ready-pods]",
			"metadata.annotations[apps.kruise.io/image-predownload-min-updated-ready-pods]"},
		{"pre-download annotation that does not parse", func(cs *appsv1alpha1.CloneSet) {
			cs.Annotations = map[string]string{appsv1alpha1.ImagePreDownloadParallelismKey: "many"}
		}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			cs := defaultedAlpha()
			tc.mutate(cs)
			check := func(what string, resp *admissionv1.AdmissionResponse, fields string) {
				t.Helper()
				want := "allowed"
				if fields != "" {
					want = "Unprocessable Entity " + fields
				}
				if got := webhooktest.Verdict(resp); got != want {
					t.Errorf("%s answered %s, want %s", what, got, want)
				}
			}
			check("v1alpha1 create", f.handle(t, webhook.Validating, request(t, "v1alpha1", admissionv1.Create, cs, nil)), tc.alpha)
			check("v1beta1 create", f.handle(t, webhook.Validating, request(t, "v1beta1", admissionv1.Create, up(cs), nil)), tc.beta)
			old := defaultedAlpha()
			// An update of an immutable field is named at the spec too.
			onUpdate := func(fields string) string {
				if tc.name == "empty selector" {
					return fields + ",spec"
				}
				return fields
			}
			check("v1alpha1 update", f.handle(t, webhook.Validating, request(t, "v1alpha1", admissionv1.Update, cs, old)), onUpdate(tc.alpha))
			check("v1beta1 update", f.handle(t, webhook.Validating, request(t, "v1beta1", admissionv1.Update, up(cs), up(old))), onUpdate(tc.beta))
		})
	}
}

// A v1alpha1 type no version accepts is named, with v1alpha1's values, at its type.
func TestValidateAlphaType(t *testing.T) {
	cs := defaultedAlpha()
	cs.Spec.UpdateStrategy.Type = "Sideways"
	resp := newFixture().handle(t, webhook.Validating, request(t, "v1alpha1", admissionv1.Create, cs, nil))
	want := `CloneSet.apps.kruise.io "web" is invalid: spec.updateStrategy.type: Unsupported value: "Sideways": supported values: "InPlaceIfPossible", "InPlaceOnly", "OnDelete", "ReCreate"`
	if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity || resp.Result.Message != want {
		t.Errorf("answer %v, want a 422 saying %s", resp.Result, want)
	}
}

// The update rule's denial reads as OpenKruise's, word for word.
func TestValidateUpdateMessage(t *testing.T) {
	old := defaultedAlpha()
	cs := old.DeepCopy()
	cs.Spec.Selector.MatchLabels["tier"] = "a"
	cs.Spec.Template.Labels["tier"] = "a"
	resp := newFixture().handle(t, webhook.Validating, request(t, "v1alpha1", admissionv1.Update, cs, old))
	want := `CloneSet.apps.kruise.io "web" is invalid: spec: Forbidden: updates to cloneset spec for fields other than 'replicas', 'template', 'lifecycle', 'scaleStrategy', 'updateStrategy', 'minReadySeconds', 'progressDeadlineSeconds', 'volumeClaimTemplates' and 'revisionHistoryLimit' are forbidden`
	if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity || resp.Result.Message != want {
		t.Errorf("answer %v, want a 422 saying %s", resp.Result, want)
	}
}

// An update that changes neither the spec nor the v1alpha1 forms of its fields is not
// judged again: a CloneSet stored under other rules can still be labelled, finalized and
// migrated. Any change to them is judged in full.
func TestValidateUnchangedSettingsPass(t *testing.T) {
	stored := defaultedAlpha()
	stored.Spec.UpdateStrategy.MaxUnavailable = intOrStr(intstr.FromInt32(0)) // invalid here
	f := newFixture()
	relabelled := stored.DeepCopy()
	relabelled.Labels = map[string]string{"owner": "team-a"}
	relabelled.Finalizers = []string{"example.com/keep"}
	if got := webhooktest.Verdict(f.handle(t, webhook.Validating, request(t, "v1alpha1", admissionv1.Update, relabelled, stored))); got != "allowed" {
		t.Errorf("metadata-only update answered %s, want allowed", got)
	}
	scaled := stored.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](5)
	if got, want := webhooktest.Verdict(f.handle(t, webhook.Validating, request(t, "v1alpha1", admissionv1.Update, scaled, stored))),
		"Unprocessable Entity spec.updateStrategy.maxUnavailable"; got != want {
		t.Errorf("spec update answered %s, want %s", got, want)
	}
	annotated := stored.DeepCopy()
	annotated.Annotations = map[string]string{appsv1alpha1.ImagePreDownloadTimeoutSecondsKey: "30"}
	if got, want := webhooktest.Verdict(f.handle(t, webhook.Validating, request(t, "v1alpha1", admissionv1.Update, annotated, stored))),
		"Unprocessable Entity spec.updateStrategy.maxUnavailable"; got != want {
		t.Errorf("carrier update answered %s, want %s", got, want)
	}
}

// pod is a pod in the CloneSet's namespace, controlled by owner (none when empty).
func pod(name string, owner types.UID) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1beta1", Kind: "CloneSet", Name: "web",
			UID: owner, Controller: ptr.To(true)}}
	}
	return p
}

// The pods an update adds to podsToDelete are looked up live: each must exist, not be
// terminating and be controlled by this CloneSet. Names already listed are not looked up
// again (the controller removes those of pods that are gone).
func TestPodsToDelete(t *testing.T) {
	const uid = types.UID("cloneset-uid")
	terminating := pod("web-term", uid)
	terminating.DeletionTimestamp = &metav1.Time{}
	terminating.Finalizers = []string{"example.com/hold"}
	f := newFixture(pod("web-aaaaa", uid), pod("web-bbbbb", uid), terminating, pod("other", "other-uid"), pod("orphan", ""))

	old := defaultedAlpha()
	old.Spec.ScaleStrategy.PodsToDelete = []string{"web-gone"}
	for _, tc := range []struct {
		name  string
		names []string
		want  []string
	}{
		{name: "own pods", names: []string{"web-gone", "web-aaaaa", "web-bbbbb"}},
		{name: "names removed", names: nil},
		{name: "foreign, orphan, terminating and missing pods", names: []string{"web-gone", "other", "orphan", "web-term", "web-missing"}, want: []string{
			`spec.scaleStrategy.podsToDelete[1]: Invalid value: "other": the pod is not controlled by this CloneSet`,
			`spec.scaleStrategy.podsToDelete[2]: Invalid value: "orphan": the pod is not controlled by this CloneSet`,
			`spec.scaleStrategy.podsToDelete[3]: Invalid value: "web-term": the pod is already terminating`,
			`spec.scaleStrategy.podsToDelete[4]: Invalid value: "web-missing": no such pod in the namespace of the CloneSet`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.client.ClearActions()
			cs := old.DeepCopy()
			cs.Spec.ScaleStrategy.PodsToDelete = tc.names
			for _, version := range []string{"v1alpha1", "v1beta1"} {
				var object, oldObject any = cs, old
				if version == "v1beta1" {
					object, oldObject = up(cs), up(old)
				}
				resp := f.handle(t, webhook.Validating, request(t, version, admissionv1.Update, object, oldObject))
				if len(tc.want) == 0 {
					if !resp.Allowed {
						t.Errorf("%s: denied: %v", version, resp.Result)
					}
				} else if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity ||
					resp.Result.Message != `CloneSet.apps.kruise.io "web" is invalid: [`+strings.Join(tc.want, ", ")+`]` {
					t.Errorf("%s: answer %v, want a 422 with %v", version, resp.Result, tc.want)
				}
			}
			for _, action := range f.client.Actions() {
				if get, ok := action.(clienttesting.GetAction); !ok || get.GetName() == "web-gone" {
					t.Errorf("unexpected request %v", action)
				}
			}
		})
	}

	// On creation, every name is new, and no pod can be controlled by a CloneSet not yet
	// stored.
	cs := defaultedAlpha()
	cs.Spec.ScaleStrategy.PodsToDelete = []string{"other"}
	if got, want := webhooktest.Verdict(f.handle(t, webhook.Validating, request(t, "v1alpha1", admissionv1.Create, cs, nil))),
		"Unprocessable Entity spec.scaleStrategy.podsToDelete[0]"; got != want {
		t.Errorf("create answered %s, want %s", got, want)
	}

	// A list with a name twice is refused as such, without lookups.
	f.client.ClearActions()
	cs.Spec.ScaleStrategy.PodsToDelete = []string{"web-missing", "web-missing"}
	if got, want := webhooktest.Verdict(f.handle(t, webhook.Validating, request(t, "v1alpha1", admissionv1.Create, cs, nil))),
		"Unprocessable Entity spec.scaleStrategy.podsToDelete[1]"; got != want {
		t.Errorf("duplicates answered %s, want %s", got, want)
	}
	if actions := f.client.Actions(); len(actions) != 0 {
		t.Errorf("duplicates were looked up: %v", actions)
	}
}

// A lookup that fails for another reason than the pod's absence is a 500, which the client
// may retry, not a verdict on the object.
func TestPodsToDeleteLookupFailure(t *testing.T) {
	f := newFixture()
	f.client.PrependReactor("get", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is having a moment")
	})
	cs := defaultedAlpha()
	cs.Spec.ScaleStrategy.PodsToDelete = []string{"web-aaaaa"}
	resp := f.handle(t, webhook.Validating, request(t, "v1alpha1", admissionv1.Create, cs, nil))
	if resp.Allowed || resp.Result.Code != http.StatusInternalServerError ||
		resp.Result.Message != "looking up pod ns/web-aaaaa named in spec.scaleStrategy.podsToDelete: etcd is having a moment" {
		t.Errorf("answer %v, want a 500 naming the pod", resp.Result)
	}
}

// Deletions are not the webhooks' business.
func TestOtherOperationsAllowed(t *testing.T) {
	f := newFixture()
	for _, typ := range []webhook.Type{webhook.Mutating, webhook.Validating} {
		req := request(t, "v1beta1", admissionv1.Delete, nil, validBeta())
		if resp := f.handle(t, typ, req); !resp.Allowed || len(resp.Patch) != 0 {
			t.Errorf("%s: DELETE answered %v", typ, resp.Result)
		}
	}
}

// Through the server, as the API server calls it: the review's UID is answered.
func TestThroughTheServer(t *testing.T) {
	f := newFixture()
	s := webhook.NewServer(webhook.ServerOptions{})
	for _, r := range Registrations(f.client.CoreV1(), f.gates) {
		if err := s.Register(r); err != nil {
			t.Fatal(err)
		}
	}
	cs := defaultedAlpha()
	cs.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  request(t, "v1alpha1", admissionv1.Create, cs, nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, ValidatingPath, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	var answer admissionv1.AdmissionReview
	if err := json.Unmarshal(w.Body.Bytes(), &answer); err != nil {
		t.Fatalf("HTTP %d: %v; body %s", w.Code, err, w.Body)
	}
	if answer.Response == nil || answer.Response.UID != "request-uid" || answer.Response.Allowed || answer.Response.Result.Code != http.StatusUnprocessableEntity {
		t.Errorf("answer %s, want a 422 for request-uid", w.Body)
	}
}

// Over many random CloneSets, a v1alpha1 write and its v1beta1 form get the same answer and
// code, and their errors name the same fields, each as its version spells it.
func TestValidationAnswersAgreeRandomly(t *testing.T) {
	types := []appsv1alpha1.CloneSetUpdateStrategyType{"ReCreate", "InPlaceIfPossible", "InPlaceOnly", "OnDelete", "Sideways"}
	values := []intstr.IntOrString{intstr.FromInt32(-1), intstr.FromInt32(0), intstr.FromInt32(1), intstr.FromInt32(3),
		intstr.FromString("0%"), intstr.FromString("50%"), intstr.FromString("150%"), intstr.FromString("x")}
	filler := randfill.NewWithSeed(20261127).NilChance(0.5).NumElements(0, 3).MaxDepth(6).Funcs(
		func(v *intstr.IntOrString, c randfill.Continue) { *v = values[c.Intn(len(values))] },
		func(v *appsv1alpha1.CloneSetUpdateStrategyType, c randfill.Continue) { *v = types[c.Intn(len(types))] },
		func(v *int32, c randfill.Continue) { *v = c.Int31n(5) - 1 },
		func(v *string, c randfill.Continue) { *v = []string{"", "a", "zone", "web-aaaaa"}[c.Intn(4)] },
		func(*corev1.PodTemplateSpec, randfill.Continue) {},
		func(*[]corev1.PersistentVolumeClaim, randfill.Continue) {},
		func(*metav1.LabelSelector, randfill.Continue) {},
		func(*appsv1alpha1.Lifecycle, randfill.Continue) {},
		func(*metav1.ObjectMeta, randfill.Continue) {},
		func(*appsv1alpha1.CloneSetStatus, randfill.Continue) {},
	)
	f := newFixture()
	const objects = 300
	denied := 0
	for i := range objects {
		cs := validAlpha()
		filler.Fill(&cs.Spec.UpdateStrategy)
		filler.Fill(&cs.Spec.ScaleStrategy)
		filler.Fill(&cs.Spec.ProgressDeadlineSeconds)
		filler.Fill(&cs.Spec.MinReadySeconds)
		SetDefaults(cs, true)
		alpha := f.handle(t, webhook.Validating, request(t, "v1alpha1", admissionv1.Create, cs, nil))
		beta := f.handle(t, webhook.Validating, request(t, "v1beta1", admissionv1.Create, up(cs), nil))
		if alpha.Allowed != beta.Allowed {
			t.Fatalf("object %d: v1alpha1 allowed %t, v1beta1 %t: %v / %v\nspec: %+v", i, alpha.Allowed, beta.Allowed, alpha.Result, beta.Result, cs.Spec)
		}
		if alpha.Allowed {
			continue
		}
		denied++
		if alpha.Result.Code != beta.Result.Code {
			t.Fatalf("object %d: v1alpha1 code %d, v1beta1 %d", i, alpha.Result.Code, beta.Result.Code)
		}
		var betaErrs field.ErrorList
		for _, c := range beta.Result.Details.Causes {
			betaErrs = append(betaErrs, &field.Error{Type: field.ErrorType(c.Type), Field: c.Field})
		}
		var want, got []string
		for _, e := range alphaPaths(betaErrs) {
			want = append(want, e.Field)
		}
		for _, c := range alpha.Result.Details.Causes {
			got = append(got, c.Field)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("object %d: v1alpha1 fields differ from v1beta1's renamed (-want +got):\n%s", i, diff)
		}
	}
	// The random objects must exercise both answers for the comparison to mean anything.
	if denied == 0 || denied == objects {
		t.Errorf("%d of %d objects denied; want some of each", denied, objects)
	}
}
