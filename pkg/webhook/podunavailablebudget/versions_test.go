package podunavailablebudget

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/webhook"
	"github.com/bosun-dev/bosun/pkg/webhook/webhooktest"
)

// newRequestIn is newRequest in version.
func newRequestIn(t *testing.T, version string, op admissionv1.Operation, object, oldObject any) *admissionv1.AdmissionRequest {
	t.Helper()
	req := newRequest(t, op, object, oldObject)
	req.Kind.Version = version
	req.Resource.Version = version
	return req
}

// betaOf is the v1beta1 form of a v1alpha1 budget, as a v1beta1 client writes it.
func betaOf(pub *policyv1alpha1.PodUnavailableBudget) *policyv1beta1.PodUnavailableBudget {
	hub := up(pub)
	delete(hub.Annotations, policyv1alpha1.V1alpha1ConversionAnnotation)
	hub.TypeMeta = metav1.TypeMeta{APIVersion: "policy.kruise.io/v1beta1", Kind: "PodUnavailableBudget"}
	return hub
}

// A budget gets the same answer in both versions, errors on carried fields named at their
// v1alpha1 annotation.
func TestValidateBothVersions(t *testing.T) {
	annotated := func(kv ...string) func(*policyv1alpha1.PodUnavailableBudget) {
		return func(pub *policyv1alpha1.PodUnavailableBudget) {
			pub.Annotations = map[string]string{}
			for i := 0; i < len(kv); i += 2 {
				pub.Annotations[kv[i]] = kv[i+1]
			}
		}
	}
	for _, tc := range []struct {
		name   string
		budget func(string) *policyv1alpha1.PodUnavailableBudget
		mutate func(*policyv1alpha1.PodUnavailableBudget)
		want   string
	}{
		{"valid", selectorBudget, func(*policyv1alpha1.PodUnavailableBudget) {}, "allowed"},
		{"valid targetRef", targetRefBudget, func(*policyv1alpha1.PodUnavailableBudget) {}, "allowed"},
		{"operations with spaces", selectorBudget, annotated(policyv1alpha1.PubProtectOperationAnnotation, "DELETE, EVICT"), "allowed"},
		{"total replicas 0 means no override", selectorBudget, annotated(policyv1alpha1.PubProtectTotalReplicasAnnotation, "0"), "allowed"},
		{"total replicas -3", selectorBudget, annotated(policyv1alpha1.PubProtectTotalReplicasAnnotation, "-3"), "allowed"},
		{"unknown operation", selectorBudget, annotated(policyv1alpha1.PubProtectOperationAnnotation, "DELETE,FOO"),
			"Bad Request metadata.annotations[kruise.io/pub-protect-operations]"},
		{"total replicas abc", selectorBudget, annotated(policyv1alpha1.PubProtectTotalReplicasAnnotation, "abc"),
			"Bad Request metadata.annotations[pub.kruise.io/protect-total-replicas]"},
		{"empty selector", selectorBudget, func(pub *policyv1alpha1.PodUnavailableBudget) { pub.Spec.Selector = &metav1.LabelSelector{} },
			"Bad Request spec.selector"},
		{"both limits", selectorBudget, func(pub *policyv1alpha1.PodUnavailableBudget) {
			pub.Spec.MinAvailable = ptr.To(intstr.FromInt32(1))
		}, "Bad Request spec.minAvailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pub := tc.budget("b")
			tc.mutate(pub)
			gates := newGates(t, true, false)
			alpha := handle(t, newLister(t), gates, newRequestIn(t, "v1alpha1", admissionv1.Create, pub, nil))
			beta := handle(t, newLister(t), gates, newRequestIn(t, "v1beta1", admissionv1.Create, betaOf(pub), nil))
			if got := webhooktest.Verdict(alpha); got != tc.want {
				t.Errorf("v1alpha1 answered %s, want %s", got, tc.want)
			}
			if got := webhooktest.Verdict(beta); got != tc.want {
				t.Errorf("v1beta1 answered %s, want %s", got, tc.want)
			}
		})
	}
}

// The v1beta1-only rules: a total below 1 set as a field, operations outside the enum,
// an empty or malformed ignoredPodSelector.
func TestValidateV1beta1Fields(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*policyv1beta1.PodUnavailableBudget)
		want   string
	}{
		{"total 3", func(pub *policyv1beta1.PodUnavailableBudget) { pub.Spec.ProtectTotalReplicas = ptr.To[int32](3) }, "allowed"},
		{"total 0", func(pub *policyv1beta1.PodUnavailableBudget) { pub.Spec.ProtectTotalReplicas = ptr.To[int32](0) },
			"Bad Request spec.protectTotalReplicas"},
		{"total 0 as carried from v1alpha1", func(pub *policyv1beta1.PodUnavailableBudget) {
			pub.Spec.ProtectTotalReplicas = ptr.To[int32](0)
			pub.Annotations = map[string]string{policyv1beta1.PubProtectTotalReplicasAnnotation: "0"}
		}, "allowed"},
		{"operations", func(pub *policyv1beta1.PodUnavailableBudget) {
			pub.Spec.ProtectOperations = []policyv1beta1.PubOperation{"EVICT", "RESIZE"}
		}, "allowed"},
		{"unknown and duplicate operations", func(pub *policyv1beta1.PodUnavailableBudget) {
			pub.Spec.ProtectOperations = []policyv1beta1.PubOperation{"EVICT", "FOO", "EVICT"}
		}, "Bad Request spec.protectOperations[1],spec.protectOperations[2]"},
		{"ignoredPodSelector", func(pub *policyv1beta1.PodUnavailableBudget) {
			pub.Spec.IgnoredPodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
		}, "allowed"},
		{"empty ignoredPodSelector", func(pub *policyv1beta1.PodUnavailableBudget) {
			pub.Spec.IgnoredPodSelector = &metav1.LabelSelector{}
		}, "Bad Request spec.ignoredPodSelector"},
		{"malformed ignoredPodSelector", func(pub *policyv1beta1.PodUnavailableBudget) {
			pub.Spec.IgnoredPodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"-bad": "x"}}
		}, "Bad Request spec.ignoredPodSelector.matchLabels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pub := betaOf(selectorBudget("b"))
			tc.mutate(pub)
			resp := handle(t, newLister(t), newGates(t, true, false), newRequestIn(t, "v1beta1", admissionv1.Create, pub, nil))
			if got := webhooktest.Verdict(resp); got != tc.want {
				t.Errorf("answered %s, want %s", got, tc.want)
			}
		})
	}
}

// Budgets conflict whatever version each was written in.
func TestConflictsAcrossVersions(t *testing.T) {
	existing := selectorBudget("web")
	existing.Annotations = map[string]string{policyv1alpha1.PubProtectOperationAnnotation: "EVICT"}
	lister := newLister(t, existing)
	gates := newGates(t, true, false)
	for _, version := range []string{"v1alpha1", "v1beta1"} {
		var object any = selectorBudget("b")
		if version == "v1beta1" {
			object = betaOf(selectorBudget("b"))
		}
		resp := handle(t, lister, gates, newRequestIn(t, version, admissionv1.Create, object, nil))
		checkDenied(t, resp, "b", []string{"spec.selector"}, "in conflict with other PodUnavailableBudget web")
	}
}

// A v1beta1 write whose fields disagree with their v1alpha1 annotations loses the
// annotations, with a warning; annotations that agree, or have no field, are kept.
func TestStaleCarriers(t *testing.T) {
	mutating := func(t *testing.T) webhook.Registration {
		return registration(t, Registrations(newLister(t), newGates(t, true, false)), webhook.Mutating)
	}
	pub := betaOf(selectorBudget("b"))
	pub.Spec.ProtectTotalReplicas = ptr.To[int32](3)
	pub.Spec.ProtectOperations = []policyv1beta1.PubOperation{"EVICT"}
	pub.Annotations = map[string]string{
		policyv1beta1.PubProtectTotalReplicasAnnotation: "5",
		policyv1beta1.PubProtectOperationAnnotation:     "EVICT",
		"other": "kept",
	}
	resp := mutating(t).Handler.Handle(t.Context(), newRequestIn(t, "v1beta1", admissionv1.Create, pub, nil))
	if !resp.Allowed {
		t.Fatalf("denied: %+v", resp.Result)
	}
	if want := `[{"op":"remove","path":"/metadata/annotations/pub.kruise.io~1protect-total-replicas"}]`; string(resp.Patch) != want {
		t.Errorf("patch %s, want %s", resp.Patch, want)
	}
	if len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "spec.protectTotalReplicas (3)") {
		t.Errorf("warnings %q, want one about protectTotalReplicas", resp.Warnings)
	}

	pub.Annotations[policyv1beta1.PubProtectOperationAnnotation] = "DELETE"
	pub.Annotations[policyv1beta1.PubProtectTotalReplicasAnnotation] = "3"
	resp = mutating(t).Handler.Handle(t.Context(), newRequestIn(t, "v1beta1", admissionv1.Update, pub, pub))
	if want := `[{"op":"remove","path":"/metadata/annotations/kruise.io~1pub-protect-operations"}]`; string(resp.Patch) != want {
		t.Errorf("patch %s, want %s", resp.Patch, want)
	}

	// A carrier without its field is the budget's setting: kept, and judged by the
	// v1alpha1 rules.
	carrierOnly := betaOf(selectorBudget("b"))
	carrierOnly.Annotations = map[string]string{policyv1beta1.PubProtectTotalReplicasAnnotation: "0"}
	resp = mutating(t).Handler.Handle(t.Context(), newRequestIn(t, "v1beta1", admissionv1.Create, carrierOnly, nil))
	if !resp.Allowed || resp.Patch != nil || len(resp.Warnings) != 0 {
		t.Errorf("carrier without field: %+v patch %s warnings %q, want allowed unchanged", resp.Result, resp.Patch, resp.Warnings)
	}
	checkAllowed(t, handle(t, newLister(t), newGates(t, true, false), newRequestIn(t, "v1beta1", admissionv1.Create, carrierOnly, nil)))
	carrierOnly.Annotations[policyv1beta1.PubProtectTotalReplicasAnnotation] = "many"
	checkDenied(t, handle(t, newLister(t), newGates(t, true, false), newRequestIn(t, "v1beta1", admissionv1.Create, carrierOnly, nil)),
		"b", []string{"metadata.annotations[pub.kruise.io/protect-total-replicas]"})

	// v1alpha1 writes are let through untouched.
	alpha := selectorBudget("b")
	alpha.Annotations = map[string]string{policyv1alpha1.PubProtectTotalReplicasAnnotation: "5"}
	resp = mutating(t).Handler.Handle(t.Context(), newRequestIn(t, "v1alpha1", admissionv1.Create, alpha, nil))
	if !resp.Allowed || resp.Patch != nil {
		t.Errorf("v1alpha1 write: %+v patch %s, want allowed unchanged", resp.Result, resp.Patch)
	}
}

// Both paths are answered, and other versions are refused with a 400.
func TestPathsAndVersions(t *testing.T) {
	s := webhook.NewServer(webhook.ServerOptions{})
	for _, r := range Registrations(newLister(t), newGates(t, true, false)) {
		if err := s.Register(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range []string{ValidatingPath, LegacyValidatingPath} {
		body, _ := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request:  newRequest(t, admissionv1.Create, userBudget, nil),
		})
		resp := serve(t, s, path, body)
		if !resp.Allowed {
			t.Errorf("%s: denied %+v", path, resp.Result)
		}
	}
	for _, typ := range []webhook.Type{webhook.Mutating, webhook.Validating} {
		resp := registration(t, Registrations(newLister(t), newGates(t, true, false)), typ).Handler.Handle(t.Context(),
			newRequestIn(t, "v1beta2", admissionv1.Create, userBudget, nil))
		if resp.Allowed || resp.Result.Code != http.StatusBadRequest {
			t.Errorf("%s: v1beta2 answered %+v, want 400", typ, resp.Result)
		}
	}
}

// serve posts a review body to path on s and returns the answer.
func serve(t *testing.T, s *webhook.Server, path string, body []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("%s: HTTP status %d, want 200; body: %s", path, w.Code, w.Body)
	}
	var answer admissionv1.AdmissionReview
	if err := json.Unmarshal(w.Body.Bytes(), &answer); err != nil || answer.Response == nil {
		t.Fatalf("%s: decoding the answer: %v; body: %s", path, err, w.Body)
	}
	return answer.Response
}
