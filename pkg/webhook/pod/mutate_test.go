package pod

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"testing"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/webhook"
)

// patched returns the pod the API server would store for req answered with resp: the
// response's JSON patch applied to the object as sent.
func patched(t *testing.T, req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse) *corev1.Pod {
	t.Helper()
	if !resp.Allowed {
		t.Fatalf("denied: %+v", resp.Result)
	}
	raw := req.Object.Raw
	if len(resp.Patch) > 0 {
		patch, err := jsonpatch.DecodePatch(resp.Patch)
		if err != nil {
			t.Fatalf("decoding patch %s: %v", resp.Patch, err)
		}
		if raw, err = patch.Apply(raw); err != nil {
			t.Fatalf("applying patch %s: %v", resp.Patch, err)
		}
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(raw, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// annotating is a mutation that sets annotation key=value, as a mutation must: the whole
// map when the pod has none.
func annotating(key, value string, calls *[]string) Mutation {
	return Mutation{Name: "annotate " + key, Mutate: func(_ context.Context, _ *admissionv1.AdmissionRequest, pod *corev1.Pod) ([]webhook.Addition, error) {
		*calls = append(*calls, key)
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{key: value}
			return []webhook.Addition{{Path: "/metadata/annotations", Value: map[string]string{key: value}}}, nil
		}
		pod.Annotations[key] = value
		return []webhook.Addition{{Path: webhook.AnnotationPointer(key), Value: value}}, nil
	}}
}

func failing(calls *[]string) Mutation {
	return Mutation{Name: "failing", Mutate: func(context.Context, *admissionv1.AdmissionRequest, *corev1.Pod) ([]webhook.Addition, error) {
		*calls = append(*calls, "failing")
		return nil, errors.New("broken")
	}}
}

// The webhook is registered by the first controller that adds mutations, once, and runs
// every mutation added, in order, each on the pod as the one before left it.
func TestMutatingWebhookRegistersOnceAndRunsEveryMutation(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	var calls []string
	w := NewMutatingWebhook()
	regs := w.Add(annotating("a", "1", &calls))
	if len(regs) != 1 {
		t.Fatalf("first Add returned %d registrations, want 1", len(regs))
	}
	reg := regs[0]
	if err := reg.Validate(); err != nil {
		t.Error(err)
	}
	if reg.Name != MutatingName || reg.Path != MutatingPath || reg.Type != webhook.Mutating ||
		!slices.Equal(reg.Rules[0].Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}) ||
		reg.Rules[0].Resources[0] != "pods" || ptr.Deref(reg.FailurePolicy, "") != admissionregistrationv1.Ignore {
		t.Errorf("registration %+v, want %s at %s on pod CREATE, failing open", reg, MutatingName, MutatingPath)
	}
	if more := w.Add(annotating("b", "2", &calls), annotating("c", "3", &calls)); len(more) != 0 {
		t.Errorf("second Add returned %d registrations, want none", len(more))
	}

	req := createRequest(t, newPod("p", nil, nil, nil))
	pod := patched(t, req, reg.Handler.Handle(ctx, req))
	if !slices.Equal(calls, []string{"a", "b", "c"}) {
		t.Errorf("mutations ran %v, want [a b c]", calls)
	}
	if want := map[string]string{"a": "1", "b": "2", "c": "3"}; !maps.Equal(pod.Annotations, want) {
		t.Errorf("stored annotations %v, want %v", pod.Annotations, want)
	}
}

// A mutation's error refuses the pod, and the mutations after it do not run.
func TestMutatingWebhookRefusesOnMutationError(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	var calls []string
	w := NewMutatingWebhook()
	w.Add(annotating("a", "1", &calls), failing(&calls), annotating("b", "2", &calls))
	resp := w.Handle(ctx, createRequest(t, newPod("p", nil, nil, nil)))
	if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusInternalServerError {
		t.Errorf("answer %+v, want a refusal with 500", resp)
	}
	if !slices.Equal(calls, []string{"a", "failing"}) {
		t.Errorf("mutations ran %v, want [a failing]", calls)
	}
}

// Only pod creations are mutated; what the webhook cannot decode passes unchanged.
func TestMutatingWebhookMutatesOnlyPodCreations(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	var calls []string
	w := NewMutatingWebhook()
	w.Add(annotating("a", "1", &calls))

	update := createRequest(t, newPod("p", nil, nil, nil))
	update.Operation = admissionv1.Update
	sub := createRequest(t, newPod("p", nil, nil, nil))
	sub.SubResource = "binding"
	undecodable := createRequest(t, newPod("p", nil, nil, nil))
	undecodable.Object.Raw = []byte(`{"metadata": []}`)
	for _, req := range []*admissionv1.AdmissionRequest{update, sub, undecodable} {
		expectAllowed(t, w.Handle(ctx, req))
	}
	if len(calls) != 0 {
		t.Errorf("mutations ran on %v", calls)
	}
}

// With the readiness gate and the budget's tagging in one webhook, a new pod of a CloneSet
// covered by a budget gets both, in one patch.
func TestMutateGateAndTagTogether(t *testing.T) {
	web := map[string]string{"app": "web"}
	f := newFixture(t, fixtureOptions{shareMutating: []Mutation{KruisePodReadyGate(nil)}},
		selectorBudget("sel", &metav1.LabelSelector{MatchLabels: web}))
	req := createRequest(t, newPod("p", web, nil, &metav1.OwnerReference{
		APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "uid-web", Controller: ptr.To(true)}))
	pod := patched(t, req, f.mutate(req))
	if !slices.Equal(pod.Spec.ReadinessGates, []corev1.PodReadinessGate{{ConditionType: appsv1beta1.KruisePodReadyConditionType}}) {
		t.Errorf("readiness gates %v, want [KruisePodReady]", pod.Spec.ReadinessGates)
	}
	if pod.Annotations[policyv1beta1.PodRelatedPubAnnotation] != "sel" || pod.Annotations[policyv1beta1.PodRelatedPubAnnotationNew] != "sel" {
		t.Errorf("annotations %v, want the pod tagged with sel", pod.Annotations)
	}
}
