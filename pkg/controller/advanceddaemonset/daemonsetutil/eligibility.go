package daemonsetutil

import (
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/klog/v2"
)

// nodeNameField is the only node field a node-selector term may match on.
const nodeNameField = "metadata.name"

// DefaultTolerations returns the tolerations every daemon pod gets, so that conditions
// which keep ordinary pods off a node (not ready, unreachable, pressure, cordoned) do not
// keep a node agent off it. A pod on the host network also tolerates an unavailable pod
// network, since it does not use it.
func DefaultTolerations(hostNetwork bool) []corev1.Toleration {
	tolerations := []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	if hostNetwork {
		tolerations = append(tolerations, corev1.Toleration{
			Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
		})
	}
	return tolerations
}

// AddDefaultTolerations adds to spec the default tolerations it does not carry yet; an
// identical toleration the user wrote is kept as is.
func AddDefaultTolerations(spec *corev1.PodSpec) {
	for _, toleration := range DefaultTolerations(spec.HostNetwork) {
		present := slices.ContainsFunc(spec.Tolerations, func(t corev1.Toleration) bool { return t.MatchToleration(&toleration) })
		if !present {
			spec.Tolerations = append(spec.Tolerations, toleration)
		}
	}
}

// SimulatedPod returns the pod a DaemonSet with template would place on a node: the
// template's spec with the default tolerations. Eligibility is judged on it.
func SimulatedPod(template *corev1.PodTemplateSpec) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: *template.ObjectMeta.DeepCopy(), Spec: *template.Spec.DeepCopy()}
	AddDefaultTolerations(&pod.Spec)
	return pod
}

// Eligibility says what a node means for a DaemonSet.
type Eligibility struct {
	// ShouldRun: the node should get a daemon pod when it has none.
	ShouldRun bool
	// ShouldContinueRunning: a daemon pod already on the node may stay.
	ShouldContinueRunning bool
}

// NodeEligibility judges node for the simulated pod (see SimulatedPod). Only the pod's
// node name, its required node affinity and node selector, and the node's taints count:
// resources, ports and node readiness are ignored, so that cordoned and NotReady nodes
// still get their node agents, as with upstream DaemonSets.
func NodeEligibility(pod *corev1.Pod, node *corev1.Node) Eligibility {
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		return Eligibility{}
	}
	if !RequiredNodeAffinityMatches(pod, node) {
		return Eligibility{}
	}
	untoleratedNoSchedule, untoleratedNoExecute := false, false
	for i := range node.Spec.Taints {
		taint := &node.Spec.Taints[i]
		if taint.Effect != corev1.TaintEffectNoSchedule && taint.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if tolerated(pod.Spec.Tolerations, taint) {
			continue
		}
		if taint.Effect == corev1.TaintEffectNoExecute {
			untoleratedNoExecute = true
		} else {
			untoleratedNoSchedule = true
		}
	}
	return Eligibility{
		ShouldRun:             !untoleratedNoSchedule && !untoleratedNoExecute,
		ShouldContinueRunning: !untoleratedNoExecute,
	}
}

func tolerated(tolerations []corev1.Toleration, taint *corev1.Taint) bool {
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(klog.Background(), taint, false) {
			return true
		}
	}
	return false
}

// RequiredNodeAffinityMatches reports whether node satisfies pod's nodeSelector and its
// required node affinity. Terms that cannot be parsed match nothing, so a broken term never
// widens where the pod runs.
func RequiredNodeAffinityMatches(pod *corev1.Pod, node *corev1.Node) bool {
	if len(pod.Spec.NodeSelector) > 0 && !labels.SelectorFromSet(pod.Spec.NodeSelector).Matches(labels.Set(node.Labels)) {
		return false
	}
	affinity := pod.Spec.Affinity
	if affinity == nil || affinity.NodeAffinity == nil || affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, term := range affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if TermMatches(term, node) {
			return true
		}
	}
	return false
}

// TermMatches reports whether node satisfies every requirement of term. An empty term, or
// one with a requirement that cannot be parsed, matches nothing.
func TermMatches(term corev1.NodeSelectorTerm, node *corev1.Node) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false
	}
	for _, expr := range term.MatchExpressions {
		requirement, err := labelRequirement(expr)
		if err != nil || !requirement.Matches(labels.Set(node.Labels)) {
			return false
		}
	}
	for _, field := range term.MatchFields {
		matches, err := nodeNameRequirementMatches(field, node.Name)
		if err != nil || !matches {
			return false
		}
	}
	return true
}

func labelRequirement(expr corev1.NodeSelectorRequirement) (*labels.Requirement, error) {
	var op selection.Operator
	switch expr.Operator {
	case corev1.NodeSelectorOpIn:
		op = selection.In
	case corev1.NodeSelectorOpNotIn:
		op = selection.NotIn
	case corev1.NodeSelectorOpExists:
		op = selection.Exists
	case corev1.NodeSelectorOpDoesNotExist:
		op = selection.DoesNotExist
	case corev1.NodeSelectorOpGt:
		op = selection.GreaterThan
	case corev1.NodeSelectorOpLt:
		op = selection.LessThan
	default:
		return nil, fmt.Errorf("unknown node selector operator %q", expr.Operator)
	}
	return labels.NewRequirement(expr.Key, op, expr.Values)
}

// nodeNameRequirementMatches evaluates a matchFields requirement, which may only test the
// node's name against exactly one value.
func nodeNameRequirementMatches(field corev1.NodeSelectorRequirement, nodeName string) (bool, error) {
	if field.Key != nodeNameField || len(field.Values) != 1 {
		return false, fmt.Errorf("unsupported node field requirement %s %s %v", field.Key, field.Operator, field.Values)
	}
	switch field.Operator {
	case corev1.NodeSelectorOpIn:
		return field.Values[0] == nodeName, nil
	case corev1.NodeSelectorOpNotIn:
		return field.Values[0] != nodeName, nil
	}
	return false, fmt.Errorf("unsupported node field operator %q", field.Operator)
}

// TargetNodeName returns the node a daemon pod belongs to: the node it is bound to, or,
// for a pod the scheduler has not bound yet, the single node its required affinity names.
func TargetNodeName(pod *corev1.Pod) (string, bool) {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName, true
	}
	affinity := pod.Spec.Affinity
	if affinity == nil || affinity.NodeAffinity == nil || affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return "", false
	}
	for _, term := range affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, field := range term.MatchFields {
			if field.Key == nodeNameField && field.Operator == corev1.NodeSelectorOpIn && len(field.Values) == 1 {
				return field.Values[0], true
			}
		}
	}
	return "", false
}

// BindToNode makes the scheduler place a pod built from spec on nodeName: the required
// node-affinity terms are replaced by one term naming the node; preferred terms and pod
// (anti-)affinity stay.
func BindToNode(spec *corev1.PodSpec, nodeName string) {
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{
				Key: nodeNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{nodeName},
			}},
		}},
	}
}

// TemplateGeneration returns the DaemonSet's deprecated template generation annotation
// as written on pods, and false when it is absent or not an integer.
func TemplateGeneration(annotations map[string]string, key string) (string, bool) {
	value, ok := annotations[key]
	if !ok {
		return "", false
	}
	if _, err := strconv.ParseInt(value, 10, 64); err != nil {
		return "", false
	}
	return value, true
}
