package podunavailablebudget

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/pubutil"
	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/webhook"
	policylisters "github.com/bosun-dev/client-go/listers/policy/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2/ktesting"
)

// A budget as a user would write it.
const userBudget = `{
  "apiVersion": "policy.kruise.io/v1alpha1",
  "kind": "PodUnavailableBudget",
  "metadata": {"name": "b", "namespace": "shop"},
  "spec": {
    "selector": {"matchLabels": {"app": "web"}},
    "maxUnavailable": "25%"
  }
}`

// newLister is a budget lister over the given budgets, held in v1beta1 as the informer
// holds them whatever version they were written in.
func newLister(t *testing.T, budgets ...*policyv1alpha1.PodUnavailableBudget) policylisters.PodUnavailableBudgetLister {
	t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, b := range budgets {
		hub := &policyv1beta1.PodUnavailableBudget{}
		policyv1alpha1.ConvertPodUnavailableBudgetToV1beta1(b.DeepCopy(), hub)
		if err := indexer.Add(hub); err != nil {
			t.Fatal(err)
		}
	}
	return policylisters.NewPodUnavailableBudgetLister(indexer)
}

// newGates is a feature gate with the two PUB gates set as given.
func newGates(t *testing.T, deleteGate, updateGate bool) featuregate.MutableVersionedFeatureGate {
	t.Helper()
	gates := features.NewFeatureGate()
	if err := gates.SetFromMap(map[string]bool{
		string(features.PodUnavailableBudgetDeleteGate): deleteGate,
		string(features.PodUnavailableBudgetUpdateGate): updateGate,
	}); err != nil {
		t.Fatal(err)
	}
	return gates
}

// encode returns object's JSON: object itself when it is a string, "" for nil.
func encode(t *testing.T, object any) []byte {
	t.Helper()
	switch o := object.(type) {
	case nil:
		return nil
	case string:
		return []byte(o)
	default:
		raw, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
}

// newRequest is a request for budget b of namespace shop; object and oldObject are budgets
// or their JSON.
func newRequest(t *testing.T, op admissionv1.Operation, object, oldObject any) *admissionv1.AdmissionRequest {
	t.Helper()
	req := &admissionv1.AdmissionRequest{
		UID:       types.UID("uid-1"),
		Kind:      metav1.GroupVersionKind{Group: "policy.kruise.io", Version: "v1alpha1", Kind: "PodUnavailableBudget"},
		Resource:  metav1.GroupVersionResource{Group: "policy.kruise.io", Version: "v1alpha1", Resource: "podunavailablebudgets"},
		Namespace: "shop",
		Name:      "b",
		Operation: op,
	}
	req.Object = runtime.RawExtension{Raw: encode(t, object)}
	req.OldObject = runtime.RawExtension{Raw: encode(t, oldObject)}
	return req
}

// handle has the webhook, built on lister and gates, answer req.
func handle(t *testing.T, lister policylisters.PodUnavailableBudgetLister, gates featuregate.FeatureGate, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	resp := registration(t, Registrations(lister, gates), webhook.Validating).Handler.Handle(ctx, req)
	if resp == nil {
		t.Fatal("no response")
	}
	return resp
}

// checkDenied fails unless resp is a 400 Bad Request for budget name whose causes and
// message name exactly the given fields, and whose message contains each of messages.
func checkDenied(t *testing.T, resp *admissionv1.AdmissionResponse, name string, fields []string, messages ...string) {
	t.Helper()
	if resp.Allowed {
		t.Fatalf("allowed, want a 400 denial")
	}
	status := resp.Result
	if status == nil || status.Code != http.StatusBadRequest || status.Reason != metav1.StatusReasonBadRequest || status.Status != metav1.StatusFailure {
		t.Fatalf("result %+v, want a 400 BadRequest failure", status)
	}
	if status.Details == nil || status.Details.Group != "policy.kruise.io" || status.Details.Kind != "PodUnavailableBudget" || status.Details.Name != name {
		t.Fatalf("details %+v, want policy.kruise.io PodUnavailableBudget %s", status.Details, name)
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
	for _, m := range messages {
		if !strings.Contains(status.Message, m) {
			t.Errorf("message %q does not contain %q", status.Message, m)
		}
	}
}

func checkAllowed(t *testing.T, resp *admissionv1.AdmissionResponse) {
	t.Helper()
	if !resp.Allowed {
		t.Fatalf("denied: %+v", resp.Result)
	}
	if len(resp.Patch) != 0 {
		t.Errorf("a validating webhook answered with a patch: %s", resp.Patch)
	}
}

// registration is the one registration of type typ among regs.
func registration(t *testing.T, regs []webhook.Registration, typ webhook.Type) webhook.Registration {
	t.Helper()
	var found []webhook.Registration
	for _, r := range regs {
		if r.Type == typ {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %s registrations, want 1", len(found), typ)
	}
	return found[0]
}

func TestRegistrations(t *testing.T) {
	regs := Registrations(newLister(t), newGates(t, true, false))
	// The validating webhook of old, and one removing stale annotations from v1beta1
	// writes, which OpenKruise does not have.
	if len(regs) != 2 {
		t.Fatalf("%d registrations, want 2", len(regs))
	}
	m := registration(t, regs, webhook.Mutating)
	if m.Name != "mpodunavailablebudget.kb.io" || m.Path != "/mutate-policy-kruise-io-podunavailablebudget" || len(m.LegacyPaths) != 0 {
		t.Errorf("registration %s %s %v, want mpodunavailablebudget.kb.io /mutate-policy-kruise-io-podunavailablebudget", m.Name, m.Path, m.LegacyPaths)
	}
	if err := m.Validate(); err != nil {
		t.Error(err)
	}
	r := registration(t, regs, webhook.Validating)
	if r.Name != "vpodunavailablebudget.kb.io" || r.Path != "/validate-policy-kruise-io-podunavailablebudget" || r.Type != webhook.Validating {
		t.Errorf("registration %s %s %s, want vpodunavailablebudget.kb.io /validate-policy-kruise-io-podunavailablebudget Validating", r.Name, r.Path, r.Type)
	}
	if strings.Join(r.LegacyPaths, ",") != "/validate-policy-kruise-io-v1alpha1-podunavailablebudget" {
		t.Errorf("also served at %v, want /validate-policy-kruise-io-v1alpha1-podunavailablebudget", r.LegacyPaths)
	}
	if err := r.Validate(); err != nil {
		t.Error(err)
	}
	if r.FailurePolicy != nil && *r.FailurePolicy != admissionregistrationv1.Fail {
		t.Errorf("failure policy %s, want Fail", *r.FailurePolicy)
	}
	if len(r.Rules) != 1 {
		t.Fatalf("%d rules, want 1", len(r.Rules))
	}
	rule := r.Rules[0]
	ops := rule.Operations
	if len(ops) != 2 || ops[0] != admissionregistrationv1.Create || ops[1] != admissionregistrationv1.Update {
		t.Errorf("operations %v, want CREATE and UPDATE", ops)
	}
	// The status subresource is not listed: the pod webhook and the controller write it
	// constantly, and nothing in it needs validating.
	if strings.Join(rule.APIGroups, ",") != "policy.kruise.io" || strings.Join(rule.APIVersions, ",") != "v1alpha1,v1beta1" || strings.Join(rule.Resources, ",") != "podunavailablebudgets" {
		t.Errorf("rule %+v, want policy.kruise.io v1alpha1 and v1beta1 podunavailablebudgets", rule.Rule)
	}
}

func TestHandlerAllowsValidBudgets(t *testing.T) {
	gates := newGates(t, true, false)
	checkAllowed(t, handle(t, newLister(t), gates, newRequest(t, admissionv1.Create, userBudget, nil)))
	checkAllowed(t, handle(t, newLister(t), gates, newRequest(t, admissionv1.Create, targetRefBudget("b"), nil)))

	withAnnotations := selectorBudget("b")
	withAnnotations.Annotations = map[string]string{
		policyv1alpha1.PubProtectOperationAnnotation:     "DELETE, EVICT",
		policyv1alpha1.PubProtectTotalReplicasAnnotation: "3",
		pubutil.RetryDeniedEvictionsAnnotation:           "true",
		pubutil.ProtectNotReadyAnnotation:                "false",
	}
	checkAllowed(t, handle(t, newLister(t), gates, newRequest(t, admissionv1.Create, withAnnotations, nil)))
}

// Each invalid budget is denied with a 400 naming its field.
func TestHandlerDeniesInvalidBudgets(t *testing.T) {
	replace := func(old, new string) string {
		if !strings.Contains(userBudget, old) {
			t.Fatalf("%q is not in the budget", old)
		}
		return strings.Replace(userBudget, old, new, 1)
	}
	const (
		selector   = `"selector": {"matchLabels": {"app": "web"}}`
		maxUnavail = `"maxUnavailable": "25%"`
		targetRef  = `"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}`
		metadata   = `"metadata": {"name": "b", "namespace": "shop"`
	)
	tests := []struct {
		name   string
		object string
		fields []string
		msg    string
	}{
		{"neither selector nor targetRef", replace(selector+",", ""), []string{"spec.selector"}, "one of selector and targetRef is required"},
		{"both selector and targetRef", replace(selector, selector+", "+targetRef), []string{"spec.targetRef"}, "mutually exclusive"},
		{"empty selector", replace(selector, `"selector": {}`), []string{"spec.selector"}, "empty selector"},
		{"targetRef without kind", replace(selector, `"targetRef": {"apiVersion": "apps/v1", "name": "web"}`), []string{"spec.targetRef.kind"}, "Required value"},
		{"both maxUnavailable and minAvailable", replace(maxUnavail, maxUnavail+`, "minAvailable": 1`), []string{"spec.minAvailable"}, "mutually exclusive"},
		{"neither maxUnavailable nor minAvailable", replace(","+"\n    "+maxUnavail, ""), []string{"spec.maxUnavailable"}, "one of maxUnavailable and minAvailable is required"},
		{"maxUnavailable 150%", replace(maxUnavail, `"maxUnavailable": "150%"`), []string{"spec.maxUnavailable"}, "must not be greater than 100%"},
		{"protect-operations DELETE,FOO", replace(metadata, metadata+`, "annotations": {"kruise.io/pub-protect-operations": "DELETE,FOO"}`),
			[]string{"metadata.annotations[kruise.io/pub-protect-operations]"}, `unknown operation "FOO"`},
		{"protect-total-replicas abc", replace(metadata, metadata+`, "annotations": {"pub.kruise.io/protect-total-replicas": "abc"}`),
			[]string{"metadata.annotations[pub.kruise.io/protect-total-replicas]"}, "must be a decimal 32-bit integer"},

		{"bosun annotations not booleans", replace(metadata, metadata+`, "annotations": {"pub.bosun.dev/retry-denied-evictions": "yes", "pub.bosun.dev/protect-not-ready": "on"}`),
			[]string{"metadata.annotations[pub.bosun.dev/retry-denied-evictions]", "metadata.annotations[pub.bosun.dev/protect-not-ready]"}, `supported values: "true", "false"`},
		{"targetRef apiVersion that does not parse", replace(selector, `"targetRef": {"apiVersion": "a/b/c", "kind": "Deployment", "name": "web"}`),
			[]string{"spec.targetRef.apiVersion"}, "a/b/c"},
		{"negative maxUnavailable", replace(maxUnavail, `"maxUnavailable": -1`), []string{"spec.maxUnavailable"}, "greater than or equal to 0"},
		{"several at once", replace(selector+`,`, `"minAvailable": "x",`), []string{"spec.selector", "spec.minAvailable", "spec.minAvailable"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := handle(t, newLister(t), newGates(t, true, false), newRequest(t, admissionv1.Create, tt.object, nil))
			checkDenied(t, resp, "b", tt.fields, tt.msg)
		})
	}
}

// A change of an immutable field is denied.
func TestHandlerImmutability(t *testing.T) {
	gates := newGates(t, true, false)
	old := selectorBudget("b")
	// The cache holds the budget being updated; it must not conflict with itself.
	lister := newLister(t, old)

	changed := old.DeepCopy()
	changed.Spec.MaxUnavailable = intOrString(intstr.FromInt32(1))
	checkAllowed(t, handle(t, lister, gates, newRequest(t, admissionv1.Update, changed, old)))

	changed = old.DeepCopy()
	changed.Spec.Selector.MatchLabels["app"] = "api"
	checkDenied(t, handle(t, lister, gates, newRequest(t, admissionv1.Update, changed, old)), "b", []string{"spec.selector"}, "field is immutable")

	oldRef := targetRefBudget("b")
	lister = newLister(t, oldRef)
	changed = oldRef.DeepCopy()
	changed.Spec.TargetReference.Name = "api"
	checkDenied(t, handle(t, lister, gates, newRequest(t, admissionv1.Update, changed, oldRef)), "b", []string{"spec.targetRef"}, "field is immutable")

	changed = oldRef.DeepCopy()
	changed.Spec.MinAvailable = intOrString(intstr.FromString("50%"))
	checkAllowed(t, handle(t, lister, gates, newRequest(t, admissionv1.Update, changed, oldRef)))
}

// A budget overlapping another one is denied.
func TestHandlerOverlap(t *testing.T) {
	gates := newGates(t, true, false)
	a := selectorBudget("a")
	deploy := targetRefBudget("deploy")
	lister := newLister(t, a, deploy)

	b := selectorBudget("b")
	checkDenied(t, handle(t, lister, gates, newRequest(t, admissionv1.Create, b, nil)), "b", []string{"spec.selector"},
		"is in conflict with other PodUnavailableBudget a (selector app=web)")

	b.Spec.Selector = exprSelector(in("app", "web", "api"))
	checkDenied(t, handle(t, lister, gates, newRequest(t, admissionv1.Create, b, nil)), "b", []string{"spec.selector"},
		"is in conflict with other PodUnavailableBudget a")

	b.Spec.Selector = labelsSelector("app", "web", "tier", "fe")
	checkAllowed(t, handle(t, lister, gates, newRequest(t, admissionv1.Create, b, nil)))

	ref := targetRefBudget("b")
	ref.Spec.TargetReference.APIVersion = "apps/v1beta1"
	checkDenied(t, handle(t, lister, gates, newRequest(t, admissionv1.Create, ref, nil)), "b", []string{"spec.targetRef"},
		"is in conflict with other PodUnavailableBudget deploy (targetRef apps/v1 Deployment web)")

	ref.Spec.TargetReference.Name = "api"
	checkAllowed(t, handle(t, lister, gates, newRequest(t, admissionv1.Create, ref, nil)))

	// A budget of another namespace selecting the same pods' labels is no conflict.
	elsewhere := selectorBudget("b")
	elsewhere.Namespace = "other"
	req := newRequest(t, admissionv1.Create, elsewhere, nil)
	req.Namespace = "other"
	checkAllowed(t, handle(t, lister, gates, req))

	// Like OpenKruise, an update is checked too: a budget that was admitted while the
	// webhook was not running cannot be edited until the conflict is resolved.
	existing := selectorBudget("b")
	changed := existing.DeepCopy()
	changed.Spec.MaxUnavailable = intOrString(intstr.FromInt32(1))
	checkDenied(t, handle(t, newLister(t, a, existing), gates, newRequest(t, admissionv1.Update, changed, existing)), "b", []string{"spec.selector"},
		"is in conflict with other PodUnavailableBudget a")
}

func TestHandlerNamespaceFromRequest(t *testing.T) {
	// The object without its namespace: the request's is used for the conflict check.
	object := strings.Replace(userBudget, `, "namespace": "shop"`, "", 1)
	resp := handle(t, newLister(t, selectorBudget("a")), newGates(t, true, false), newRequest(t, admissionv1.Create, object, nil))
	checkDenied(t, resp, "b", []string{"spec.selector"}, "is in conflict with other PodUnavailableBudget a")
}

func TestHandlerFeatureGates(t *testing.T) {
	const message = "PodUnavailableBudget protection is disabled: enable feature gate PodUnavailableBudgetDeleteGate or PodUnavailableBudgetUpdateGate"
	old := selectorBudget("b")
	changed := old.DeepCopy()
	changed.Spec.MaxUnavailable = intOrString(intstr.FromInt32(1))

	tests := []struct {
		name                   string
		deleteGate, updateGate bool
		allowed                bool
	}{
		{"both off", false, false, false},
		{"delete protection only", true, false, true},
		{"update protection only", false, true, true},
		{"both on", true, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gates := newGates(t, tt.deleteGate, tt.updateGate)
			for _, req := range []*admissionv1.AdmissionRequest{
				newRequest(t, admissionv1.Create, userBudget, nil),
				newRequest(t, admissionv1.Update, changed, old),
			} {
				resp := handle(t, newLister(t, old), gates, req)
				if resp.Allowed != tt.allowed {
					t.Fatalf("%s: allowed %t, want %t; result %+v", req.Operation, resp.Allowed, tt.allowed, resp.Result)
				}
				if !tt.allowed {
					if resp.Result == nil || resp.Result.Code != http.StatusBadRequest || resp.Result.Message != message {
						t.Errorf("%s: result %+v, want 400 %q", req.Operation, resp.Result, message)
					}
				}
			}
		})
	}
}

func TestHandlerReadsGatesOnEveryRequest(t *testing.T) {
	gates := newGates(t, false, false)
	regs := Registrations(newLister(t), gates)
	_, ctx := ktesting.NewTestContext(t)
	if resp := regs[0].Handler.Handle(ctx, newRequest(t, admissionv1.Create, userBudget, nil)); resp.Allowed {
		t.Fatal("allowed with both gates off")
	}
	if err := gates.SetFromMap(map[string]bool{string(features.PodUnavailableBudgetUpdateGate): true}); err != nil {
		t.Fatal(err)
	}
	if resp := regs[0].Handler.Handle(ctx, newRequest(t, admissionv1.Create, userBudget, nil)); !resp.Allowed {
		t.Fatalf("denied once the update gate is on: %+v", resp.Result)
	}
}

// TestHandlerNilGatesUseTheDefaults checks that nil gates mean the process-wide gate, read
// on every request: its defaults (PodUnavailableBudgetDeleteGate on) admit a budget, and
// once both budget gates of that gate are off the same request is refused.
func TestHandlerNilGatesUseTheDefaults(t *testing.T) {
	processGates := map[string]bool{}
	for _, gate := range []featuregate.Feature{features.PodUnavailableBudgetDeleteGate, features.PodUnavailableBudgetUpdateGate} {
		processGates[string(gate)] = features.DefaultFeatureGate.Enabled(gate)
	}
	if want := map[string]bool{
		string(features.PodUnavailableBudgetDeleteGate): true,
		string(features.PodUnavailableBudgetUpdateGate): false,
	}; !maps.Equal(processGates, want) {
		t.Fatalf("the process-wide gate has %v, not its defaults %v", processGates, want)
	}
	regs := Registrations(newLister(t), nil)
	_, ctx := ktesting.NewTestContext(t)
	checkAllowed(t, regs[0].Handler.Handle(ctx, newRequest(t, admissionv1.Create, userBudget, nil)))

	t.Cleanup(func() {
		if err := features.DefaultMutableFeatureGate.SetFromMap(processGates); err != nil {
			t.Errorf("restoring the process-wide gate: %v", err)
		}
	})
	if err := features.DefaultMutableFeatureGate.SetFromMap(map[string]bool{
		string(features.PodUnavailableBudgetDeleteGate): false,
		string(features.PodUnavailableBudgetUpdateGate): false,
	}); err != nil {
		t.Fatal(err)
	}
	if resp := regs[0].Handler.Handle(ctx, newRequest(t, admissionv1.Create, userBudget, nil)); resp.Allowed {
		t.Error("allowed with both budget gates of the process-wide gate off: nil gates did not read it")
	}
}

func TestHandlerAllowsOtherOperations(t *testing.T) {
	// Both gates off and an invalid budget: neither matters for operations not validated.
	gates := newGates(t, false, false)
	for _, op := range []admissionv1.Operation{admissionv1.Delete, admissionv1.Connect} {
		checkAllowed(t, handle(t, newLister(t), gates, newRequest(t, op, nil, `{"spec": {}}`)))
	}
}

func TestHandlerAllowsUpdatesOfABudgetBeingDeleted(t *testing.T) {
	old := selectorBudget("b")
	deleted := metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	old.DeletionTimestamp = &deleted
	old.Finalizers = []string{"example.com/keep"}
	changed := old.DeepCopy()
	changed.Finalizers = nil
	// With both gates off and a conflicting budget, any other update would be denied.
	lister := newLister(t, selectorBudget("a"), old)
	checkAllowed(t, handle(t, lister, newGates(t, false, false), newRequest(t, admissionv1.Update, changed, old)))
}

func TestHandlerBadRequests(t *testing.T) {
	tests := []struct {
		name    string
		req     func() *admissionv1.AdmissionRequest
		wantMsg string
	}{
		{"unknown field", func() *admissionv1.AdmissionRequest {
			return newRequest(t, admissionv1.Create, strings.Replace(userBudget, `"maxUnavailable"`, `"replicas": 3, "maxUnavailable"`, 1), nil)
		}, `unknown field "spec.replicas"`},
		{"field name in the wrong case", func() *admissionv1.AdmissionRequest {
			return newRequest(t, admissionv1.Create, strings.Replace(userBudget, `"selector"`, `"Selector"`, 1), nil)
		}, `unknown field "spec.Selector"`},
		{"duplicate field", func() *admissionv1.AdmissionRequest {
			return newRequest(t, admissionv1.Create, strings.Replace(userBudget, `"maxUnavailable": "25%"`, `"maxUnavailable": "25%", "maxUnavailable": 1`, 1), nil)
		}, `duplicate field "spec.maxUnavailable"`},
		{"wrong type", func() *admissionv1.AdmissionRequest {
			return newRequest(t, admissionv1.Create, strings.Replace(userBudget, `"maxUnavailable": "25%"`, `"maxUnavailable": true`, 1), nil)
		}, "request.object"},
		{"other kind in the object", func() *admissionv1.AdmissionRequest {
			return newRequest(t, admissionv1.Create, strings.Replace(userBudget, `"kind": "PodUnavailableBudget"`, `"kind": "PodDisruptionBudget"`, 1), nil)
		}, "PodDisruptionBudget"},
		{"other kind in the request", func() *admissionv1.AdmissionRequest {
			req := newRequest(t, admissionv1.Create, userBudget, nil)
			req.Kind = metav1.GroupVersionKind{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}
			return req
		}, "admits policy.kruise.io/v1alpha1, Kind=PodUnavailableBudget and policy.kruise.io/v1beta1, Kind=PodUnavailableBudget only"},
		{"null object", func() *admissionv1.AdmissionRequest {
			return newRequest(t, admissionv1.Create, nil, nil)
		}, "request.object is empty"},
		{"null oldObject on update", func() *admissionv1.AdmissionRequest {
			return newRequest(t, admissionv1.Update, userBudget, nil)
		}, "request.oldObject is empty"},
		{"bad oldObject", func() *admissionv1.AdmissionRequest {
			return newRequest(t, admissionv1.Update, userBudget, `{"spec": 1}`)
		}, "request.oldObject"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := handle(t, newLister(t), newGates(t, true, false), tt.req())
			if resp.Allowed {
				t.Fatal("allowed, want a 400 denial")
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

// failingLister fails every List.
type failingLister struct{}

func (failingLister) List(labels.Selector) ([]*policyv1beta1.PodUnavailableBudget, error) {
	return nil, errors.New("cache is gone")
}

func (failingLister) PodUnavailableBudgets(string) policylisters.PodUnavailableBudgetNamespaceLister {
	return failingLister{}
}

func (failingLister) Get(string) (*policyv1beta1.PodUnavailableBudget, error) {
	return nil, errors.New("cache is gone")
}

func TestHandlerListError(t *testing.T) {
	resp := handle(t, failingLister{}, newGates(t, true, false), newRequest(t, admissionv1.Create, userBudget, nil))
	if resp.Allowed {
		t.Fatal("allowed without the conflict check")
	}
	if resp.Result == nil || resp.Result.Code != http.StatusInternalServerError ||
		!strings.Contains(resp.Result.Message, "listing the PodUnavailableBudgets of namespace shop: cache is gone") {
		t.Errorf("result %+v, want a 500 saying what failed", resp.Result)
	}
}

// TestThroughTheServer checks that a denial reaches the API server intact: code 400, and
// the causes the client shows.
func TestThroughTheServer(t *testing.T) {
	s := webhook.NewServer(webhook.ServerOptions{})
	for _, r := range Registrations(newLister(t, selectorBudget("a")), newGates(t, true, false)) {
		if err := s.Register(r); err != nil {
			t.Fatalf("Register: %v", err)
		}
	}
	req := newRequest(t, admissionv1.Create, strings.Replace(userBudget, `"25%"`, `"150%"`, 1), nil)
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, ValidatingPath, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
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
	checkDenied(t, answer.Response, "b", []string{"spec.maxUnavailable", "spec.selector"},
		`PodUnavailableBudget.policy.kruise.io "b" is invalid`, "must not be greater than 100%", "is in conflict with other PodUnavailableBudget a")
}
