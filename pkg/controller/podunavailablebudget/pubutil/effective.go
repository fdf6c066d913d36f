package pubutil

import (
	"fmt"
	"strconv"
	"strings"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The settings below are read in the hub version, v1beta1, where two of them are fields
// that v1alpha1 keeps in annotations. A budget written in v1alpha1 through a conversion
// that copies nothing between the two (OpenKruise's), or by any writer that kept only the
// annotation, must protect what it protected in v1alpha1: the field decides when it is
// set, the annotation otherwise. Every reader (the controller, the pod webhook) takes
// these values from here, so they never disagree on what a budget says.

// OperationSet is a set of operations a budget protects.
type OperationSet map[policyv1beta1.PubOperation]bool

// Has reports whether op is in the set.
func (s OperationSet) Has(op policyv1beta1.PubOperation) bool {
	return s[op]
}

// DefaultProtectedOperations is what a budget protects when it names no operation: DELETE,
// UPDATE and EVICT, with UPDATE implying RESIZE.
func DefaultProtectedOperations() OperationSet {
	return OperationSet{
		policyv1beta1.PubDeleteOperation: true,
		policyv1beta1.PubUpdateOperation: true,
		policyv1beta1.PubEvictOperation:  true,
		policyv1beta1.PubResizeOperation: true,
	}
}

// ProtectedOperations returns the operations a budget protects: those spec.protectOperations
// lists when it lists any, else those of the kruise.io/pub-protect-operations annotation,
// split on commas. Entries are trimmed, and empty or unknown ones ignored: the budget
// webhook refuses them, so only a budget stored around it can carry one, and it still
// protects the operations it names. With none left, the default set: protecting too much
// is safer than protecting nothing.
//
// UPDATE implies RESIZE: bosun has no separate switch for in-place resize, and a resize
// restarts nothing only if the runtime supports it, so a budget protecting updates
// protects resizes too.
func ProtectedOperations(pub *policyv1beta1.PodUnavailableBudget) OperationSet {
	words := make([]string, 0, len(pub.Spec.ProtectOperations))
	for _, op := range pub.Spec.ProtectOperations {
		words = append(words, string(op))
	}
	if len(words) == 0 {
		if value := pub.Annotations[policyv1beta1.PubProtectOperationAnnotation]; value != "" {
			words = strings.Split(value, ",")
		}
	}
	ops := OperationSet{}
	for _, word := range words {
		switch op := policyv1beta1.PubOperation(strings.TrimSpace(word)); op {
		case policyv1beta1.PubDeleteOperation, policyv1beta1.PubEvictOperation, policyv1beta1.PubResizeOperation:
			ops[op] = true
		case policyv1beta1.PubUpdateOperation:
			ops[op] = true
			ops[policyv1beta1.PubResizeOperation] = true
		}
	}
	if len(ops) == 0 {
		return DefaultProtectedOperations()
	}
	return ops
}

// ProtectTotalReplicas returns the expected pod count a budget sets in place of the one
// computed from its pods' owners: spec.protectTotalReplicas when set, else the
// pub.kruise.io/protect-total-replicas annotation. ok is false when neither sets one, and
// when the count is below 1, which means "no override" (v1alpha1 accepts such values; the
// field's schema does not). err is set when the field is unset and the annotation does not
// parse: the budget webhook refuses such a value, so only a budget stored around it carries
// one, and its expected count is then unknown, which the controller reports rather than
// guess.
func ProtectTotalReplicas(pub *policyv1beta1.PodUnavailableBudget) (n int32, ok bool, err error) {
	if total := pub.Spec.ProtectTotalReplicas; total != nil {
		if *total < 1 {
			return 0, false, nil
		}
		return *total, true, nil
	}
	value, present := pub.Annotations[policyv1beta1.PubProtectTotalReplicasAnnotation]
	if !present {
		return 0, false, nil
	}
	parsed, err := ParseTotalReplicas(value)
	if err != nil {
		return 0, false, fmt.Errorf("annotation %s=%q: %w", policyv1beta1.PubProtectTotalReplicasAnnotation, value, err)
	}
	if parsed < 1 {
		return 0, false, nil
	}
	return parsed, true, nil
}

// ParseTotalReplicas parses the value of the pub.kruise.io/protect-total-replicas
// annotation: a decimal int32, with no spaces or sign other than a leading minus.
func ParseTotalReplicas(value string) (int32, error) {
	parsed, err := strconv.ParseInt(value, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("not a decimal int32: %w", err)
	}
	return int32(parsed), nil
}

// Exempt reports whether a budget lets pod be disrupted without checking or spending it:
// the pod is annotated pub.kruise.io/no-protect: "true", or it matches the budget's
// spec.ignoredPodSelector, which supersedes the annotation in v1beta1. Only the pod
// webhook's decision is affected: the controller counts an exempt pod like any other, since
// it is as available as its siblings until it goes, and its going costs the budget nothing
// because its disruption is never recorded. A selector that does not parse, or is empty,
// exempts nothing (the budget webhook refuses both): a budget that cannot tell which pods
// it ignores protects them all.
func Exempt(pub *policyv1beta1.PodUnavailableBudget, pod *corev1.Pod) bool {
	if NoProtect(pod) {
		return true
	}
	if pub.Spec.IgnoredPodSelector == nil {
		return false
	}
	selector, err := metav1.LabelSelectorAsSelector(pub.Spec.IgnoredPodSelector)
	if err != nil || selector.Empty() {
		return false
	}
	return selector.Matches(labels.Set(pod.Labels))
}
