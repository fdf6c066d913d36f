package daemonsetutil

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

func node(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

func TestNodeEligibility(t *testing.T) {
	noSchedule := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	noExecute := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoExecute}
	preferNo := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectPreferNoSchedule}
	tolerateGPU := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu"}
	affinity := func(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
	zoneIn := func(zones ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: zones}}}
	}
	notReady := node("n", nil, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute})
	cordoned := node("n", nil, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
	cordoned.Spec.Unschedulable = true
	networkDown := node("n", nil, corev1.Taint{Key: corev1.TaintNodeNetworkUnavailable, Effect: corev1.TaintEffectNoSchedule})

	tests := []struct {
		name string
		spec corev1.PodSpec
		node *corev1.Node
		want Eligibility
	}{
		{"plain node", corev1.PodSpec{}, node("n", nil), Eligibility{true, true}},
		{"untolerated NoSchedule", corev1.PodSpec{}, node("n", nil, noSchedule), Eligibility{false, true}},
		{"untolerated NoExecute", corev1.PodSpec{}, node("n", nil, noExecute), Eligibility{false, false}},
		{"PreferNoSchedule ignored", corev1.PodSpec{}, node("n", nil, preferNo), Eligibility{true, true}},
		{"tolerated taints", corev1.PodSpec{Tolerations: []corev1.Toleration{tolerateGPU}}, node("n", nil, noSchedule, noExecute), Eligibility{true, true}},
		{"NotReady node still eligible", corev1.PodSpec{}, notReady, Eligibility{true, true}},
		{"cordoned node still eligible", corev1.PodSpec{}, cordoned, Eligibility{true, true}},
		{"network unavailable without host network", corev1.PodSpec{}, networkDown, Eligibility{false, true}},
		{"network unavailable with host network", corev1.PodSpec{HostNetwork: true}, networkDown, Eligibility{true, true}},
		{"nodeName elsewhere", corev1.PodSpec{NodeName: "other"}, node("n", nil), Eligibility{}},
		{"nodeName here", corev1.PodSpec{NodeName: "n"}, node("n", nil), Eligibility{true, true}},
		{"nodeSelector matches", corev1.PodSpec{NodeSelector: map[string]string{"role": "edge"}}, node("n", map[string]string{"role": "edge"}), Eligibility{true, true}},
		{"nodeSelector misses", corev1.PodSpec{NodeSelector: map[string]string{"role": "edge"}}, node("n", map[string]string{"role": "core"}), Eligibility{}},
		{"affinity matches one term", corev1.PodSpec{Affinity: affinity(zoneIn("a"), zoneIn("b"))}, node("n", map[string]string{"zone": "b"}), Eligibility{true, true}},
		{"affinity misses", corev1.PodSpec{Affinity: affinity(zoneIn("a"))}, node("n", map[string]string{"zone": "b"}), Eligibility{}},
		{"affinity by node name", corev1.PodSpec{Affinity: affinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n"}}}})}, node("n", nil), Eligibility{true, true}},
		{"unparsable term ignored", corev1.PodSpec{Affinity: affinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: "Bogus"}}}, zoneIn("b"))}, node("n", map[string]string{"zone": "b"}), Eligibility{true, true}},
		{"Gt operator", corev1.PodSpec{Affinity: affinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "cores", Operator: corev1.NodeSelectorOpGt, Values: []string{"4"}}}})}, node("n", map[string]string{"cores": "8"}), Eligibility{true, true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := SimulatedPod(&corev1.PodTemplateSpec{Spec: tc.spec})
			if got := NodeEligibility(pod, tc.node); got != tc.want {
				t.Errorf("NodeEligibility = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestAddDefaultTolerationsKeepsUserOnes(t *testing.T) {
	spec := corev1.PodSpec{HostNetwork: true, Tolerations: []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}}
	AddDefaultTolerations(&spec)
	if len(spec.Tolerations) != 7 {
		t.Errorf("got %d tolerations, want 7 (6 defaults + network-unavailable, no duplicate): %v", len(spec.Tolerations), spec.Tolerations)
	}
}

func TestBindToNodeAndTargetNodeName(t *testing.T) {
	spec := corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution:  &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpExists}}}}},
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1}},
	}}}
	BindToNode(&spec, "node-1")
	terms := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchExpressions) != 0 || terms[0].MatchFields[0].Values[0] != "node-1" {
		t.Errorf("required terms = %+v", terms)
	}
	if len(spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Error("preferred terms were dropped")
	}
	if name, ok := TargetNodeName(&corev1.Pod{Spec: spec}); !ok || name != "node-1" {
		t.Errorf("TargetNodeName = %q, %v", name, ok)
	}
	if name, ok := TargetNodeName(&corev1.Pod{Spec: corev1.PodSpec{NodeName: "bound"}}); !ok || name != "bound" {
		t.Errorf("TargetNodeName of a bound pod = %q, %v", name, ok)
	}
	if _, ok := TargetNodeName(&corev1.Pod{}); ok {
		t.Error("a pod without node or affinity maps to a node")
	}
}

func TestStrategyArithmetic(t *testing.T) {
	ds := &appsv1beta1.DaemonSet{Spec: appsv1beta1.DaemonSetSpec{UpdateStrategy: appsv1beta1.DaemonSetUpdateStrategy{
		Type: appsv1beta1.RollingUpdateDaemonSetStrategyType,
		RollingUpdate: &appsv1beta1.RollingUpdateDaemonSet{
			MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromInt32(0)),
			Partition: ptr.To(intstr.FromString("50%")),
		},
	}, BurstReplicas: ptr.To(intstr.FromString("10%"))}}
	surge, unavailable, err := SurgeAndUnavailable(ds, 5)
	if err != nil || surge != 0 || unavailable != 2 {
		t.Errorf("SurgeAndUnavailable(5) = %d, %d, %v; want 0, 2 (rounded up)", surge, unavailable, err)
	}
	if p, _ := Partition(ds, 5); p != 2 {
		t.Errorf("Partition(5) = %d, want 2 (rounded down)", p)
	}
	if b := BurstReplicas(ds, 25, 250); b != 2 {
		t.Errorf("BurstReplicas(25) = %d, want 2", b)
	}
	if b := BurstReplicas(ds, 5, 250); b != 1 {
		t.Errorf("BurstReplicas(5) = %d, want at least 1", b)
	}
	ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
	if _, unavailable, _ := SurgeAndUnavailable(ds, 5); unavailable != 1 {
		t.Errorf("both zero: maxUnavailable = %d, want 1", unavailable)
	}
	if SurgeEnabled(ds) {
		t.Error("surge enabled with maxSurge 0")
	}
	ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromString("10%"))
	if !SurgeEnabled(ds) {
		t.Error("surge disabled with maxSurge 10%")
	}
}

func TestPartitionedScaling(t *testing.T) {
	const carrier = appsv1beta1.ProgressiveCreatePodAnnotation
	on, off := &appsv1beta1.DaemonSetScaleStrategy{PartitionedScaling: true}, &appsv1beta1.DaemonSetScaleStrategy{}
	tests := []struct {
		name        string
		scale       *appsv1beta1.DaemonSetScaleStrategy
		annotations map[string]string
		want        bool
	}{
		{"neither", nil, nil, false},
		{"field true", on, nil, true},
		{"field false", off, nil, false},
		{"carrier only, true", nil, map[string]string{carrier: "true"}, true},
		{"carrier only, false", nil, map[string]string{carrier: "false"}, false},
		{"carrier only, empty", nil, map[string]string{carrier: ""}, false},
		{"field false wins over carrier true", off, map[string]string{carrier: "true"}, false},
		{"field true wins over carrier false", on, map[string]string{carrier: "false"}, true},
		{"both true", on, map[string]string{carrier: "true"}, true},
		{"invalid carrier, not exactly true", nil, map[string]string{carrier: "True"}, false},
		{"invalid carrier, not a boolean", nil, map[string]string{carrier: "yes please"}, false},
		{"invalid carrier under field true", on, map[string]string{carrier: "yes please"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ds := &appsv1beta1.DaemonSet{}
			ds.Annotations = tc.annotations
			ds.Spec.ScaleStrategy = tc.scale
			if got := PartitionedScaling(ds); got != tc.want {
				t.Errorf("PartitionedScaling = %v, want %v", got, tc.want)
			}
		})
	}
}
