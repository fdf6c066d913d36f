package v1beta1

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// TestOpenKruiseDocumentRoundTrip checks that every field of an OpenKruise v1beta1
// PodUnavailableBudget decodes into a known field and encodes back unchanged.
func TestOpenKruiseDocumentRoundTrip(t *testing.T) {
	docs := map[string]string{
		"selector, maxUnavailable and the v1beta1 fields": `{
		  "apiVersion": "policy.kruise.io/v1beta1", "kind": "PodUnavailableBudget",
		  "metadata": {"name": "web", "namespace": "default"},
		  "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": "25%",
		    "protectOperations": ["DELETE", "EVICT", "RESIZE"],
		    "protectTotalReplicas": 3,
		    "ignoredPodSelector": {"matchExpressions": [{"key": "canary", "operator": "Exists"}]}},
		  "status": {"observedGeneration": 2,
		    "disruptedPods": {"web-0": "2025-01-02T03:04:05Z"},
		    "unavailablePods": {"web-1": "2025-01-02T03:04:06Z"},
		    "unavailableAllowed": 0, "currentAvailable": 3, "desiredAvailable": 3, "totalReplicas": 4}
		}`,
		"targetRef and minAvailable, status not yet observed": `{
		  "metadata": {"name": "web", "annotations": {"kruise.io/pub-protect-operations": "DELETE"}},
		  "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minAvailable": 2,
		    "ignoredPodSelector": {"matchLabels": {"skip": "true"}}},
		  "status": {"unavailableAllowed": 0, "currentAvailable": 0, "desiredAvailable": 0, "totalReplicas": 0}
		}`,
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			dec := json.NewDecoder(bytes.NewReader([]byte(doc)))
			dec.DisallowUnknownFields()
			pub := &PodUnavailableBudget{}
			if err := dec.Decode(pub); err != nil {
				t.Fatalf("decoding an OpenKruise document strictly: %v", err)
			}
			out, err := json.Marshal(pub)
			if err != nil {
				t.Fatalf("encoding: %v", err)
			}
			var want, got any
			if err := json.Unmarshal([]byte(doc), &want); err != nil {
				t.Fatalf("test document is not JSON: %v", err)
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("re-decoding: %v", err)
			}
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("round trip changed the document\nwant: %s\ngot:  %s", doc, out)
			}
		})
	}
}

// TestAlwaysEmittedKeys pins which fields are written even when zero. Unlike v1alpha1,
// OpenKruise's v1beta1 omits a zero status.observedGeneration.
func TestAlwaysEmittedKeys(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want []string
	}{
		{"PodUnavailableBudgetSpec", PodUnavailableBudgetSpec{}, []string{}},
		{"TargetReference", TargetReference{}, []string{}},
		{"PodUnavailableBudgetStatus", PodUnavailableBudgetStatus{}, []string{
			"currentAvailable", "desiredAvailable", "totalReplicas", "unavailableAllowed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatalf("encoding: %v", err)
			}
			var m map[string]any
			if err := json.Unmarshal(out, &m); err != nil {
				t.Fatalf("decoding %s: %v", out, err)
			}
			got := []string{}
			for k := range m {
				got = append(got, k)
			}
			sort.Strings(got)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("zero %s emits keys %v, want %v", tc.name, got, tc.want)
			}
		})
	}
}

// TestSchemeRegistration checks that the kinds are served under policy.kruise.io/v1beta1
// and that the scheme has no defaulting for them (no field of a budget is defaulted).
func TestSchemeRegistration(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatalf("adding types to scheme: %v", err)
	}
	for _, obj := range []runtime.Object{&PodUnavailableBudget{}, &PodUnavailableBudgetList{}} {
		gvks, _, err := scheme.ObjectKinds(obj)
		if err != nil {
			t.Fatalf("looking up %T: %v", obj, err)
		}
		if len(gvks) != 1 || gvks[0].GroupVersion() != SchemeGroupVersion {
			t.Fatalf("%T registered as %v, want group version %v", obj, gvks, SchemeGroupVersion)
		}
	}
	if gvk := SchemeGroupVersion.WithKind("PodUnavailableBudget"); gvk.String() != "policy.kruise.io/v1beta1, Kind=PodUnavailableBudget" {
		t.Fatalf("unexpected group version kind %s", gvk)
	}

	pub := &PodUnavailableBudget{}
	scheme.Default(pub)
	if !reflect.DeepEqual(pub, &PodUnavailableBudget{}) {
		t.Fatalf("scheme defaulting changed a budget: %+v", pub)
	}
}
