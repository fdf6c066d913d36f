package podunavailablebudget

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/pubutil"

	"github.com/bosun-dev/bosun/pkg/webhook/intorpercent"
)

// operations are the words the protected-operations annotation may list.
var operations = []policyv1beta1.PubOperation{
	policyv1beta1.PubDeleteOperation,
	policyv1beta1.PubUpdateOperation,
	policyv1beta1.PubEvictOperation,
	policyv1beta1.PubResizeOperation,
}

// Validate returns everything wrong with a budget about to be created, each error naming
// its field: its annotations, then its spec. Metadata rules every object follows (name,
// annotation sizes) are left to the API server.
//
// The budget is judged in the hub version; a v1alpha1 budget is judged as its conversion.
// The fields v1alpha1 carries in annotations are judged by the v1alpha1 rules wherever
// they came from one (the annotation is there and says the same), so that a budget is
// accepted or refused alike in both versions, its errors named at the annotation: a total
// of replicas below 1 there means "no override", and an operation list may hold spaces.
// Set without their annotation, they follow the v1beta1 rules.
func Validate(pub *policyv1beta1.PodUnavailableBudget) field.ErrorList {
	allErrs := validateAnnotations(pub.Annotations, field.NewPath("metadata", "annotations"))
	allErrs = append(allErrs, validateSpec(&pub.Spec, field.NewPath("spec"))...)
	allErrs = append(allErrs, validateCarriedFields(pub, field.NewPath("spec"))...)
	return allErrs
}

// validateCarriedFields checks the v1beta1 fields that v1alpha1 carries in annotations,
// where they do not come from the annotation, and the selector v1alpha1 does not have.
func validateCarriedFields(pub *policyv1beta1.PodUnavailableBudget, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	spec := &pub.Spec
	if ops := spec.ProtectOperations; len(ops) > 0 && !OperationsCarried(pub) {
		opsPath := fldPath.Child("protectOperations")
		seen := map[policyv1beta1.PubOperation]bool{}
		for i, op := range ops {
			switch {
			case !slices.Contains(operations, op):
				allErrs = append(allErrs, field.NotSupported(opsPath.Index(i), op, operationWords()))
			case seen[op]:
				allErrs = append(allErrs, field.Duplicate(opsPath.Index(i), op))
			}
			seen[op] = true
		}
	}
	if total := spec.ProtectTotalReplicas; total != nil && *total < 1 && !TotalReplicasCarried(pub) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("protectTotalReplicas"), *total, "must be greater than or equal to 1"))
	}
	if sel := spec.IgnoredPodSelector; sel != nil {
		selPath := fldPath.Child("ignoredPodSelector")
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, selPath)...)
		if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
			allErrs = append(allErrs, field.Invalid(selPath, sel, "empty selector is invalid: it would exempt every pod of the budget"))
		}
	}
	return allErrs
}

// OperationsCarried reports whether the budget's protectOperations is what its
// protected-operations annotation says, split on every comma: the form a v1alpha1 budget
// takes in v1beta1.
func OperationsCarried(pub *policyv1beta1.PodUnavailableBudget) bool {
	value, ok := pub.Annotations[policyv1beta1.PubProtectOperationAnnotation]
	if !ok || value == "" {
		return false
	}
	items := strings.Split(value, ",")
	if len(items) != len(pub.Spec.ProtectOperations) {
		return false
	}
	for i, item := range items {
		if string(pub.Spec.ProtectOperations[i]) != item {
			return false
		}
	}
	return true
}

// TotalReplicasCarried reports whether the budget's protectTotalReplicas is what its
// total-replicas annotation says.
func TotalReplicasCarried(pub *policyv1beta1.PodUnavailableBudget) bool {
	value, ok := pub.Annotations[policyv1beta1.PubProtectTotalReplicasAnnotation]
	if !ok || pub.Spec.ProtectTotalReplicas == nil {
		return false
	}
	n, err := pubutil.ParseTotalReplicas(value)
	return err == nil && n == *pub.Spec.ProtectTotalReplicas
}

// ValidateUpdate returns everything wrong with an update from old to pub: the new budget is
// validated in full, as on creation, and its selector and targetRef must not change. Pods
// carry the name of the budget that covers them, so a budget that changed what it covers
// would go on protecting pods it no longer selects.
func ValidateUpdate(pub, old *policyv1beta1.PodUnavailableBudget) field.ErrorList {
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
// controller and the pod webhook read them leniently (pubutil: unknown operations are
// ignored, a malformed flag is false), so this is the only place most typos are reported.
func validateAnnotations(annotations map[string]string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if value, ok := annotations[policyv1beta1.PubProtectOperationAnnotation]; ok {
		if unknown := unknownOperations(value); len(unknown) > 0 {
			noun := "operation"
			if len(unknown) > 1 {
				noun = "operations"
			}
			allErrs = append(allErrs, field.Invalid(fldPath.Key(policyv1beta1.PubProtectOperationAnnotation), value,
				fmt.Sprintf("unknown %s %s: must be a comma-separated list of %s", noun, strings.Join(unknown, ", "), operationList())))
		}
	}
	if value, ok := annotations[policyv1beta1.PubProtectTotalReplicasAnnotation]; ok {
		if _, err := pubutil.ParseTotalReplicas(value); err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Key(policyv1beta1.PubProtectTotalReplicasAnnotation), value,
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

// operationWords are the operations, as strings.
func operationWords() []string {
	words := make([]string, len(operations))
	for i, op := range operations {
		words[i] = string(op)
	}
	return words
}

// operationList is "DELETE, UPDATE, EVICT and RESIZE".
func operationList() string {
	words := make([]string, len(operations))
	for i, op := range operations {
		words[i] = string(op)
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

func validateSpec(spec *policyv1beta1.PodUnavailableBudgetSpec, fldPath *field.Path) field.ErrorList {
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

func validateTargetReference(ref *policyv1beta1.TargetReference, fldPath *field.Path) field.ErrorList {
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
