package podunavailablebudget

import (
	"context"
	"fmt"
	"net/http"

	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"
	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/webhook"
	policylisters "github.com/bosun-dev/client-go/listers/policy/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/featuregate"
)

// The name and path OpenKruise gives the same webhook, so that configurations and
// dashboards written for one work for the other.
const (
	ValidatingName = "vpodunavailablebudget.kb.io"
	ValidatingPath = "/validate-policy-kruise-io-v1alpha1-podunavailablebudget"
)

var (
	budgetKind      = policyv1alpha1.SchemeGroupVersion.WithKind("PodUnavailableBudget")
	budgetGroupKind = budgetKind.GroupKind()
)

// Registrations is the budget's validating webhook, called on CREATE and UPDATE. budgets
// lists the other budgets of a namespace for the conflict check; gates is read on every
// request, features.DefaultFeatureGate when nil.
func Registrations(budgets policylisters.PodUnavailableBudgetLister, gates featuregate.FeatureGate) []webhook.Registration {
	if gates == nil {
		gates = features.DefaultFeatureGate
	}
	v := &validator{budgets: budgets, gates: gates}
	w := &webhook.ResourceWebhook[policyv1alpha1.PodUnavailableBudget, *policyv1alpha1.PodUnavailableBudget]{
		Kind:           budgetKind,
		Resource:       "podunavailablebudgets",
		ValidatingName: ValidatingName,
		ValidatingPath: ValidatingPath,
		Validate:       v.validate,
	}
	return w.Registrations()
}

type validator struct {
	budgets policylisters.PodUnavailableBudgetLister
	gates   featuregate.FeatureGate
}

// validate admits a budget that is valid, has kept its selector and targetRef (on UPDATE)
// and conflicts with no other budget of its namespace; it denies anything else with a 400.
func (v *validator) validate(_ context.Context, req *admissionv1.AdmissionRequest, pub, old *policyv1alpha1.PodUnavailableBudget) *admissionv1.AdmissionResponse {
	// A budget being deleted is about to stop protecting anything whatever it says;
	// refusing its updates, such as the removal of a finalizer, could only keep it from
	// going (for example once both gates are off, when every budget is refused).
	if old != nil && pub.DeletionTimestamp != nil {
		return webhook.Allowed()
	}
	if !v.gates.Enabled(features.PodUnavailableBudgetDeleteGate) && !v.gates.Enabled(features.PodUnavailableBudgetUpdateGate) {
		// Nothing would enforce the budget: admitting it would promise a protection the
		// cluster does not give.
		return webhook.Denied(http.StatusBadRequest, "PodUnavailableBudget protection is disabled: enable feature gate %s or %s",
			features.PodUnavailableBudgetDeleteGate, features.PodUnavailableBudgetUpdateGate)
	}
	name := webhook.ObjectName(req, pub)
	var errs field.ErrorList
	if old != nil {
		errs = ValidateUpdate(pub, old)
	} else {
		errs = Validate(pub)
	}
	others, err := v.budgets.PodUnavailableBudgets(pub.Namespace).List(labels.Everything())
	if err != nil {
		return webhook.Errored(http.StatusInternalServerError, fmt.Errorf("listing the PodUnavailableBudgets of namespace %s: %w", pub.Namespace, err))
	}
	errs = append(errs, Conflicts(pub, others)...)
	if len(errs) > 0 {
		return invalid(name, errs)
	}
	return webhook.Allowed()
}

// invalid refuses the request with the status the API server gives an invalid object, one
// cause per field error, but with code 400 (Bad Request) instead of 422: OpenKruise answers
// 400, and clients written against it may test for that code.
func invalid(name string, errs field.ErrorList) *admissionv1.AdmissionResponse {
	return webhook.InvalidWithCode(http.StatusBadRequest, budgetGroupKind, name, errs)
}
