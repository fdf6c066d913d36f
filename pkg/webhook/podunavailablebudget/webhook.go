package podunavailablebudget

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/webhook"
	policylisters "github.com/bosun-dev/client-go/listers/policy/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/featuregate"
)

// The name of the validating webhook and the version-less path OpenKruise 1.9 serves it
// at, so that configurations and dashboards written for one work for the other; the path
// of earlier releases, which named the version, is still answered for one release (the
// configurations of replicas not yet upgraded point at it). OpenKruise has no defaulting
// webhook for budgets: bosun's only removes stale annotations from v1beta1 writes.
const (
	MutatingName         = "mpodunavailablebudget.kb.io"
	MutatingPath         = "/mutate-policy-kruise-io-podunavailablebudget"
	ValidatingName       = "vpodunavailablebudget.kb.io"
	ValidatingPath       = "/validate-policy-kruise-io-podunavailablebudget"
	LegacyValidatingPath = "/validate-policy-kruise-io-v1alpha1-podunavailablebudget"
)

var (
	budgetKind      = policyv1beta1.SchemeGroupVersion.WithKind("PodUnavailableBudget")
	budgetGroupKind = budgetKind.GroupKind()
)

// Registrations are the budget's webhooks, called on CREATE and UPDATE of v1alpha1 and
// v1beta1 budgets: the validating one and the one removing stale annotations. budgets
// lists the other budgets of a namespace for the conflict check; gates is read on every
// request, features.DefaultFeatureGate when nil.
func Registrations(budgets policylisters.PodUnavailableBudgetLister, gates featuregate.FeatureGate) []webhook.Registration {
	if gates == nil {
		gates = features.DefaultFeatureGate
	}
	v := &validator{budgets: budgets, gates: gates}
	w := &webhook.ResourceWebhook[policyv1beta1.PodUnavailableBudget, *policyv1beta1.PodUnavailableBudget]{
		Kind:     budgetKind,
		Resource: "podunavailablebudgets",
		Spokes: []webhook.Spoke[policyv1beta1.PodUnavailableBudget, *policyv1beta1.PodUnavailableBudget]{
			webhook.NewSpoke[policyv1alpha1.PodUnavailableBudget](policyv1alpha1.SchemeGroupVersion.WithKind("PodUnavailableBudget"), nil,
				policyv1alpha1.ConvertPodUnavailableBudgetToV1beta1),
		},
		MutatingName:          MutatingName,
		MutatingPath:          MutatingPath,
		StaleCarriers:         staleCarriers,
		ValidatingName:        ValidatingName,
		ValidatingPath:        ValidatingPath,
		LegacyValidatingPaths: []string{LegacyValidatingPath},
		Validate:              v.validate,
	}
	// The validating webhook first, as before the defaulting one was added.
	regs := w.Registrations()
	slices.Reverse(regs)
	return regs
}

// staleCarriers returns the annotations of a v1beta1 budget that carry a field for
// v1alpha1 but disagree with the field as set: the field decides, and the annotation would
// only mislead whoever reads it.
func staleCarriers(pub *policyv1beta1.PodUnavailableBudget) []webhook.StaleCarrier {
	var stale []webhook.StaleCarrier
	if value, ok := pub.Annotations[policyv1beta1.PubProtectOperationAnnotation]; ok && len(pub.Spec.ProtectOperations) > 0 && !OperationsCarried(pub) {
		stale = append(stale, webhook.StaleCarrier{
			Annotation: policyv1beta1.PubProtectOperationAnnotation,
			Warning: fmt.Sprintf("metadata.annotations[%s]: removed: %q disagrees with spec.protectOperations %v, which takes precedence",
				policyv1beta1.PubProtectOperationAnnotation, value, pub.Spec.ProtectOperations),
		})
	}
	if value, ok := pub.Annotations[policyv1beta1.PubProtectTotalReplicasAnnotation]; ok && pub.Spec.ProtectTotalReplicas != nil && !TotalReplicasCarried(pub) {
		stale = append(stale, webhook.StaleCarrier{
			Annotation: policyv1beta1.PubProtectTotalReplicasAnnotation,
			Warning: fmt.Sprintf("metadata.annotations[%s]: removed: %q disagrees with spec.protectTotalReplicas (%d), which takes precedence",
				policyv1beta1.PubProtectTotalReplicasAnnotation, value, *pub.Spec.ProtectTotalReplicas),
		})
	}
	return stale
}

type validator struct {
	budgets policylisters.PodUnavailableBudgetLister
	gates   featuregate.FeatureGate
}

// validate admits a budget that is valid, has kept its selector and targetRef (on UPDATE)
// and conflicts with no other budget of its namespace; it denies anything else with a 400.
func (v *validator) validate(_ context.Context, req *admissionv1.AdmissionRequest, pub, old *policyv1beta1.PodUnavailableBudget) *admissionv1.AdmissionResponse {
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
	// One resource: the cache holds every budget, whatever version each was written in,
	// as the API server converts it to the hub version.
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
