package pubutil

import (
	"testing"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func assertOperations(t *testing.T, got OperationSet, want []policyv1beta1.PubOperation) {
	t.Helper()
	wantSet := map[policyv1beta1.PubOperation]bool{}
	for _, op := range want {
		wantSet[op] = true
	}
	for _, op := range []policyv1beta1.PubOperation{"DELETE", "UPDATE", "EVICT", "RESIZE", "OTHER"} {
		if got.Has(op) != wantSet[op] {
			t.Errorf("Has(%s) = %v, want %v", op, got.Has(op), wantSet[op])
		}
	}
}

func pubWithAnnotations(kv ...string) *policyv1beta1.PodUnavailableBudget {
	pub := &policyv1beta1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Name: "pub", Annotations: map[string]string{}}}
	for i := 0; i+1 < len(kv); i += 2 {
		pub.Annotations[kv[i]] = kv[i+1]
	}
	return pub
}

func withOperations(pub *policyv1beta1.PodUnavailableBudget, ops ...policyv1beta1.PubOperation) *policyv1beta1.PodUnavailableBudget {
	pub.Spec.ProtectOperations = ops
	return pub
}

func withTotal(pub *policyv1beta1.PodUnavailableBudget, total int32) *policyv1beta1.PodUnavailableBudget {
	pub.Spec.ProtectTotalReplicas = ptr.To(total)
	return pub
}

var allOperations = []policyv1beta1.PubOperation{
	policyv1beta1.PubDeleteOperation, policyv1beta1.PubUpdateOperation,
	policyv1beta1.PubEvictOperation, policyv1beta1.PubResizeOperation,
}

// The annotation alone, as a budget written in v1alpha1 carries it: entries are trimmed,
// empty and unknown ones ignored, and a list with nothing left protects the default set.
func TestProtectedOperationsFromAnnotation(t *testing.T) {
	tests := []struct {
		value string
		want  []policyv1beta1.PubOperation
	}{
		{value: "", want: allOperations},
		{value: "   ", want: allOperations},
		{value: "DELETE", want: []policyv1beta1.PubOperation{"DELETE"}},
		{value: "EVICT", want: []policyv1beta1.PubOperation{"EVICT"}},
		{value: "UPDATE", want: []policyv1beta1.PubOperation{"UPDATE", "RESIZE"}},
		{value: "RESIZE", want: []policyv1beta1.PubOperation{"RESIZE"}},
		{value: "DELETE,EVICT", want: []policyv1beta1.PubOperation{"DELETE", "EVICT"}},
		{value: " DELETE , EVICT ", want: []policyv1beta1.PubOperation{"DELETE", "EVICT"}},
		{value: "DELETE,UPDATE,EVICT,RESIZE", want: allOperations},
		{value: "DELETE,FOO", want: []policyv1beta1.PubOperation{"DELETE"}},
		{value: "EVICT,FOO", want: []policyv1beta1.PubOperation{"EVICT"}},
		{value: "DELETE,", want: []policyv1beta1.PubOperation{"DELETE"}},
		{value: ",,EVICT,,", want: []policyv1beta1.PubOperation{"EVICT"}},
		{value: "delete", want: allOperations},
		{value: "DELETE;EVICT", want: allOperations},
		{value: " , ", want: allOperations},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			assertOperations(t, ProtectedOperations(pubWithAnnotations(policyv1beta1.PubProtectOperationAnnotation, tt.value)), tt.want)
		})
	}
}

func TestProtectedOperations(t *testing.T) {
	tests := []struct {
		name string
		pub  *policyv1beta1.PodUnavailableBudget
		want []policyv1beta1.PubOperation
	}{
		{"neither", pubWithAnnotations(), allOperations},
		{"field", withOperations(pubWithAnnotations(), "EVICT"), []policyv1beta1.PubOperation{"EVICT"}},
		{"field with UPDATE", withOperations(pubWithAnnotations(), "UPDATE", "DELETE"), []policyv1beta1.PubOperation{"UPDATE", "RESIZE", "DELETE"}},
		{"annotation only", pubWithAnnotations(policyv1beta1.PubProtectOperationAnnotation, "EVICT"), []policyv1beta1.PubOperation{"EVICT"}},
		{"both agreeing", withOperations(pubWithAnnotations(policyv1beta1.PubProtectOperationAnnotation, "DELETE,EVICT"), "DELETE", "EVICT"),
			[]policyv1beta1.PubOperation{"DELETE", "EVICT"}},
		{"both disagreeing: the field decides", withOperations(pubWithAnnotations(policyv1beta1.PubProtectOperationAnnotation, "DELETE"), "EVICT"),
			[]policyv1beta1.PubOperation{"EVICT"}},
		{"invalid annotation, field set", withOperations(pubWithAnnotations(policyv1beta1.PubProtectOperationAnnotation, "FOO"), "DELETE"),
			[]policyv1beta1.PubOperation{"DELETE"}},
		{"empty field falls back to the annotation", withOperations(pubWithAnnotations(policyv1beta1.PubProtectOperationAnnotation, "RESIZE")),
			[]policyv1beta1.PubOperation{"RESIZE"}},
		{"field of unknown entries only", withOperations(pubWithAnnotations(policyv1beta1.PubProtectOperationAnnotation, "EVICT"), "FOO"), allOperations},
		{"field entries trimmed", withOperations(pubWithAnnotations(), " DELETE "), []policyv1beta1.PubOperation{"DELETE"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertOperations(t, ProtectedOperations(tt.pub), tt.want)
		})
	}
}

func TestProtectTotalReplicas(t *testing.T) {
	tests := []struct {
		name    string
		pub     *policyv1beta1.PodUnavailableBudget
		n       int32
		ok      bool
		wantErr bool
	}{
		{name: "neither", pub: pubWithAnnotations()},
		{name: "field", pub: withTotal(pubWithAnnotations(), 5), n: 5, ok: true},
		{name: "annotation three", pub: pubWithAnnotations(policyv1beta1.PubProtectTotalReplicasAnnotation, "3"), n: 3, ok: true},
		{name: "both agreeing", pub: withTotal(pubWithAnnotations(policyv1beta1.PubProtectTotalReplicasAnnotation, "3"), 3), n: 3, ok: true},
		{name: "both disagreeing: the field decides", pub: withTotal(pubWithAnnotations(policyv1beta1.PubProtectTotalReplicasAnnotation, "3"), 5), n: 5, ok: true},
		{name: "invalid annotation, field set", pub: withTotal(pubWithAnnotations(policyv1beta1.PubProtectTotalReplicasAnnotation, "abc"), 5), n: 5, ok: true},
		{name: "field zero is no override", pub: withTotal(pubWithAnnotations(policyv1beta1.PubProtectTotalReplicasAnnotation, "3"), 0)},
		{name: "annotation zero is no override", pub: pubWithAnnotations(policyv1beta1.PubProtectTotalReplicasAnnotation, "0")},
		{name: "annotation negative is no override", pub: pubWithAnnotations(policyv1beta1.PubProtectTotalReplicasAnnotation, "-2")},
		{name: "annotation not a number", pub: pubWithAnnotations(policyv1beta1.PubProtectTotalReplicasAnnotation, "abc"), wantErr: true},
		{name: "annotation too large", pub: pubWithAnnotations(policyv1beta1.PubProtectTotalReplicasAnnotation, "2147483648"), wantErr: true},
		{name: "annotation empty", pub: pubWithAnnotations(policyv1beta1.PubProtectTotalReplicasAnnotation, ""), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, ok, err := ProtectTotalReplicas(tt.pub)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if n != tt.n || ok != tt.ok {
				t.Errorf("ProtectTotalReplicas = (%d, %v), want (%d, %v)", n, ok, tt.n, tt.ok)
			}
		})
	}
}

func TestExempt(t *testing.T) {
	pod := func(labels map[string]string, annotations ...string) *corev1.Pod {
		p := readyPod("nginx", "")
		p.Labels = labels
		return withAnnotations(p, annotations...)
	}
	ignoring := func(selector *metav1.LabelSelector) *policyv1beta1.PodUnavailableBudget {
		pub := pubWithAnnotations()
		pub.Spec.IgnoredPodSelector = selector
		return pub
	}
	forceDeletable := &metav1.LabelSelector{MatchLabels: map[string]string{"force-deletable": "true"}}
	tests := []struct {
		name string
		pub  *policyv1beta1.PodUnavailableBudget
		pod  *corev1.Pod
		want bool
	}{
		{"no selector, no annotation", pubWithAnnotations(), pod(map[string]string{"app": "web"}), false},
		{"no-protect annotation", pubWithAnnotations(), pod(nil, policyv1beta1.PodPubNoProtectionAnnotation, "true"), true},
		{"no-protect other value", pubWithAnnotations(), pod(nil, policyv1beta1.PodPubNoProtectionAnnotation, "yes"), false},
		{"matching the selector", ignoring(forceDeletable), pod(map[string]string{"app": "web", "force-deletable": "true"}), true},
		{"not matching the selector", ignoring(forceDeletable), pod(map[string]string{"app": "web", "force-deletable": "false"}), false},
		{"no labels", ignoring(forceDeletable), pod(nil), false},
		{"annotation without a matching label", ignoring(forceDeletable), pod(nil, policyv1beta1.PodPubNoProtectionAnnotation, "true"), true},
		{"expression", ignoring(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"batch", "canary"}}}}), pod(map[string]string{"tier": "canary"}), true},
		{"empty selector exempts nothing", ignoring(&metav1.LabelSelector{}), pod(map[string]string{"app": "web"}), false},
		{"invalid selector exempts nothing", ignoring(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tier", Operator: "Near"}}}), pod(map[string]string{"tier": "canary"}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Exempt(tt.pub, tt.pod); got != tt.want {
				t.Errorf("Exempt = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseTotalReplicas(t *testing.T) {
	for value, want := range map[string]int32{"3": 3, "0": 0, "-1": -1, "2147483647": 2147483647} {
		if got, err := ParseTotalReplicas(value); err != nil || got != want {
			t.Errorf("ParseTotalReplicas(%q) = %d, %v; want %d", value, got, err, want)
		}
	}
	for _, value := range []string{"", "abc", " 3", "3.0", "2147483648"} {
		if got, err := ParseTotalReplicas(value); err == nil {
			t.Errorf("ParseTotalReplicas(%q) = %d, want an error", value, got)
		}
	}
}
