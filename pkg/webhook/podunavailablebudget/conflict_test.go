package podunavailablebudget

import (
	"fmt"
	"strings"
	"testing"

	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func labelsSelector(kv ...string) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

func exprSelector(reqs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: reqs}
}

func in(key string, values ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpIn, Values: values}
}

func notIn(key string, values ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpNotIn, Values: values}
}

func exists(key string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpExists}
}

func doesNotExist(key string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpDoesNotExist}
}

// TestSelectorsOverlapOperators is the truth table of two requirements on one shared key.
func TestSelectorsOverlapOperators(t *testing.T) {
	tests := []struct {
		a, b metav1.LabelSelectorRequirement
		want bool
	}{
		{in("app", "web"), in("app", "web"), true},
		{in("app", "web", "api"), in("app", "api", "db"), true},
		{in("app", "web"), in("app", "api"), false},
		{in("app", "web"), exists("app"), true},
		{in("app", "web"), doesNotExist("app"), false},
		{in("app", "web", "api"), notIn("app", "web"), true},
		{in("app", "web"), notIn("app", "api"), true},
		{in("app", "web", "api"), notIn("app", "web", "api", "db"), false},
		{in("app", "web"), notIn("app", "web"), false},
		{exists("app"), exists("app"), true},
		{exists("app"), doesNotExist("app"), false},
		{exists("app"), notIn("app", "web", "api"), true},
		{notIn("app", "web"), notIn("app", "api"), true},
		{notIn("app", "web"), notIn("app", "web"), true},
		{notIn("app", "web"), doesNotExist("app"), true},
		{doesNotExist("app"), doesNotExist("app"), true},
		// An unknown operator never holds (only stored budgets can have one).
		{metav1.LabelSelectorRequirement{Key: "app", Operator: "Near", Values: []string{"web"}}, exists("app"), false},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%s vs %s", metav1.FormatLabelSelector(exprSelector(tt.a)), metav1.FormatLabelSelector(exprSelector(tt.b)))
		t.Run(name, func(t *testing.T) {
			// Overlap is symmetric.
			if got := SelectorsOverlap(exprSelector(tt.a), exprSelector(tt.b)); got != tt.want {
				t.Errorf("SelectorsOverlap(a, b) = %t, want %t", got, tt.want)
			}
			if got := SelectorsOverlap(exprSelector(tt.b), exprSelector(tt.a)); got != tt.want {
				t.Errorf("SelectorsOverlap(b, a) = %t, want %t", got, tt.want)
			}
		})
	}
}

func TestSelectorsOverlap(t *testing.T) {
	tests := []struct {
		name string
		a, b *metav1.LabelSelector
		want bool
	}{
		// Two budgets whose selectors pick the same pods overlap.
		{"same matchLabels", labelsSelector("app", "web"), labelsSelector("app", "web"), true},
		{"matchLabels and an In sharing the value", labelsSelector("app", "web"), exprSelector(in("app", "web", "api")), true},
		{"one more key", labelsSelector("app", "web"), labelsSelector("app", "web", "tier", "fe"), false},

		{"different values", labelsSelector("app", "web"), labelsSelector("app", "api"), false},
		{"different keys", labelsSelector("app", "web"), labelsSelector("tier", "fe"), false},
		{"two keys, both satisfiable", labelsSelector("app", "web", "tier", "fe"),
			exprSelector(in("app", "web", "api"), exists("tier")), true},
		{"two keys, one not satisfiable", labelsSelector("app", "web", "tier", "fe"),
			exprSelector(in("app", "web"), notIn("tier", "fe")), false},
		{"same keys split differently between matchLabels and expressions",
			&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}, MatchExpressions: []metav1.LabelSelectorRequirement{exists("tier")}},
			&metav1.LabelSelector{MatchLabels: map[string]string{"tier": "fe"}, MatchExpressions: []metav1.LabelSelectorRequirement{notIn("app", "api")}}, true},
		{"several requirements on one key hold together", exprSelector(in("app", "web", "api"), notIn("app", "web")), labelsSelector("app", "api"), true},
		{"several requirements on one key exclude the other's value", exprSelector(in("app", "web", "api"), notIn("app", "api")), labelsSelector("app", "api"), false},
		{"two In on one key narrow the values", exprSelector(in("app", "web", "api"), in("app", "api", "db")), exprSelector(in("app", "web", "db")), false},
		{"a key both in matchLabels and in an expression",
			&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}, MatchExpressions: []metav1.LabelSelectorRequirement{exists("app")}},
			labelsSelector("app", "web"), true},
		{"nil selector", nil, labelsSelector("app", "web"), false},
		{"both nil", nil, nil, false},
		{"both empty", &metav1.LabelSelector{}, &metav1.LabelSelector{}, true},
		{"empty and non-empty", &metav1.LabelSelector{}, labelsSelector("app", "web"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SelectorsOverlap(tt.a, tt.b); got != tt.want {
				t.Errorf("SelectorsOverlap(a, b) = %t, want %t", got, tt.want)
			}
			if got := SelectorsOverlap(tt.b, tt.a); got != tt.want {
				t.Errorf("SelectorsOverlap(b, a) = %t, want %t", got, tt.want)
			}
		})
	}
}

func TestSelectorsOverlapDoesNotModifyItsArguments(t *testing.T) {
	a := exprSelector(in("app", "web", "api"), in("app", "api"))
	b := exprSelector(in("app", "db"))
	before := a.DeepCopy()
	SelectorsOverlap(a, b)
	if a.String() != before.String() {
		t.Errorf("selector changed from %v to %v", before, a)
	}
}

func TestTargetRefsConflict(t *testing.T) {
	ref := func(apiVersion, kind, name string) *policyv1beta1.TargetReference {
		return &policyv1beta1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: name}
	}
	tests := []struct {
		name string
		a, b *policyv1beta1.TargetReference
		want bool
	}{
		{"same", ref("apps/v1", "Deployment", "web"), ref("apps/v1", "Deployment", "web"), true},
		// Only group, kind and name count: the version is ignored.
		{"other version", ref("apps/v1", "Deployment", "web"), ref("apps/v1beta1", "Deployment", "web"), true},
		{"other name", ref("apps/v1", "Deployment", "web"), ref("apps/v1", "Deployment", "api"), false},
		{"other kind", ref("apps/v1", "Deployment", "web"), ref("apps/v1", "StatefulSet", "web"), false},
		{"other group", ref("apps/v1", "StatefulSet", "web"), ref("apps.kruise.io/v1beta1", "StatefulSet", "web"), false},
		{"core group", ref("v1", "ReplicationController", "web"), ref("v1", "ReplicationController", "web"), true},
		{"core and named group", ref("v1", "Deployment", "web"), ref("apps/v1", "Deployment", "web"), false},
		{"apiVersion that does not parse", ref("apps/v1/x", "Deployment", "web"), ref("apps/v1/x", "Deployment", "web"), false},
		{"nil", nil, ref("apps/v1", "Deployment", "web"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TargetRefsConflict(tt.a, tt.b); got != tt.want {
				t.Errorf("TargetRefsConflict(a, b) = %t, want %t", got, tt.want)
			}
			if got := TargetRefsConflict(tt.b, tt.a); got != tt.want {
				t.Errorf("TargetRefsConflict(b, a) = %t, want %t", got, tt.want)
			}
		})
	}
}

func TestConflicts(t *testing.T) {
	web := selectorBudget("web")
	webIn := selectorBudget("web-in")
	webIn.Spec.Selector = exprSelector(in("app", "web", "api"))
	webFrontend := selectorBudget("web-fe")
	webFrontend.Spec.Selector = labelsSelector("app", "web", "tier", "fe")
	deploy := targetRefBudget("deploy")
	deployBeta := targetRefBudget("deploy-beta")
	deployBeta.Spec.TargetReference.APIVersion = "apps/v1beta1"
	elsewhere := selectorBudget("elsewhere")
	elsewhere.Namespace = "other"

	tests := []struct {
		name   string
		pub    *policyv1alpha1.PodUnavailableBudget
		others []*policyv1alpha1.PodUnavailableBudget
		want   []string // names of the conflicting budgets, in order
	}{
		{"no others", web, nil, nil},
		{"itself is skipped", web, []*policyv1alpha1.PodUnavailableBudget{web.DeepCopy()}, nil},
		{"same selector", selectorBudget("b"), []*policyv1alpha1.PodUnavailableBudget{web}, []string{"web"}},
		{"In selector", selectorBudget("b"), []*policyv1alpha1.PodUnavailableBudget{webIn}, []string{"web-in"}},
		{"more keys", webFrontend, []*policyv1alpha1.PodUnavailableBudget{web, webIn}, nil},
		{"other namespace", selectorBudget("b"), []*policyv1alpha1.PodUnavailableBudget{elsewhere}, nil},
		{"same Deployment through another version", deployBeta, []*policyv1alpha1.PodUnavailableBudget{deploy}, []string{"deploy"}},
		{"selector against targetRef", selectorBudget("b"), []*policyv1alpha1.PodUnavailableBudget{deploy}, nil},
		{"targetRef against selector", deployBeta, []*policyv1alpha1.PodUnavailableBudget{web}, nil},
		{"every conflict, by name", selectorBudget("b"), []*policyv1alpha1.PodUnavailableBudget{webIn, deploy, web, webFrontend}, []string{"web", "web-in"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := Conflicts(up(tt.pub), ups(tt.others))
			if len(errs) != len(tt.want) {
				t.Fatalf("errors %v, want conflicts with %v", errs, tt.want)
			}
			for i, name := range tt.want {
				wantField := "spec.selector"
				if tt.pub.Spec.TargetReference != nil {
					wantField = "spec.targetRef"
				}
				if errs[i].Field != wantField || errs[i].Type != field.ErrorTypeInvalid {
					t.Errorf("error %d on %s (%s), want Invalid on %s", i, errs[i].Field, errs[i].Type, wantField)
				}
				if want := "is in conflict with other PodUnavailableBudget " + name + " "; !strings.Contains(errs[i].Detail, want) {
					t.Errorf("error %d: %q does not contain %q", i, errs[i].Detail, want)
				}
			}
		})
	}
}

func TestConflictMessagesShowTheOtherBudget(t *testing.T) {
	pub := selectorBudget("b")
	other := selectorBudget("a")
	other.Spec.Selector = exprSelector(in("app", "web", "api"))
	errs := Conflicts(up(pub), ups([]*policyv1alpha1.PodUnavailableBudget{other}))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "(selector app in (api,web))") {
		t.Errorf("errors %v, want one showing the other budget's selector", errs)
	}

	pub, other = targetRefBudget("b"), targetRefBudget("a")
	other.Spec.TargetReference.APIVersion = "apps/v1beta1"
	errs = Conflicts(up(pub), ups([]*policyv1alpha1.PodUnavailableBudget{other}))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "(targetRef apps/v1beta1 Deployment web)") {
		t.Errorf("errors %v, want one showing the other budget's targetRef", errs)
	}
}
