package podunavailablebudget

import (
	"fmt"
	"slices"
	"strings"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Conflicts returns one error for each budget of others that could cover the same pods as
// pub, by name order. A pod carries the name of a single budget, so of two overlapping
// budgets one would silently never protect the pods they share.
//
// Budgets are compared in the hub version, whatever version each was written in: others
// are normally every budget of pub's namespace; pub itself (same name) and budgets
// of other namespaces are skipped. Two targetRefs conflict when they name the same
// workload (TargetRefsConflict); two selectors when they loosely overlap
// (SelectorsOverlap). A selector budget and a targetRef budget never conflict, even when
// the selector matches the workload's pods.
func Conflicts(pub *policyv1beta1.PodUnavailableBudget, others []*policyv1beta1.PodUnavailableBudget) field.ErrorList {
	sorted := slices.Clone(others)
	slices.SortFunc(sorted, func(a, b *policyv1beta1.PodUnavailableBudget) int { return strings.Compare(a.Name, b.Name) })

	specPath := field.NewPath("spec")
	var allErrs field.ErrorList
	for _, other := range sorted {
		if other.Name == pub.Name || other.Namespace != pub.Namespace {
			continue
		}
		if TargetRefsConflict(pub.Spec.TargetReference, other.Spec.TargetReference) {
			ref := other.Spec.TargetReference
			allErrs = append(allErrs, field.Invalid(specPath.Child("targetRef"), pub.Spec.TargetReference,
				fmt.Sprintf("is in conflict with other PodUnavailableBudget %s (targetRef %s %s %s): a pod can be covered by one budget only",
					other.Name, ref.APIVersion, ref.Kind, ref.Name)))
		}
		if SelectorsOverlap(pub.Spec.Selector, other.Spec.Selector) {
			allErrs = append(allErrs, field.Invalid(specPath.Child("selector"), pub.Spec.Selector,
				fmt.Sprintf("is in conflict with other PodUnavailableBudget %s (selector %s): a pod can be covered by one budget only",
					other.Name, metav1.FormatLabelSelector(other.Spec.Selector))))
		}
	}
	return allErrs
}

// TargetRefsConflict reports whether two targetRefs name the same workload: same API group,
// kind and name. The version is ignored, since apps/v1 and apps/v1beta1 Deployments are the
// same objects. A nil reference, or one whose apiVersion does not parse, conflicts with
// nothing.
func TargetRefsConflict(a, b *policyv1beta1.TargetReference) bool {
	if a == nil || b == nil {
		return false
	}
	gvA, errA := schema.ParseGroupVersion(a.APIVersion)
	gvB, errB := schema.ParseGroupVersion(b.APIVersion)
	if errA != nil || errB != nil {
		return false
	}
	return gvA.Group == gvB.Group && a.Kind == b.Kind && a.Name == b.Name
}

// SelectorsOverlap reports whether two label selectors loosely overlap: they constrain
// exactly the same set of label keys, and for each key some state of the label (absent, or
// one value) satisfies the requirements of both selectors on it. matchLabels count as In
// requirements with one value.
//
// This finds fewer conflicts than "some pod could match both", on purpose: it is the rule
// budgets written for OpenKruise were admitted under, so refusing more would refuse updates
// of budgets that already exist. Selectors constraining different keys (app=web and
// app=web,tier=fe) are never in conflict, although a pod labelled app=web,tier=fe matches
// both. For each key it gives, with one requirement per selector:
//
//   - In and In: when they share a value;
//   - In and NotIn: when some In value is not excluded;
//   - In and Exists: always; In and DoesNotExist: never;
//   - Exists and Exists, Exists and NotIn: always; Exists and DoesNotExist: never;
//   - NotIn and NotIn, NotIn and DoesNotExist, DoesNotExist and DoesNotExist: always (the
//     label absent).
//
// Several requirements on one key (in either selector) must all hold together; a requirement
// with an unknown operator never holds. A nil selector overlaps nothing.
func SelectorsOverlap(a, b *metav1.LabelSelector) bool {
	if a == nil || b == nil {
		return false
	}
	byKeyA, byKeyB := requirementsByKey(a), requirementsByKey(b)
	if len(byKeyA) != len(byKeyB) {
		return false
	}
	for key, reqsA := range byKeyA {
		reqsB, ok := byKeyB[key]
		if !ok {
			return false
		}
		if !satisfiable(append(slices.Clip(reqsA), reqsB...)) {
			return false
		}
	}
	return true
}

// requirementsByKey groups a selector's requirements by label key, matchLabels included.
func requirementsByKey(selector *metav1.LabelSelector) map[string][]metav1.LabelSelectorRequirement {
	byKey := make(map[string][]metav1.LabelSelectorRequirement, len(selector.MatchLabels)+len(selector.MatchExpressions))
	for key, value := range selector.MatchLabels {
		byKey[key] = append(byKey[key], metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpIn, Values: []string{value}})
	}
	for _, req := range selector.MatchExpressions {
		byKey[req.Key] = append(byKey[req.Key], req)
	}
	return byKey
}

// satisfiable reports whether one label can satisfy every requirement of reqs, all on the
// same key, either by being absent or by having some value.
func satisfiable(reqs []metav1.LabelSelectorRequirement) bool {
	absentOK, presentOK := true, true
	// candidates are the values all In requirements allow; nil until the first In.
	var candidates []string
	var excluded []string
	for _, req := range reqs {
		switch req.Operator {
		case metav1.LabelSelectorOpIn:
			absentOK = false
			if candidates == nil {
				candidates = slices.Clone(req.Values)
				if candidates == nil {
					candidates = []string{}
				}
			} else {
				candidates = slices.DeleteFunc(candidates, func(v string) bool { return !slices.Contains(req.Values, v) })
			}
		case metav1.LabelSelectorOpNotIn:
			excluded = append(excluded, req.Values...)
		case metav1.LabelSelectorOpExists:
			absentOK = false
		case metav1.LabelSelectorOpDoesNotExist:
			presentOK = false
		default:
			return false
		}
	}
	if absentOK {
		return true
	}
	if !presentOK {
		return false
	}
	if candidates == nil {
		// Only Exists and NotIn: label values are unbounded, so some value is not excluded.
		return true
	}
	return slices.ContainsFunc(candidates, func(v string) bool { return !slices.Contains(excluded, v) })
}
