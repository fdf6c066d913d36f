package daemonsetutil

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
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

func TestRevisionDataGolden(t *testing.T) {
	template := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"b": "2", "a": "1"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:v1"}}},
	}
	// Written by hand: OpenKruise's bytes for this template.
	const golden = `{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"a":"1","b":"2"}},"spec":{"containers":[{"image":"img:v1","name":"c","resources":{}}]}}}}`
	data, err := RevisionData(template)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != golden {
		t.Errorf("RevisionData =\n%s\nwant\n%s", data, golden)
	}
	// Newer OpenKruise builds leave the null timestamp out; both must be recognised.
	const withoutTimestamp = `{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"a":"1","b":"2"}},"spec":{"containers":[{"image":"img:v1","name":"c","resources":{}}]}}}}`
	for _, data := range []string{golden, withoutTimestamp} {
		if ok, err := MatchesRevisionData([]byte(data), template); err != nil || !ok {
			t.Errorf("MatchesRevisionData(%s) = %v, %v", data, ok, err)
		}
	}
	if ok, _ := MatchesRevisionData([]byte(`{"spec":{}}`), template); ok {
		t.Error("other data matched")
	}
	back, err := TemplateFromRevisionData(data)
	if err != nil || back.Spec.Containers[0].Image != "img:v1" {
		t.Errorf("TemplateFromRevisionData = %+v, %v", back, err)
	}
}

func templateData(t *testing.T, mutate func(*corev1.PodTemplateSpec)) []byte {
	t.Helper()
	template := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x", "old": "1"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "main", Image: "main:v1"}, {Name: "side", Image: "side:v1"},
		}},
	}
	mutate(template)
	data, err := RevisionData(template)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestPlanInPlaceUpdate(t *testing.T) {
	old := templateData(t, func(*corev1.PodTemplateSpec) {})
	tests := []struct {
		name   string
		mutate func(*corev1.PodTemplateSpec)
		images map[string]string
	}{
		{"image only", func(p *corev1.PodTemplateSpec) { p.Spec.Containers[1].Image = "side:v2" }, map[string]string{"side": "side:v2"}},
		{"image and labels", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].Image = "main:v2"
			p.Labels = map[string]string{"app": "x", "new": "2"}
			p.Annotations = map[string]string{"note": "x"}
		}, map[string]string{"main": "main:v2"}},
		{"env change", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].Image = "main:v2"
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
		}, nil},
		{"container added", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "third", Image: "x"})
		}, nil},
		{"container renamed", func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Name = "other" }, nil},
		{"unchanged", func(*corev1.PodTemplateSpec) {}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			update, err := PlanInPlaceUpdate(old, templateData(t, tc.mutate))
			if err != nil {
				t.Fatal(err)
			}
			if tc.images == nil {
				if update != nil {
					t.Fatalf("qualified for in-place update: %+v", update)
				}
				return
			}
			if update == nil {
				t.Fatal("did not qualify for in-place update")
			}
			if len(update.Images) != len(tc.images) {
				t.Errorf("images = %v, want %v", update.Images, tc.images)
			}
			for name, image := range tc.images {
				if update.Images[name] != image {
					t.Errorf("images = %v, want %v", update.Images, tc.images)
				}
			}
		})
	}
}

func TestApplyAndCompleteInPlaceUpdate(t *testing.T) {
	old := templateData(t, func(*corev1.PodTemplateSpec) {})
	update, err := PlanInPlaceUpdate(old, templateData(t, func(p *corev1.PodTemplateSpec) {
		p.Spec.Containers[0].Image = "main:v2"
		p.Labels = map[string]string{"app": "x", "new": "2"}
	}))
	if err != nil || update == nil {
		t.Fatalf("plan = %v, %v", update, err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x", "old": "1", appsv1alpha1.ControllerRevisionHashLabelKey: "h1"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "main:v1"}, {Name: "side", Image: "side:v1"}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "main", Image: "main:v1", ImageID: "sha-main-1"}, {Name: "side", Image: "side:v1", ImageID: "sha-side-1"},
		}},
	}
	now := metav1.NewTime(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	if !ApplyInPlaceUpdate(pod, update, "h2", now) {
		t.Fatal("ApplyInPlaceUpdate failed")
	}
	if pod.Spec.Containers[0].Image != "main:v2" || pod.Labels["new"] != "2" || pod.Labels["old"] != "" || pod.Labels[appsv1alpha1.ControllerRevisionHashLabelKey] != "h2" {
		t.Errorf("pod after update: %+v", pod.ObjectMeta.Labels)
	}
	const wantState = `{"revision":"h2","updateTimestamp":"2026-03-01T00:00:00Z","lastContainerStatuses":{"main":{"imageID":"sha-main-1"}},"updateImages":true}`
	if got := pod.Annotations[appsv1alpha1.InPlaceUpdateStateKey]; got != wantState {
		t.Errorf("state = %s, want %s", got, wantState)
	}
	state, err := ReadInPlaceUpdateState(pod)
	if err != nil || state == nil {
		t.Fatalf("ReadInPlaceUpdateState = %v, %v", state, err)
	}
	if InPlaceUpdateCompleted(pod, state) {
		t.Error("completed before the kubelet restarted the container")
	}
	pod.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "main", Image: "main:v2", ImageID: "sha-main-2"}
	if !InPlaceUpdateCompleted(pod, state) {
		t.Error("not completed after the image ID changed")
	}
	pod.Annotations[appsv1alpha1.InPlaceUpdateGraceKey] = "{}"
	if InPlaceUpdateCompleted(pod, state) {
		t.Error("completed while in grace")
	}
	delete(pod.Annotations, appsv1alpha1.InPlaceUpdateGraceKey)
	// Same image ID, but the runtime reports the spec image (untagged = latest).
	pod.Spec.Containers[0].Image = "main"
	pod.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "main", Image: "main:latest", ImageID: "sha-main-1"}
	if !InPlaceUpdateCompleted(pod, state) {
		t.Error("not completed although the reported image is the spec image")
	}
	// The legacy annotation key is read too.
	legacy := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{appsv1alpha1.InPlaceUpdateStateKeyOld: wantState}}}
	if state, err := ReadInPlaceUpdateState(legacy); err != nil || state == nil || state.Revision != "h2" {
		t.Errorf("legacy state = %+v, %v", state, err)
	}
}

func TestStrategyArithmetic(t *testing.T) {
	ds := &appsv1alpha1.DaemonSet{Spec: appsv1alpha1.DaemonSetSpec{UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{
		Type: appsv1alpha1.RollingUpdateDaemonSetStrategyType,
		RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{
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

func TestNotReadyMarks(t *testing.T) {
	message, added := AddNotReadyMark("", PreDeleteMark)
	if !added || message != `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]` {
		t.Errorf("AddNotReadyMark = %s, %v", message, added)
	}
	if again, added := AddNotReadyMark(message, PreDeleteMark); added || again != message {
		t.Errorf("mark added twice: %s", again)
	}
}
