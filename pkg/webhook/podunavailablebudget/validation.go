package podunavailablebudget

import (
	"fmt"
	"strconv"
	"strings"

	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/pubutil"

	"github.com/bosun-dev/bosun/pkg/webhook/intorpercent"
)

// operations are the words the protected-operations annotation may list.
var operations = []policyv1alpha1.PubOperation{
	policyv1alpha1.PubDeleteOperation,
	policyv1alpha1.PubUpdateOperation,
	policyv1alpha1.PubEvictOperation,
	policyv1alpha1.PubResizeOperation,
}

// Validate returns everything wrong with a budget about to be created, each error naming
// its field: its annotations, then its spec. Metadata rules every object follows (name,
// annotation sizes) are left to the API server.
func Validate(pub *policyv1alpha1.PodUnavailableBudget) field.ErrorList {
	allErrs := validateAnnotations(pub.Annotations, field.NewPath("metadata", "annotations"))
	allErrs = append(allErrs, validateSpec(&pub.Spec, field.NewPath("spec"))...)
	return allErrs
}

// ValidateUpdate returns everything wrong with an update from old to pub: the new budget is
// validated in full, as on creation, and its selector and targetRef must not change. Pods
// carry the name of the budget that covers them, so a budget that changed what it covers
// would go on protecting pods it no longer selects.
func ValidateUpdate(pub, old *policyv1alpha1.PodUnavailableBudget) field.ErrorList {
	allErrs := Validate(pub)
	specPath := field.NewPath("spec")
	if !apiequality.Semantic.DeepEqual(pub.Spec.Selector, old.Spec.Selector) {
		allErrs = append(allErrs, field.Invalid(specPath.Child("selector"), pub.Spec.Selector, "field is immutable"))
	}
	if !apiequality.Semantic.DeepEqual(pub.Spec.TargetReference, old.Spec.TargetReference) {
		allErrs = append(allErrs, field.Invalid(specPath.Child("targetRef"), pub.Spec.TargetReference, "field is immutable"))
	}
	return allErrs
}

// validateAnnotations checks the annotations that tune a budget, where present. The
// controller and the pod webhook read them without reporting errors (a malformed value
// falls back to the default), so this is the only place a typo is ever reported.
func validateAnnotations(annotations map[string]string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if value, ok := annotations[policyv1alpha1.PubProtectOperationAnnotation]; ok {
		if unknown := unknownOperations(value); len(unknown) > 0 {
			noun := "operation"
			if len(unknown) > 1 {
				noun = "operations"
			}
			allErrs = append(allErrs, field.Invalid(fldPath.Key(policyv1alpha1.PubProtectOperationAnnotation), value,
				fmt.Sprintf("unknown %s %s: must be a comma-separated list of %s", noun, strings.Join(unknown, ", "), operationList())))
		}
	}
	if value, ok := annotations[policyv1alpha1.PubProtectTotalReplicasAnnotation]; ok {
		if _, err := strconv.ParseInt(value, 10, 32); err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Key(policyv1alpha1.PubProtectTotalReplicasAnnotation), value,
				"must be a decimal 32-bit integer"))
		}
	}
	for _, key := range []string{pubutil.RetryDeniedEvictionsAnnotation, pubutil.ProtectNotReadyAnnotation} {
		if value, ok := annotations[key]; ok && value != "true" && value != "false" {
			allErrs = append(allErrs, field.NotSupported(fldPath.Key(key), value, []string{"true", "false"}))
		}
	}
	return allErrs
}

// unknownOperations returns, quoted, the items of a protected-operations list that are not
// operation words. Spaces around an item are accepted (OpenKruise refuses them, but "DELETE,
// EVICT" plainly means the two operations). An empty or blank value means the default set
// to the controller and the pod webhook, so it is valid; an empty item in a longer list is
// not.
func unknownOperations(value string) []string {
	if strings.TrimSpace(value) == "" {
		return nil
	}
	var unknown []string
	for _, item := range strings.Split(value, ",") {
		word := strings.TrimSpace(item)
		known := false
		for _, op := range operations {
			if word == string(op) {
				known = true
				break
			}
		}
		if !known {
			unknown = append(unknown, strconv.Quote(word))
		}
	}
	return unknown
}

// operationList is "DELETE, UPDATE, EVICT and RESIZE".
func operationList() string {
	words := make([]string, len(operations))
	for i, op := range operations {
		words[i] = string(op)
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

func validateSpec(spec *policyv1alpha1.PodUnavailableBudgetSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	selectorPath, targetRefPath := fldPath.Child("selector"), fldPath.Child("targetRef")
	switch {
	case spec.Selector == nil && spec.TargetReference == nil:
		allErrs = append(allErrs, field.Required(selectorPath, "one of selector and targetRef is required"))
	case spec.Selector != nil && spec.TargetReference != nil:
		allErrs = append(allErrs, field.Forbidden(targetRefPath, "selector and targetRef are mutually exclusive"))
	}
	// Each one present is checked even when both are, so that a single answer names
	// everything to fix.
	if spec.Selector != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, selectorPath)...)
		if len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
			allErrs = append(allErrs, field.Invalid(selectorPath, spec.Selector, "empty selector is invalid: it would select every pod of the namespace"))
		}
	}
	if spec.TargetReference != nil {
		allErrs = append(allErrs, validateTargetReference(spec.TargetReference, targetRefPath)...)
	}

	maxPath, minPath := fldPath.Child("maxUnavailable"), fldPath.Child("minAvailable")
	switch {
	case spec.MaxUnavailable == nil && spec.MinAvailable == nil:
		allErrs = append(allErrs, field.Required(maxPath, "one of maxUnavailable and minAvailable is required"))
	case spec.MaxUnavailable != nil && spec.MinAvailable != nil:
		allErrs = append(allErrs, field.Forbidden(minPath, "maxUnavailable and minAvailable are mutually exclusive"))
	}
	allErrs = append(allErrs, intorpercent.Validate(spec.MaxUnavailable, maxPath)...)
	allErrs = append(allErrs, intorpercent.Validate(spec.MinAvailable, minPath)...)
	return allErrs
}

func validateTargetReference(ref *policyv1alpha1.TargetReference, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	apiVersionPath := fldPath.Child("apiVersion")
	if ref.APIVersion == "" {
		allErrs = append(allErrs, field.Required(apiVersionPath, "the workload's API group and version, such as apps/v1"))
	} else if _, err := schema.ParseGroupVersion(ref.APIVersion); err != nil {
		allErrs = append(allErrs, field.Invalid(apiVersionPath, ref.APIVersion, err.Error()))
	}
	if ref.Kind == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("kind"), "the workload's kind, such as Deployment"))
	}
	if ref.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), "the workload's name"))
	}
	return allErrs
}
