package pod

import (
	"encoding/json"
	"testing"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// patchOf returns the JSON patch of an allowed answer, nil without one.
func patchOf(t *testing.T, resp *admissionv1.AdmissionResponse) []patchOp {
	t.Helper()
	if !resp.Allowed {
		t.Fatalf("mutating webhook denied: %+v", resp.Result)
	}
	if len(resp.Patch) == 0 {
		return nil
	}
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("patch type %v, want JSONPatch", resp.PatchType)
	}
	var ops []patchOp
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		t.Fatal(err)
	}
	return ops
}

// taggedWith returns the budget a patch tags the pod with, checking that it sets both
// annotations; "" when there is no patch.
func taggedWith(t *testing.T, ops []patchOp) string {
	t.Helper()
	if ops == nil {
		return ""
	}
	got := map[string]any{}
	for _, op := range ops {
		if op.Op != "add" {
			t.Fatalf("patch op %s, want add", op.Op)
		}
		switch op.Path {
		case "/metadata/annotations":
			for k, v := range op.Value.(map[string]any) {
				got[k] = v
			}
		case "/metadata/annotations/kruise.io~1related-pub":
			got[policyv1beta1.PodRelatedPubAnnotation] = op.Value
		case "/metadata/annotations/pub.kruise.io~1related-pub":
			got[policyv1beta1.PodRelatedPubAnnotationNew] = op.Value
		default:
			t.Fatalf("patch path %s", op.Path)
		}
	}
	old, newer := got[policyv1beta1.PodRelatedPubAnnotation], got[policyv1beta1.PodRelatedPubAnnotationNew]
	if len(got) != 2 || old != newer {
		t.Fatalf("patch sets %v, want both related-pub annotations to one name", got)
	}
	return old.(string)
}

func newPod(name string, labels map[string]string, annotations map[string]string, controller *metav1.OwnerReference) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
	}
	if controller != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*controller}
	}
	return pod
}

func targetRefBudget(name, apiVersion, kind, target string) *policyv1beta1.PodUnavailableBudget {
	pub := newBudget(name, 1, 1, 2)
	pub.Spec.Selector = nil
	pub.Spec.TargetReference = &policyv1beta1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: target}
	return pub
}

func selectorBudget(name string, selector *metav1.LabelSelector) *policyv1beta1.PodUnavailableBudget {
	pub := newBudget(name, 1, 1, 2)
	pub.Spec.Selector = selector
	return pub
}

// deploymentChain is Deployment web controlling ReplicaSet web-1, and ReplicaSet lone
// without controller.
func deploymentChain() []runtime.Object {
	return []runtime.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", UID: "uid-web"}},
		&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-1", UID: "uid-web-1",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-web", Controller: ptr.To(true)}}}},
		&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lone", UID: "uid-lone"}},
	}
}

func rsRef(name string) *metav1.OwnerReference {
	return &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: types.UID("uid-" + name), Controller: ptr.To(true)}
}

func TestMutateTagsNewPods(t *testing.T) {
	web := map[string]string{"app": "web"}
	tests := []struct {
		name    string
		budgets []runtime.Object
		pod     *corev1.Pod
		want    string
	}{
		{name: "selector match", budgets: []runtime.Object{selectorBudget("sel", &metav1.LabelSelector{MatchLabels: web})},
			pod: newPod("p", web, nil, nil), want: "sel"},
		{name: "selector with expressions", budgets: []runtime.Object{selectorBudget("sel", &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "api"}}}})},
			pod: newPod("p", web, nil, nil), want: "sel"},
		{name: "selector mismatch", budgets: []runtime.Object{selectorBudget("sel", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}})},
			pod: newPod("p", web, nil, nil)},
		{name: "empty selector covers nothing", budgets: []runtime.Object{selectorBudget("sel", &metav1.LabelSelector{})},
			pod: newPod("p", web, nil, nil)},
		{name: "invalid selector covers nothing", budgets: []runtime.Object{selectorBudget("sel", &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}})},
			pod: newPod("p", web, nil, nil)},
		{name: "first by name wins", budgets: []runtime.Object{
			selectorBudget("b", &metav1.LabelSelector{MatchLabels: web}), selectorBudget("a", &metav1.LabelSelector{MatchLabels: web}),
			selectorBudget("c", &metav1.LabelSelector{MatchLabels: web})},
			pod: newPod("p", web, nil, nil), want: "a"},
		{name: "targetRef to the ReplicaSet", budgets: []runtime.Object{targetRefBudget("ref", "apps/v1", "ReplicaSet", "web-1")},
			pod: newPod("p", nil, nil, rsRef("web-1")), want: "ref"},
		{name: "targetRef to the Deployment through its ReplicaSet", budgets: []runtime.Object{targetRefBudget("ref", "apps/v1", "Deployment", "web")},
			pod: newPod("p", nil, nil, rsRef("web-1")), want: "ref"},
		{name: "targetRef version is ignored", budgets: []runtime.Object{targetRefBudget("ref", "apps/v1beta1", "Deployment", "web")},
			pod: newPod("p", nil, nil, rsRef("web-1")), want: "ref"},
		{name: "targetRef other group", budgets: []runtime.Object{targetRefBudget("ref", "apps.kruise.io/v1alpha1", "Deployment", "web")},
			pod: newPod("p", nil, nil, rsRef("web-1"))},
		{name: "targetRef other name", budgets: []runtime.Object{targetRefBudget("ref", "apps/v1", "Deployment", "api")},
			pod: newPod("p", nil, nil, rsRef("web-1"))},
		{name: "targetRef, ReplicaSet without Deployment", budgets: []runtime.Object{targetRefBudget("ref", "apps/v1", "Deployment", "web")},
			pod: newPod("p", nil, nil, rsRef("lone"))},
		{name: "targetRef, pod without controller", budgets: []runtime.Object{targetRefBudget("ref", "apps/v1", "ReplicaSet", "web-1")},
			pod: newPod("p", web, nil, nil)},
		{name: "targetRef before selector by name", budgets: []runtime.Object{
			targetRefBudget("a-ref", "apps/v1", "Deployment", "web"), selectorBudget("b-sel", &metav1.LabelSelector{MatchLabels: web})},
			pod: newPod("p", web, nil, rsRef("web-1")), want: "a-ref"},
		{name: "no budgets", pod: newPod("p", web, nil, nil)},
		{name: "already tagged", budgets: []runtime.Object{selectorBudget("sel", &metav1.LabelSelector{MatchLabels: web})},
			pod: newPod("p", web, map[string]string{policyv1beta1.PodRelatedPubAnnotation: "other"}, nil)},
		{name: "budget of another namespace", budgets: []runtime.Object{func() runtime.Object {
			pub := selectorBudget("sel", &metav1.LabelSelector{MatchLabels: web})
			pub.Namespace = "elsewhere"
			return pub
		}()}, pod: newPod("p", web, nil, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fixtureOptions{cached: deploymentChain()}, tt.budgets...)
			if got := taggedWith(t, patchOf(t, f.mutate(createRequest(t, tt.pod)))); got != tt.want {
				t.Errorf("tagged with %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMutatePatchShape(t *testing.T) {
	web := map[string]string{"app": "web"}
	f := newFixture(t, fixtureOptions{}, selectorBudget("sel", &metav1.LabelSelector{MatchLabels: web}))

	// Without annotations the whole map is added.
	ops := patchOf(t, f.mutate(createRequest(t, newPod("p", web, nil, nil))))
	if len(ops) != 1 || ops[0].Path != "/metadata/annotations" {
		t.Errorf("patch %+v, want one add of /metadata/annotations", ops)
	}

	// With annotations each key is added, escaped, leaving the others alone.
	ops = patchOf(t, f.mutate(createRequest(t, newPod("p", web, map[string]string{"team": "a"}, nil))))
	want := []patchOp{
		{Op: "add", Path: "/metadata/annotations/kruise.io~1related-pub", Value: "sel"},
		{Op: "add", Path: "/metadata/annotations/pub.kruise.io~1related-pub", Value: "sel"},
	}
	if len(ops) != len(want) || ops[0] != want[0] || ops[1] != want[1] {
		t.Errorf("patch %+v, want %+v", ops, want)
	}

	// An empty annotations object exists, so keys are added to it.
	req := createRequest(t, newPod("p", web, nil, nil))
	req.Object.Raw = []byte(`{"metadata":{"name":"p","namespace":"ns","labels":{"app":"web"},"annotations":{}}}`)
	if ops := patchOf(t, f.mutate(req)); len(ops) != 2 {
		t.Errorf("patch %+v, want two member additions", ops)
	}

	// The namespace comes from the request when the object has none.
	req = createRequest(t, newPod("p", web, nil, nil))
	req.Object.Raw = []byte(`{"metadata":{"generateName":"p-","labels":{"app":"web"}}}`)
	if got := taggedWith(t, patchOf(t, f.mutate(req))); got != "sel" {
		t.Errorf("pod without namespace tagged with %q, want sel", got)
	}
}

func TestEscapeJSONPointer(t *testing.T) {
	for in, want := range map[string]string{"a/b": "a~1b", "a~b": "a~0b", "~/": "~0~1", "plain": "plain"} {
		if got := escapeJSONPointer(in); got != want {
			t.Errorf("escapeJSONPointer(%q) = %q, want %q", in, got, want)
		}
	}
}

// The mutating webhook never refuses a pod: what it cannot judge goes through untagged.
func TestMutateLetsEverythingThrough(t *testing.T) {
	web := map[string]string{"app": "web"}
	f := newFixture(t, fixtureOptions{cached: deploymentChain()},
		targetRefBudget("a-ref", "apps/v1", "Deployment", "web"), selectorBudget("b-sel", &metav1.LabelSelector{MatchLabels: web}))

	undecodable := createRequest(t, newPod("p", web, nil, nil))
	undecodable.Object.Raw = []byte(`{"metadata": []}`)
	expectAllowed(t, f.mutate(undecodable))

	// A controller reference the finder cannot read is a lookup error: no tag at all, not
	// the selector budget that comes later.
	expectAllowed(t, f.mutate(createRequest(t, newPod("p", web, nil,
		&metav1.OwnerReference{APIVersion: "a/b/c", Kind: "Thing", Name: "x", Controller: ptr.To(true)}))))

	update := createRequest(t, newPod("p", web, nil, nil))
	update.Operation = admissionv1.Update
	expectAllowed(t, f.mutate(update))

	sub := createRequest(t, newPod("p", web, nil, nil))
	sub.SubResource = "binding"
	expectAllowed(t, f.mutate(sub))
}
