package podunavailablebudget

import (
	"strings"
	"testing"

	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/pubutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// selectorBudget is a valid budget selecting app=web with maxUnavailable 25%.
func selectorBudget(name string) *policyv1alpha1.PodUnavailableBudget {
	maxUnavailable := intstr.FromString("25%")
	return &policyv1alpha1.PodUnavailableBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy.kruise.io/v1alpha1", Kind: "PodUnavailableBudget"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", ResourceVersion: "1"},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			MaxUnavailable: &maxUnavailable,
		},
	}
}

// targetRefBudget is a valid budget for Deployment web (apps/v1) with minAvailable 2.
func targetRefBudget(name string) *policyv1alpha1.PodUnavailableBudget {
	minAvailable := intstr.FromInt32(2)
	return &policyv1alpha1.PodUnavailableBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy.kruise.io/v1alpha1", Kind: "PodUnavailableBudget"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", ResourceVersion: "1"},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			TargetReference: &policyv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinAvailable:    &minAvailable,
		},
	}
}

// up is the v1beta1 form of a v1alpha1 budget, the form validation judges.
func up(pub *policyv1alpha1.PodUnavailableBudget) *policyv1beta1.PodUnavailableBudget {
	hub := &policyv1beta1.PodUnavailableBudget{}
	policyv1alpha1.ConvertPodUnavailableBudgetToV1beta1(pub.DeepCopy(), hub)
	return hub
}

// ups is the v1beta1 form of v1alpha1 budgets.
func ups(pubs []*policyv1alpha1.PodUnavailableBudget) []*policyv1beta1.PodUnavailableBudget {
	var hubs []*policyv1beta1.PodUnavailableBudget
	for _, pub := range pubs {
		hubs = append(hubs, up(pub))
	}
	return hubs
}

func intOrString(v intstr.IntOrString) *intstr.IntOrString { return &v }

type wantError struct {
	path string
	typ  field.ErrorType
}

// checkErrors fails unless errs holds exactly the wanted errors, in any order.
func checkErrors(t *testing.T, errs field.ErrorList, want []wantError) {
	t.Helper()
	remaining := append([]wantError(nil), want...)
	for _, err := range errs {
		found := false
		for i, w := range remaining {
			if w.path == err.Field && w.typ == err.Type {
				remaining = append(remaining[:i], remaining[i+1:]...)
				found = true
				break
			}
		}
		if !found {
			t.Errorf("unexpected error: %v", err)
		}
	}
	for _, w := range remaining {
		t.Errorf("missing error %s at %s; got %v", w.typ, w.path, errs)
	}
}

func TestValidate(t *testing.T) {
	const (
		operationsKey = "metadata.annotations[kruise.io/pub-protect-operations]"
		totalKey      = "metadata.annotations[pub.kruise.io/protect-total-replicas]"
	)
	tests := []struct {
		name   string
		budget func(string) *policyv1alpha1.PodUnavailableBudget
		mutate func(*policyv1alpha1.PodUnavailableBudget)
		want   []wantError
	}{
		{name: "valid selector budget", budget: selectorBudget},
		{name: "valid targetRef budget", budget: targetRefBudget},
		{name: "valid matchExpressions selector", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "api"}}}}
		}},
		{name: "valid core group targetRef", budget: targetRefBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.TargetReference = &policyv1alpha1.TargetReference{APIVersion: "v1", Kind: "ReplicationController", Name: "web"}
		}},

		// Each invalid spec, one case each.
		{name: "neither selector nor targetRef", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) { p.Spec.Selector = nil },
			want: []wantError{{"spec.selector", field.ErrorTypeRequired}}},
		{name: "both selector and targetRef", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.TargetReference = targetRefBudget("x").Spec.TargetReference
		}, want: []wantError{{"spec.targetRef", field.ErrorTypeForbidden}}},
		{name: "empty selector", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) { p.Spec.Selector = &metav1.LabelSelector{} },
			want: []wantError{{"spec.selector", field.ErrorTypeInvalid}}},
		{name: "targetRef without kind", budget: targetRefBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) { p.Spec.TargetReference.Kind = "" },
			want: []wantError{{"spec.targetRef.kind", field.ErrorTypeRequired}}},
		{name: "both maxUnavailable and minAvailable", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.MinAvailable = intOrString(intstr.FromInt32(1))
		}, want: []wantError{{"spec.minAvailable", field.ErrorTypeForbidden}}},
		{name: "neither maxUnavailable nor minAvailable", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) { p.Spec.MaxUnavailable = nil },
			want: []wantError{{"spec.maxUnavailable", field.ErrorTypeRequired}}},
		{name: "maxUnavailable 150%", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.MaxUnavailable = intOrString(intstr.FromString("150%"))
		}, want: []wantError{{"spec.maxUnavailable", field.ErrorTypeInvalid}}},
		{name: "protect-operations DELETE,FOO", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Annotations = map[string]string{policyv1alpha1.PubProtectOperationAnnotation: "DELETE,FOO"}
		}, want: []wantError{{operationsKey, field.ErrorTypeInvalid}}},
		{name: "protect-total-replicas abc", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Annotations = map[string]string{policyv1alpha1.PubProtectTotalReplicasAnnotation: "abc"}
		}, want: []wantError{{totalKey, field.ErrorTypeInvalid}}},

		// The spec's other rules.
		{name: "selector with an invalid requirement", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn}}}
		}, want: []wantError{{"spec.selector.matchExpressions[0].values", field.ErrorTypeRequired}}},
		{name: "selector with an unknown operator", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near", Values: []string{"web"}}}}
		}, want: []wantError{{"spec.selector.matchExpressions[0].operator", field.ErrorTypeInvalid}}},
		{name: "selector with an invalid label value", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.Selector.MatchLabels["app"] = "web server"
		}, want: []wantError{{"spec.selector.matchLabels", field.ErrorTypeInvalid}}},
		{name: "targetRef without apiVersion", budget: targetRefBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) { p.Spec.TargetReference.APIVersion = "" },
			want: []wantError{{"spec.targetRef.apiVersion", field.ErrorTypeRequired}}},
		{name: "targetRef apiVersion that does not parse", budget: targetRefBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.TargetReference.APIVersion = "apps/v1/deployments"
		}, want: []wantError{{"spec.targetRef.apiVersion", field.ErrorTypeInvalid}}},
		{name: "targetRef without name", budget: targetRefBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) { p.Spec.TargetReference.Name = "" },
			want: []wantError{{"spec.targetRef.name", field.ErrorTypeRequired}}},
		{name: "empty targetRef", budget: targetRefBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.TargetReference = &policyv1alpha1.TargetReference{}
		}, want: []wantError{
			{"spec.targetRef.apiVersion", field.ErrorTypeRequired},
			{"spec.targetRef.kind", field.ErrorTypeRequired},
			{"spec.targetRef.name", field.ErrorTypeRequired},
		}},
		{name: "both, each checked", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.Selector = &metav1.LabelSelector{}
			p.Spec.TargetReference = &policyv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment"}
		}, want: []wantError{
			{"spec.targetRef", field.ErrorTypeForbidden},
			{"spec.selector", field.ErrorTypeInvalid},
			{"spec.targetRef.name", field.ErrorTypeRequired},
		}},
		{name: "minAvailable 0", budget: targetRefBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.MinAvailable = intOrString(intstr.FromInt32(0))
		}},
		{name: "maxUnavailable 0%", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.MaxUnavailable = intOrString(intstr.FromString("0%"))
		}},
		{name: "maxUnavailable 100%", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.MaxUnavailable = intOrString(intstr.FromString("100%"))
		}},
		{name: "maxUnavailable 101%", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.MaxUnavailable = intOrString(intstr.FromString("101%"))
		}, want: []wantError{{"spec.maxUnavailable", field.ErrorTypeInvalid}}},
		{name: "negative minAvailable", budget: targetRefBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.MinAvailable = intOrString(intstr.FromInt32(-1))
		}, want: []wantError{{"spec.minAvailable", field.ErrorTypeInvalid}}},
		{name: "minAvailable a number as a string", budget: targetRefBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.MinAvailable = intOrString(intstr.FromString("2"))
		}, want: []wantError{{"spec.minAvailable", field.ErrorTypeInvalid}}},
		{name: "negative percentage", budget: targetRefBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.MinAvailable = intOrString(intstr.FromString("-5%"))
		}, want: []wantError{{"spec.minAvailable", field.ErrorTypeInvalid}}},
		{name: "fractional percentage", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.MaxUnavailable = intOrString(intstr.FromString("12.5%"))
		}, want: []wantError{{"spec.maxUnavailable", field.ErrorTypeInvalid}}},
		{name: "bare percent sign", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.MaxUnavailable = intOrString(intstr.FromString("%"))
		}, want: []wantError{{"spec.maxUnavailable", field.ErrorTypeInvalid}}},
		{name: "every problem at once", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Annotations = map[string]string{
				policyv1alpha1.PubProtectOperationAnnotation:     "DELETE,FOO",
				policyv1alpha1.PubProtectTotalReplicasAnnotation: "abc",
				pubutil.RetryDeniedEvictionsAnnotation:           "yes",
				pubutil.ProtectNotReadyAnnotation:                "1",
			}
			p.Spec.Selector = nil
			p.Spec.MinAvailable = intOrString(intstr.FromInt32(1))
		}, want: []wantError{
			{operationsKey, field.ErrorTypeInvalid},
			{totalKey, field.ErrorTypeInvalid},
			{"metadata.annotations[pub.bosun.dev/retry-denied-evictions]", field.ErrorTypeNotSupported},
			{"metadata.annotations[pub.bosun.dev/protect-not-ready]", field.ErrorTypeNotSupported},
			{"spec.selector", field.ErrorTypeRequired},
			{"spec.minAvailable", field.ErrorTypeForbidden},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pub := tt.budget("b")
			if tt.mutate != nil {
				tt.mutate(pub)
			}
			checkErrors(t, Validate(up(pub)), tt.want)
		})
	}
}

func TestValidateAnnotations(t *testing.T) {
	tests := []struct {
		key, value string
		valid      bool
	}{
		{policyv1alpha1.PubProtectOperationAnnotation, "DELETE", true},
		{policyv1alpha1.PubProtectOperationAnnotation, "DELETE,UPDATE,EVICT,RESIZE", true},
		{policyv1alpha1.PubProtectOperationAnnotation, "EVICT", true},
		// Spaces around the words are accepted (OpenKruise refuses them).
		{policyv1alpha1.PubProtectOperationAnnotation, "DELETE, EVICT", true},
		{policyv1alpha1.PubProtectOperationAnnotation, " DELETE ,\tUPDATE ", true},
		// Empty means the default set.
		{policyv1alpha1.PubProtectOperationAnnotation, "", true},
		{policyv1alpha1.PubProtectOperationAnnotation, "  ", true},
		{policyv1alpha1.PubProtectOperationAnnotation, "delete", false},
		{policyv1alpha1.PubProtectOperationAnnotation, "DELETE,", false},
		{policyv1alpha1.PubProtectOperationAnnotation, "DELETE,,EVICT", false},
		{policyv1alpha1.PubProtectOperationAnnotation, "DELETE;EVICT", false},
		{policyv1alpha1.PubProtectOperationAnnotation, "DELETE EVICT", false},

		{policyv1alpha1.PubProtectTotalReplicasAnnotation, "3", true},
		{policyv1alpha1.PubProtectTotalReplicasAnnotation, "0", true},
		{policyv1alpha1.PubProtectTotalReplicasAnnotation, "2147483647", true},
		// Any int32 OpenKruise accepts, so that its budgets stay updatable.
		{policyv1alpha1.PubProtectTotalReplicasAnnotation, "-1", true},
		{policyv1alpha1.PubProtectTotalReplicasAnnotation, "2147483648", false},
		{policyv1alpha1.PubProtectTotalReplicasAnnotation, "", false},
		{policyv1alpha1.PubProtectTotalReplicasAnnotation, " 3", false},
		{policyv1alpha1.PubProtectTotalReplicasAnnotation, "3.0", false},
		{policyv1alpha1.PubProtectTotalReplicasAnnotation, "abc", false},

		{pubutil.RetryDeniedEvictionsAnnotation, "true", true},
		{pubutil.RetryDeniedEvictionsAnnotation, "false", true},
		{pubutil.RetryDeniedEvictionsAnnotation, "", false},
		{pubutil.RetryDeniedEvictionsAnnotation, "True", false},
		{pubutil.RetryDeniedEvictionsAnnotation, "yes", false},
		{pubutil.ProtectNotReadyAnnotation, "true", true},
		{pubutil.ProtectNotReadyAnnotation, "false", true},
		{pubutil.ProtectNotReadyAnnotation, "1", false},
		{pubutil.ProtectNotReadyAnnotation, " true", false},

		// Other annotations are not the webhook's business.
		{"pub.bosun.dev/something-else", "whatever", true},
		{"kruise.io/anything", "x", true},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			pub := selectorBudget("b")
			pub.Annotations = map[string]string{tt.key: tt.value}
			errs := Validate(up(pub))
			if tt.valid && len(errs) > 0 {
				t.Errorf("refused: %v", errs)
			}
			if !tt.valid {
				if len(errs) != 1 {
					t.Fatalf("errors %v, want one", errs)
				}
				if want := "metadata.annotations[" + tt.key + "]"; errs[0].Field != want {
					t.Errorf("error on %s, want %s", errs[0].Field, want)
				}
			}
		})
	}
}

func TestValidateAnnotationMessages(t *testing.T) {
	pub := selectorBudget("b")
	pub.Annotations = map[string]string{policyv1alpha1.PubProtectOperationAnnotation: "DELETE, FOO,bar"}
	errs := Validate(up(pub))
	if len(errs) != 1 {
		t.Fatalf("errors %v, want one", errs)
	}
	for _, want := range []string{`unknown operations "FOO", "bar"`, "DELETE, UPDATE, EVICT and RESIZE"} {
		if !strings.Contains(errs[0].Error(), want) {
			t.Errorf("message %q does not contain %q", errs[0].Error(), want)
		}
	}

	pub.Annotations = map[string]string{pubutil.RetryDeniedEvictionsAnnotation: "yes"}
	errs = Validate(up(pub))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `supported values: "true", "false"`) {
		t.Errorf("errors %v, want one naming the supported values", errs)
	}
}

// The immutable fields and the rest of the update rules.
func TestValidateUpdate(t *testing.T) {
	tests := []struct {
		name   string
		budget func(string) *policyv1alpha1.PodUnavailableBudget
		mutate func(*policyv1alpha1.PodUnavailableBudget)
		want   []wantError
	}{
		{name: "unchanged", budget: selectorBudget, mutate: func(*policyv1alpha1.PodUnavailableBudget) {}},
		{name: "maxUnavailable changed", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.MaxUnavailable = intOrString(intstr.FromInt32(1))
		}},
		{name: "maxUnavailable replaced by minAvailable", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.MaxUnavailable, p.Spec.MinAvailable = nil, intOrString(intstr.FromString("50%"))
		}},
		{name: "annotations and labels changed", budget: targetRefBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Labels = map[string]string{"team": "shop"}
			p.Annotations = map[string]string{policyv1alpha1.PubProtectOperationAnnotation: "EVICT", pubutil.ProtectNotReadyAnnotation: "true"}
		}},
		{name: "selector matchLabels empty instead of absent", budget: func(name string) *policyv1alpha1.PodUnavailableBudget {
			p := selectorBudget(name)
			p.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}
			p.Spec.Selector.MatchLabels = nil
			return p
		}, mutate: func(p *policyv1alpha1.PodUnavailableBudget) { p.Spec.Selector.MatchLabels = map[string]string{} }},
		{name: "selector value changed", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.Selector.MatchLabels["app"] = "api"
		}, want: []wantError{{"spec.selector", field.ErrorTypeInvalid}}},
		{name: "selector key added", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.Selector.MatchLabels["tier"] = "fe"
		}, want: []wantError{{"spec.selector", field.ErrorTypeInvalid}}},
		{name: "selector rewritten as an equivalent expression", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}}}}
		}, want: []wantError{{"spec.selector", field.ErrorTypeInvalid}}},
		{name: "targetRef name changed", budget: targetRefBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.TargetReference.Name = "api"
		}, want: []wantError{{"spec.targetRef", field.ErrorTypeInvalid}}},
		{name: "targetRef version changed", budget: targetRefBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.TargetReference.APIVersion = "apps/v1beta1"
		}, want: []wantError{{"spec.targetRef", field.ErrorTypeInvalid}}},
		{name: "selector replaced by targetRef", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.Selector, p.Spec.TargetReference = nil, targetRefBudget("x").Spec.TargetReference
		}, want: []wantError{{"spec.selector", field.ErrorTypeInvalid}, {"spec.targetRef", field.ErrorTypeInvalid}}},
		{name: "new object validated in full", budget: selectorBudget, mutate: func(p *policyv1alpha1.PodUnavailableBudget) {
			p.Spec.MaxUnavailable = intOrString(intstr.FromString("150%"))
		}, want: []wantError{{"spec.maxUnavailable", field.ErrorTypeInvalid}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := tt.budget("b")
			pub := old.DeepCopy()
			tt.mutate(pub)
			errs := ValidateUpdate(up(pub), up(old))
			checkErrors(t, errs, tt.want)
			for _, err := range errs {
				if err.Field == "spec.selector" || err.Field == "spec.targetRef" {
					if err.Detail != "field is immutable" {
						t.Errorf("%s: detail %q, want field is immutable", err.Field, err.Detail)
					}
				}
			}
		})
	}
}
