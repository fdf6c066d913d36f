package pod

import (
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/features"
)

func TestRegistrations(t *testing.T) {
	type want struct {
		name     string
		resource string
		ops      []admissionregistrationv1.OperationType
	}
	mutating := want{MutatingName, "pods", []admissionregistrationv1.OperationType{admissionregistrationv1.Create}}
	eviction := want{ValidatingEvictionName, "pods/eviction", []admissionregistrationv1.OperationType{admissionregistrationv1.Create}}
	tests := []struct {
		name             string
		deleteOn, update bool
		want             []want
	}{
		{"default gates", true, false, []want{mutating,
			{ValidatingName, "pods", []admissionregistrationv1.OperationType{admissionregistrationv1.Delete}}, eviction}},
		{"both gates", true, true, []want{mutating,
			{ValidatingName, "pods", []admissionregistrationv1.OperationType{admissionregistrationv1.Delete, admissionregistrationv1.Update}}, eviction}},
		{"update gate only", false, true, []want{mutating,
			{ValidatingName, "pods", []admissionregistrationv1.OperationType{admissionregistrationv1.Update}}}},
		{"both gates off", false, false, []want{mutating}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gate := features.NewFeatureGate()
			if err := gate.SetFromMap(map[string]bool{
				string(features.PodUnavailableBudgetDeleteGate): tt.deleteOn,
				string(features.PodUnavailableBudgetUpdateGate): tt.update,
			}); err != nil {
				t.Fatal(err)
			}
			regs := Registrations(Dependencies{FeatureGate: gate})
			if len(regs) != len(tt.want) {
				t.Fatalf("%d registrations, want %d", len(regs), len(tt.want))
			}
			for i, reg := range regs {
				w := tt.want[i]
				if err := reg.Validate(); err != nil {
					t.Errorf("registration %s: %v", reg.Name, err)
				}
				if reg.Name != w.name || len(reg.Rules) != 1 || reg.Rules[0].Resources[0] != w.resource ||
					!slices.Equal(reg.Rules[0].Operations, w.ops) {
					t.Errorf("registration %d = %s %v %v, want %s %s %v", i, reg.Name, reg.Rules[0].Resources, reg.Rules[0].Operations, w.name, w.resource, w.ops)
				}
				if got := reg.Rules[0].APIGroups; len(got) != 1 || got[0] != "" || reg.Rules[0].APIVersions[0] != "v1" {
					t.Errorf("registration %s rule groups %v versions %v, want core v1", reg.Name, got, reg.Rules[0].APIVersions)
				}
				wantPolicy := admissionregistrationv1.Fail
				if reg.Name == MutatingName {
					wantPolicy = admissionregistrationv1.Ignore
				}
				if ptr.Deref(reg.FailurePolicy, admissionregistrationv1.Fail) != wantPolicy {
					t.Errorf("registration %s failure policy %v, want %s", reg.Name, *reg.FailurePolicy, wantPolicy)
				}
				sel := reg.NamespaceSelector
				if sel == nil || len(sel.MatchExpressions) != 2 || sel.MatchExpressions[0].Key != "kubernetes.io/metadata.name" ||
					sel.MatchExpressions[0].Operator != "NotIn" || !slices.Equal(sel.MatchExpressions[0].Values, []string{"kube-system"}) ||
					sel.MatchExpressions[1].Key != "control-plane" || sel.MatchExpressions[1].Operator != "DoesNotExist" {
					t.Errorf("registration %s namespace selector %v, want kube-system and namespaces labelled control-plane excluded", reg.Name, sel)
				}
			}
			wantPaths := map[string]string{MutatingName: "/mutate-pod", ValidatingName: "/validate-pod", ValidatingEvictionName: "/validate-pod-eviction"}
			for _, reg := range regs {
				if reg.Path != wantPaths[reg.Name] {
					t.Errorf("registration %s path %s, want %s", reg.Name, reg.Path, wantPaths[reg.Name])
				}
			}
		})
	}
}

// TestGatesAreReadPerRequest sends requests the current gates do not protect, as a webhook
// configuration written under other gates would: they are allowed untouched.
func TestGatesAreReadPerRequest(t *testing.T) {
	off := map[featuregate.Feature]bool{features.PodUnavailableBudgetDeleteGate: false}
	pod := readyPod("a")
	f := newFixture(t, fixtureOptions{gates: off}, pod, newBudget("pub", 0, 3, 3))
	expectAllowed(t, f.validate(deleteRequest(t, pod, "gates")))
	expectAllowed(t, f.validate(evictionRequest(t, "a", "gates", false)))
	changed := pod.DeepCopy()
	changed.Spec.Containers[0].Image = "nginx:1.26"
	expectAllowed(t, f.validate(updateRequest(t, pod, changed, "gates")))
	if writes, _, _ := f.server.Counts(); writes != 0 {
		t.Errorf("%d budget writes, want none", writes)
	}
}

// The budget's tagging joins a mutating webhook another controller registered already: the
// budget's registrations leave it out, and the webhook runs both mutations.
func TestRegistrationsJoinASharedMutatingWebhook(t *testing.T) {
	shared := NewMutatingWebhook()
	if regs := shared.Add(KruisePodReadyGate(nil)); len(regs) != 1 {
		t.Fatalf("%d registrations for the first mutation, want 1", len(regs))
	}
	regs := Registrations(Dependencies{FeatureGate: features.NewFeatureGate(), Mutating: shared})
	for _, reg := range regs {
		if reg.Name == MutatingName {
			t.Errorf("the budget registered %s again", MutatingName)
		}
	}
	if len(regs) != 2 {
		t.Errorf("%d registrations, want the two validating ones", len(regs))
	}
	if len(shared.mutations) != 2 {
		t.Errorf("the shared webhook runs %d mutations, want the gate and the tagging", len(shared.mutations))
	}
}
