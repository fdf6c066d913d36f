package podunavailablebudget

import (
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// Every invalid budget is refused with HTTP 400, as OpenKruise's webhook answers, and
// nothing is stored; valid ones, including an operations list with spaces around its
// words, are accepted.
func TestSpecValidation(t *testing.T) {
	e := setup(t)
	e.startManager(t, managerOptions(""))

	web := withSelector(map[string]string{"app": "web"})
	one := withMaxUnavailable(intstr.FromInt32(1))
	cases := []struct {
		name   string
		budget *pub
	}{
		{"neither selector nor targetRef", newBudget("none", one)},
		{"both selector and targetRef", newBudget("both", web, withTarget("apps/v1", "Deployment", "web"), one)},
		{"empty selector", newBudget("empty-selector", withLabelSelector(&metav1.LabelSelector{}), one)},
		{"invalid selector", newBudget("invalid-selector", withLabelSelector(&metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near", Values: []string{"web"}}},
		}), one)},
		{"targetRef without kind", newBudget("no-kind", withTarget("apps/v1", "", "web"), one)},
		{"targetRef without name", newBudget("no-name", withTarget("apps/v1", "Deployment", ""), one)},
		{"targetRef without apiVersion", newBudget("no-version", withTarget("", "Deployment", "web"), one)},
		{"targetRef apiVersion not group/version", newBudget("bad-version", withTarget("apps/v1/extra", "Deployment", "web"), one)},
		{"both maxUnavailable and minAvailable", newBudget("both-limits", web, one, withMinAvailable(intstr.FromInt32(1)))},
		{"neither maxUnavailable nor minAvailable", newBudget("no-limit", web)},
		{"maxUnavailable 150%", newBudget("over-100", web, withMaxUnavailable(intstr.FromString("150%")))},
		{"negative maxUnavailable", newBudget("negative", web, withMaxUnavailable(intstr.FromInt32(-1)))},
		{"minAvailable not a number or percentage", newBudget("not-a-number", web, withMinAvailable(intstr.FromString("half")))},
		{"protect-operations with an unknown word", newBudget("bad-operations", web, one, withAnnotation(protectOperationsKey, "DELETE,FOO"))},
		{"protect-total-replicas not a number", newBudget("bad-total", web, one, withAnnotation(protectTotalReplicasKey, "abc"))},
		{"protect-total-replicas beyond int32", newBudget("huge-total", web, one, withAnnotation(protectTotalReplicasKey, "4294967296"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Bosun.PolicyV1alpha1().PodUnavailableBudgets(e.Namespace).Create(e.Ctx, tc.budget, metav1.CreateOptions{})
			framework.ExpectRefused(t, "creating "+tc.name, err, http.StatusBadRequest)
			if _, err := e.Bosun.PolicyV1alpha1().PodUnavailableBudgets(e.Namespace).Get(e.Ctx, tc.budget.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("budget %s was stored (get: %v)", tc.budget.Name, err)
			}
		})
	}

	valid := []*pub{
		newBudget("selector-max", withSelector(map[string]string{"app": "a"}), withMaxUnavailable(intstr.FromString("25%"))),
		newBudget("selector-min", withSelector(map[string]string{"app": "b"}), withMinAvailable(intstr.FromInt32(0))),
		newBudget("target-min", withTarget("apps/v1", "Deployment", "c"), withMinAvailable(intstr.FromString("100%"))),
		newBudget("operations-with-spaces", withSelector(map[string]string{"app": "d"}), one,
			withAnnotation(protectOperationsKey, " DELETE , EVICT "), withAnnotation(protectTotalReplicasKey, "7")),
		newBudget("every-operation", withSelector(map[string]string{"app": "e"}), one, withAnnotation(protectOperationsKey, "DELETE,UPDATE,EVICT,RESIZE")),
	}
	for _, b := range valid {
		t.Run("valid "+b.Name, func(t *testing.T) {
			if _, err := e.Bosun.PolicyV1alpha1().PodUnavailableBudgets(e.Namespace).Create(e.Ctx, b, metav1.CreateOptions{}); err != nil {
				t.Errorf("creating valid budget %s: %v", b.Name, err)
			}
		})
	}

	// Updates are validated the same way.
	t.Run("update to an invalid value", func(t *testing.T) {
		_, err := e.budgets().TryUpdate("selector-max", func(b *pub) {
			b.Spec.MaxUnavailable = &intstr.IntOrString{Type: intstr.String, StrVal: "101%"}
		})
		framework.ExpectRefused(t, "updating maxUnavailable to 101%", err, http.StatusBadRequest)
		_, err = e.budgets().TryUpdate("selector-max", func(b *pub) {
			b.Annotations = map[string]string{protectOperationsKey: "DELETE,REBOOT"}
		})
		framework.ExpectRefused(t, "updating protect-operations to DELETE,REBOOT", err, http.StatusBadRequest)
	})
}

// A budget's selector and targetRef cannot change; its limit can.
func TestImmutability(t *testing.T) {
	e := setup(t)
	e.startManager(t, managerOptions(""))

	e.budgets().Create(t, newBudget("by-selector", withSelector(map[string]string{"app": "web"}), withMaxUnavailable(intstr.FromInt32(1))))
	e.budgets().Create(t, newBudget("by-target", withTarget("apps/v1", "Deployment", "api"), withMaxUnavailable(intstr.FromInt32(1))))

	denied := []struct {
		name   string
		budget string
		mutate func(*pub)
	}{
		{"changing the selector", "by-selector", func(b *pub) { b.Spec.Selector.MatchLabels["app"] = "web2" }},
		{"adding a selector term", "by-selector", func(b *pub) { b.Spec.Selector.MatchLabels["tier"] = "fe" }},
		{"replacing the selector by a targetRef", "by-selector", func(b *pub) {
			b.Spec.Selector = nil
			b.Spec.TargetReference = withTargetRef("apps/v1", "Deployment", "web")
		}},
		{"changing the targetRef's name", "by-target", func(b *pub) { b.Spec.TargetReference.Name = "api2" }},
		{"changing the targetRef's kind", "by-target", func(b *pub) { b.Spec.TargetReference.Kind = "StatefulSet" }},
		{"changing the targetRef's apiVersion", "by-target", func(b *pub) { b.Spec.TargetReference.APIVersion = "apps/v1beta2" }},
	}
	for _, tc := range denied {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.budgets().TryUpdate(tc.budget, tc.mutate)
			framework.ExpectRefused(t, tc.name, err, http.StatusBadRequest)
		})
	}
	if got := e.budgets().Get(t, "by-selector").Spec.Selector.MatchLabels; len(got) != 1 || got["app"] != "web" {
		t.Errorf("the selector changed to %v", got)
	}

	t.Run("changing maxUnavailable", func(t *testing.T) {
		updated, err := e.budgets().TryUpdate("by-selector", func(b *pub) { b.Spec.MaxUnavailable = ptr.To(intstr.FromString("50%")) })
		if err != nil {
			t.Fatalf("changing maxUnavailable: %v", err)
		}
		if got := updated.Spec.MaxUnavailable.String(); got != "50%" {
			t.Errorf("maxUnavailable is %s after the update, want 50%%", got)
		}
	})
	t.Run("switching to minAvailable", func(t *testing.T) {
		_, err := e.budgets().TryUpdate("by-target", func(b *pub) {
			b.Spec.MaxUnavailable = nil
			b.Spec.MinAvailable = ptr.To(intstr.FromInt32(2))
		})
		if err != nil {
			t.Fatalf("switching from maxUnavailable to minAvailable: %v", err)
		}
	})
}

// Two budgets may not cover the same pods: selectors with the same keys whose requirements
// can hold together conflict, and so do targetRefs to the same workload whatever their
// versions. Different key sets, and a selector against a targetRef, never conflict.
func TestOverlap(t *testing.T) {
	e := setup(t)
	e.startManager(t, managerOptions(""))

	one := withMaxUnavailable(intstr.FromInt32(1))
	e.budgets().Create(t, newBudget("a", withSelector(map[string]string{"app": "web"}), one))
	e.budgets().Create(t, newBudget("deploy", withTarget("apps/v1", "Deployment", "web"), one))

	in := func(key string, op metav1.LabelSelectorOperator, values ...string) budgetOption {
		return withLabelSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: op, Values: values}}})
	}
	conflicting := []struct {
		name   string
		budget *pub
	}{
		{"the same selector", newBudget("b-same", withSelector(map[string]string{"app": "web"}), one)},
		{"app In [web,api]", newBudget("b-in", in("app", metav1.LabelSelectorOpIn, "web", "api"), one)},
		{"app Exists", newBudget("b-exists", in("app", metav1.LabelSelectorOpExists), one)},
		{"app NotIn [api]", newBudget("b-notin", in("app", metav1.LabelSelectorOpNotIn, "api"), one)},
		{"targetRef to the same Deployment in another version", newBudget("deploy-v1beta2", withTarget("apps/v1beta2", "Deployment", "web"), one)},
		{"targetRef to the same Deployment", newBudget("deploy-again", withTarget("apps/v1", "Deployment", "web"), one)},
	}
	for _, tc := range conflicting {
		t.Run(tc.name+" conflicts", func(t *testing.T) {
			_, err := e.Bosun.PolicyV1alpha1().PodUnavailableBudgets(e.Namespace).Create(e.Ctx, tc.budget, metav1.CreateOptions{})
			framework.ExpectRefused(t, "creating "+tc.name, err, http.StatusBadRequest)
		})
	}

	allowed := []struct {
		name   string
		budget *pub
	}{
		{"app=web,tier=fe", newBudget("b-tier", withSelector(map[string]string{"app": "web", "tier": "fe"}), one)},
		{"app In [api]", newBudget("b-api", in("app", metav1.LabelSelectorOpIn, "api"), one)},
		{"a targetRef to another Deployment", newBudget("deploy-api", withTarget("apps/v1", "Deployment", "api"), one)},
		{"a targetRef to a StatefulSet of the same name", newBudget("sts-web", withTarget("apps/v1", "StatefulSet", "web"), one)},
	}
	for _, tc := range allowed {
		t.Run(tc.name+" does not conflict", func(t *testing.T) {
			if _, err := e.Bosun.PolicyV1alpha1().PodUnavailableBudgets(e.Namespace).Create(e.Ctx, tc.budget, metav1.CreateOptions{}); err != nil {
				t.Errorf("creating %s: %v", tc.name, err)
			}
		})
	}

	// Budgets of other namespaces never conflict.
	t.Run("the same selector in another namespace", func(t *testing.T) {
		other := e.NewNamespace(t)
		_, err := e.Bosun.PolicyV1alpha1().PodUnavailableBudgets(other).Create(e.Ctx,
			newBudget("a", withSelector(map[string]string{"app": "web"}), one), metav1.CreateOptions{})
		if err != nil {
			t.Errorf("creating the same budget in namespace %s: %v", other, err)
		}
	})
}
