package daemonset

import (
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/bosun-dev/bosun/pkg/webhook/intorpercent"
	"github.com/bosun-dev/bosun/pkg/webhook/podtemplate"
)

// Validate returns everything wrong with a DaemonSet about to be created, each error naming
// its field. It judges the hub version: a v1alpha1 object is judged as its conversion,
// whose fields are named the same, and whose partitioned scaling, carried by an annotation
// in v1alpha1, takes any value. It expects the object as the mutating webhook left it
// (defaulted); fields the defaulting would have filled in are still accepted when empty,
// where empty has a meaning.
func Validate(ds *appsv1beta1.DaemonSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&ds.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, validateSpec(&ds.Spec, field.NewPath("spec"))...)
	return allErrs
}

// ValidateUpdate returns everything wrong with an update from oldDS to newDS: the new
// object is validated in full, as on creation, and only the fields users may change after
// creation may differ (scaleStrategy among them: v1alpha1 carries it in an annotation,
// which was always mutable). The selector in particular is immutable, since changing it would
// orphan the pods the DaemonSet already runs.
//
// Metadata update rules (immutable name, resourceVersion, ...) are left to the API server,
// which enforces them for every resource before calling admission.
func ValidateUpdate(newDS, oldDS *appsv1beta1.DaemonSet) field.ErrorList {
	allErrs := Validate(newDS)
	allErrs = append(allErrs, validateSpecUpdate(&newDS.Spec, &oldDS.Spec, field.NewPath("spec"))...)
	return allErrs
}

// validateSpecUpdate checks that only the mutable fields of the spec changed.
func validateSpecUpdate(newSpec, oldSpec *appsv1beta1.DaemonSetSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if !apiequality.Semantic.DeepEqual(newSpec.Selector, oldSpec.Selector) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("selector"), newSpec.Selector, "field is immutable"))
	}

	// Compare what is left once every field allowed to change (and the selector, reported
	// above) is taken from the old spec, so that a field added to the type later is
	// immutable until someone decides otherwise.
	rest := newSpec.DeepCopy()
	rest.Selector = oldSpec.Selector
	rest.Template = oldSpec.Template
	rest.UpdateStrategy = oldSpec.UpdateStrategy
	rest.Lifecycle = oldSpec.Lifecycle
	rest.BurstReplicas = oldSpec.BurstReplicas
	rest.MinReadySeconds = oldSpec.MinReadySeconds
	rest.RevisionHistoryLimit = oldSpec.RevisionHistoryLimit
	rest.ScaleStrategy = oldSpec.ScaleStrategy
	if !apiequality.Semantic.DeepEqual(rest, oldSpec) {
		allErrs = append(allErrs, field.Forbidden(fldPath, "updates to daemonset spec for fields other than 'template', 'updateStrategy', 'lifecycle', 'burstReplicas', 'minReadySeconds', 'revisionHistoryLimit' and 'scaleStrategy' are forbidden"))
	}
	return allErrs
}

func validateSpec(spec *appsv1beta1.DaemonSetSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	allErrs = append(allErrs, validateSelector(spec.Selector, spec.Template.Labels, fldPath)...)
	allErrs = append(allErrs, validateTemplate(&spec.Template, fldPath.Child("template"))...)
	allErrs = append(allErrs, validateUpdateStrategy(&spec.UpdateStrategy, fldPath.Child("updateStrategy"))...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*spec.RevisionHistoryLimit), fldPath.Child("revisionHistoryLimit"))...)
	}
	// burstReplicas is deliberately not validated: OpenKruise accepts any value, and the
	// controller copes with odd ones (a negative or unparsable limit means no creations).
	if spec.Lifecycle != nil && spec.Lifecycle.InPlaceUpdate != nil {
		// The DaemonSet's in-place update never runs this hook; accepting it would make
		// users believe their pods are held around the update when they are not.
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("lifecycle", "inPlaceUpdate"), "inPlaceUpdate hook is not supported for DaemonSet"))
	}
	return allErrs
}

// validateSelector checks the pod selector and that the template's pods match it, without
// which the DaemonSet would create pods it does not own, forever.
func validateSelector(selector *metav1.LabelSelector, templateLabels map[string]string, specPath *field.Path) field.ErrorList {
	fldPath := specPath.Child("selector")
	if selector == nil {
		return field.ErrorList{field.Required(fldPath, "a label selector over the DaemonSet's pods is required")}
	}
	allErrs := metav1validation.ValidateLabelSelector(selector, metav1validation.LabelSelectorValidationOptions{}, fldPath)
	if len(selector.MatchLabels)+len(selector.MatchExpressions) == 0 {
		// An empty selector selects every pod of the namespace.
		allErrs = append(allErrs, field.Invalid(fldPath, selector, "empty selector is invalid for daemonset"))
	}
	if len(allErrs) > 0 {
		return allErrs
	}
	parsed, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		// Unreachable after a successful validation; reported rather than ignored all the same.
		return field.ErrorList{field.Invalid(fldPath, selector, err.Error())}
	}
	if !parsed.Matches(labels.Set(templateLabels)) {
		allErrs = append(allErrs, field.Invalid(specPath.Child("template", "metadata", "labels"), templateLabels, "`selector` does not match template `labels`"))
	}
	return allErrs
}

// validateTemplate checks the pod template. Core's full pod validation is not available to
// this module, so this holds the rules a DaemonSet adds and the basic ones without which no
// pod could be created from the template; the API server still validates every pod the
// controller creates.
func validateTemplate(template *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	allErrs := podtemplate.Validate(template, fldPath)
	specPath := fldPath.Child("spec")
	podSpec := &template.Spec
	// A daemon pod must come back on its node whatever way it exits. Empty is accepted: the
	// template is not defaulted, and pods created from it get the API server's default,
	// Always.
	if podSpec.RestartPolicy != "" && podSpec.RestartPolicy != corev1.RestartPolicyAlways {
		allErrs = append(allErrs, field.NotSupported(specPath.Child("restartPolicy"), podSpec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	// A deadline would make every daemon pod fail, and be replaced, once it runs out.
	if podSpec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("activeDeadlineSeconds"), "activeDeadlineSeconds in DaemonSet is not Supported"))
	}
	return allErrs
}

var supportedUpdateStrategyTypes = []string{
	string(appsv1beta1.RollingUpdateDaemonSetStrategyType),
	string(appsv1beta1.OnDeleteDaemonSetStrategyType),
}

// The deprecated Surging type of v1alpha1 is not one of them: it converts to a Standard
// rolling update with the limits it stood for, and v1beta1 does not accept it.
var supportedRollingUpdateTypes = []string{
	string(appsv1beta1.StandardRollingUpdateType),
	string(appsv1beta1.InplaceRollingUpdateType),
}

func validateUpdateStrategy(strategy *appsv1beta1.DaemonSetUpdateStrategy, fldPath *field.Path) field.ErrorList {
	switch strategy.Type {
	case appsv1beta1.OnDeleteDaemonSetStrategyType:
		// rollingUpdate is ignored for OnDelete, whatever it holds.
		return nil
	case appsv1beta1.RollingUpdateDaemonSetStrategyType:
		if strategy.RollingUpdate == nil {
			return field.ErrorList{field.Required(fldPath.Child("rollingUpdate"), "required when type is RollingUpdate")}
		}
		return validateRollingUpdate(strategy.RollingUpdate, fldPath.Child("rollingUpdate"))
	case "":
		return field.ErrorList{field.Required(fldPath.Child("type"), "")}
	default:
		return field.ErrorList{field.NotSupported(fldPath.Child("type"), strategy.Type, supportedUpdateStrategyTypes)}
	}
}

func validateRollingUpdate(ru *appsv1beta1.RollingUpdateDaemonSet, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	typePath := fldPath.Child("rollingUpdateType")
	switch ru.Type {
	case "", appsv1beta1.StandardRollingUpdateType, appsv1beta1.InplaceRollingUpdateType:
		// Empty means Standard once defaulted.
	default:
		allErrs = append(allErrs, field.NotSupported(typePath, ru.Type, supportedRollingUpdateTypes))
	}

	unavailablePath := fldPath.Child("maxUnavailable")
	surgePath := fldPath.Child("maxSurge")
	unavailableErrs := intorpercent.Validate(ru.MaxUnavailable, unavailablePath)
	surgeErrs := intorpercent.Validate(ru.MaxSurge, surgePath)
	allErrs = append(allErrs, unavailableErrs...)
	allErrs = append(allErrs, surgeErrs...)
	// How the two limits combine says nothing useful while one of them is malformed.
	if len(unavailableErrs) == 0 && len(surgeErrs) == 0 {
		// Zero, as an integer or as a percentage, counts as unset: exactly one of the two
		// limits drives the update, otherwise the controller could neither make progress
		// (both zero) nor tell which of the two ways to replace a pod was meant (both set).
		unavailableSet := isNonZero(ru.MaxUnavailable)
		surgeSet := isNonZero(ru.MaxSurge)
		switch {
		case unavailableSet && surgeSet:
			allErrs = append(allErrs, field.Invalid(surgePath, ru.MaxSurge.String(), "may not be set when maxUnavailable is non-zero"))
		case !unavailableSet && !surgeSet:
			allErrs = append(allErrs, field.Required(unavailablePath, "cannot be 0 when maxSurge is 0"))
		}
		// An in-place update keeps the pod, so there is no second pod to surge with.
		if surgeSet && ru.Type == appsv1beta1.InplaceRollingUpdateType {
			allErrs = append(allErrs, field.Invalid(surgePath, ru.MaxSurge.String(), "must be 0 when rollingUpdateType is InPlaceIfPossible"))
		}
	}

	if ru.Selector != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(ru.Selector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
	}
	allErrs = append(allErrs, intorpercent.Validate(ru.Partition, fldPath.Child("partition"))...)
	return allErrs
}

// isNonZero reports whether a well-formed optional int-or-percent is set to something other
// than 0 or 0%.
func isNonZero(v *intstr.IntOrString) bool {
	if v == nil {
		return false
	}
	if v.Type == intstr.Int {
		return v.IntVal != 0
	}
	percent, ok := intorpercent.ParsePercent(v.StrVal)
	return !ok || percent != 0
}
