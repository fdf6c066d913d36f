package pod

import (
	"context"
	"fmt"
	"slices"
	"strings"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/pubutil"
	"github.com/bosun-dev/bosun/pkg/controller/workload"
	"github.com/bosun-dev/bosun/pkg/webhook"
)

// budgetTagging is the mutation that tags a new pod with the budget that covers it.
func (h *handler) budgetTagging() Mutation {
	return Mutation{Name: "PodUnavailableBudget tagging", Mutate: h.tagWithBudget}
}

// tagWithBudget tags a new pod with the budget that covers it. It never refuses a pod: a
// pod whose budget it cannot look up is let through untagged, for the controller to tag
// once it sees it.
func (h *handler) tagWithBudget(ctx context.Context, _ *admissionv1.AdmissionRequest, pod *corev1.Pod) ([]webhook.Addition, error) {
	if pubutil.RelatedBudget(pod) != "" {
		return nil, nil
	}
	logger := klog.FromContext(ctx)
	pub, err := h.coveringBudget(ctx, pod)
	if err != nil {
		logger.Error(err, "Cannot find the PodUnavailableBudget of a new pod; admitting it untagged")
		return nil, nil
	}
	if pub == nil {
		return nil, nil
	}
	additions := relatedBudgetAdditions(pod, pub.Name)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	for key, value := range pubutil.RelatedBudgetAnnotations(pub.Name) {
		pod.Annotations[key] = value
	}
	logger.V(4).Info("Tagging a new pod with its PodUnavailableBudget", "podUnavailableBudget", klog.KObj(pub))
	return additions, nil
}

// coveringBudget returns the first budget of the pod's namespace, by name, that covers it:
// one whose targetRef is a workload of the pod's controller chain, or whose selector
// matches its labels. It returns nil when none does.
func (h *handler) coveringBudget(ctx context.Context, pod *corev1.Pod) (*policyv1beta1.PodUnavailableBudget, error) {
	pubs, err := h.Budgets.PodUnavailableBudgets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing the PodUnavailableBudgets of namespace %s: %w", pod.Namespace, err)
	}
	// The informer's order is a map's; sorting makes the first match the same on every
	// replica and every call.
	slices.SortFunc(pubs, func(a, b *policyv1beta1.PodUnavailableBudget) int { return strings.Compare(a.Name, b.Name) })

	controllerRef := metav1.GetControllerOfNoCopy(pod)
	var chain []*workload.Workload
	chainRead := false
	for _, pub := range pubs {
		if ref := pub.Spec.TargetReference; ref != nil {
			if controllerRef == nil {
				continue
			}
			if !chainRead {
				if chain, err = h.Finder.Chain(ctx, pod.Namespace, controllerRef); err != nil {
					return nil, fmt.Errorf("reading the controllers of pod %s: %w", klog.KObj(pod), err)
				}
				chainRead = true
			}
			if targets(ref, chain) {
				return pub, nil
			}
			continue
		}
		if pub.Spec.Selector == nil {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(pub.Spec.Selector)
		if err != nil {
			// The budget webhook refuses such selectors; one stored before it ran covers nothing.
			klog.FromContext(ctx).V(4).Info("Skipping a PodUnavailableBudget with an invalid selector", "podUnavailableBudget", klog.KObj(pub), "err", err)
			continue
		}
		if !selector.Empty() && selector.Matches(labels.Set(pod.Labels)) {
			return pub, nil
		}
	}
	return nil, nil
}

// targets reports whether ref names a workload of chain, by API group (any version), kind
// and name.
func targets(ref *policyv1beta1.TargetReference, chain []*workload.Workload) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return false
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	for _, w := range chain {
		if w.GroupKind() == gk && w.Name == ref.Name {
			return true
		}
	}
	return false
}

// relatedBudgetAdditions returns the patch setting both related-pub annotations: the whole
// annotations map when the pod has none ("add" needs the parent member to exist), else one
// member each, so no other annotation is rewritten.
func relatedBudgetAdditions(pod *corev1.Pod, pubName string) []webhook.Addition {
	annotations := pubutil.RelatedBudgetAnnotations(pubName)
	if pod.Annotations == nil {
		return []webhook.Addition{{Path: "/metadata/annotations", Value: annotations}}
	}
	keys := make([]string, 0, len(annotations))
	for key := range annotations {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	additions := make([]webhook.Addition, 0, len(keys))
	for _, key := range keys {
		additions = append(additions, webhook.Addition{Path: "/metadata/annotations/" + escapeJSONPointer(key), Value: annotations[key]})
	}
	return additions
}

// escapeJSONPointer escapes a member name for use in a JSON pointer: "~" as "~0", "/" as
// "~1".
func escapeJSONPointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
