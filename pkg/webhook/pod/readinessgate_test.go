package pod

import (
	"slices"
	"testing"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/features"
)

func controllerRef(apiVersion, kind string) *metav1.OwnerReference {
	return &metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: "owner", UID: "uid-owner", Controller: ptr.To(true)}
}

func TestKruisePodReadyGate(t *testing.T) {
	kruiseReady := corev1.PodReadinessGate{ConditionType: appsv1beta1.KruisePodReadyConditionType}
	inPlace := corev1.PodReadinessGate{ConditionType: appsv1beta1.InPlaceUpdateReady}
	withGates := func(pod *corev1.Pod, gates ...corev1.PodReadinessGate) *corev1.Pod {
		pod.Spec.ReadinessGates = gates
		return pod
	}
	tests := []struct {
		name      string
		pod       *corev1.Pod
		raw       string // the object as sent, when not the pod's encoding
		allPods   bool   // feature KruisePodReadinessGate
		wantGates []corev1.PodReadinessGate
		wantPaths []string
	}{
		{name: "CloneSet pod, v1alpha1 reference", pod: newPod("p", nil, nil, controllerRef("apps.kruise.io/v1alpha1", "CloneSet")),
			wantGates: []corev1.PodReadinessGate{kruiseReady}, wantPaths: []string{"/spec/readinessGates"}},
		{name: "Advanced DaemonSet pod, v1beta1 reference", pod: newPod("p", nil, nil, controllerRef("apps.kruise.io/v1beta1", "DaemonSet")),
			wantGates: []corev1.PodReadinessGate{kruiseReady}, wantPaths: []string{"/spec/readinessGates"}},
		{name: "any kind of the group", pod: newPod("p", nil, nil, controllerRef("apps.kruise.io/v1beta1", "StatefulSet")),
			wantGates: []corev1.PodReadinessGate{kruiseReady}, wantPaths: []string{"/spec/readinessGates"}},
		{name: "gate appended after the pod's own", pod: withGates(newPod("p", nil, nil, controllerRef("apps.kruise.io/v1alpha1", "CloneSet")), inPlace),
			wantGates: []corev1.PodReadinessGate{inPlace, kruiseReady}, wantPaths: []string{"/spec/readinessGates/-"}},
		{name: "empty list sent", pod: newPod("p", nil, nil, controllerRef("apps.kruise.io/v1alpha1", "CloneSet")),
			raw:       `{"metadata":{"name":"p","ownerReferences":[{"apiVersion":"apps.kruise.io/v1alpha1","kind":"CloneSet","name":"owner","uid":"uid-owner","controller":true}]},"spec":{"readinessGates":[],"containers":[{"name":"app","image":"nginx"}]}}`,
			wantGates: []corev1.PodReadinessGate{kruiseReady}, wantPaths: []string{"/spec/readinessGates/-"}},
		{name: "null list sent", pod: newPod("p", nil, nil, controllerRef("apps.kruise.io/v1alpha1", "CloneSet")),
			raw:       `{"metadata":{"name":"p","ownerReferences":[{"apiVersion":"apps.kruise.io/v1alpha1","kind":"CloneSet","name":"owner","uid":"uid-owner","controller":true}]},"spec":{"readinessGates":null,"containers":[{"name":"app","image":"nginx"}]}}`,
			wantGates: []corev1.PodReadinessGate{kruiseReady}, wantPaths: []string{"/spec/readinessGates"}},
		{name: "gate already there", pod: withGates(newPod("p", nil, nil, controllerRef("apps.kruise.io/v1alpha1", "CloneSet")), kruiseReady, inPlace),
			wantGates: []corev1.PodReadinessGate{kruiseReady, inPlace}},
		{name: "ReplicaSet pod", pod: newPod("p", nil, nil, controllerRef("apps/v1", "ReplicaSet"))},
		{name: "apps.kruise.io owner that is not the controller", pod: func() *corev1.Pod {
			pod := newPod("p", nil, nil, controllerRef("apps.kruise.io/v1alpha1", "CloneSet"))
			pod.OwnerReferences[0].Controller = nil
			return pod
		}()},
		{name: "unparsable apiVersion", pod: newPod("p", nil, nil, controllerRef("apps.kruise.io/v1/x", "CloneSet"))},
		{name: "group only by prefix", pod: newPod("p", nil, nil, controllerRef("apps.kruise.io.example/v1", "CloneSet"))},
		{name: "pod without owner", pod: newPod("p", nil, nil, nil)},
		{name: "every pod with KruisePodReadinessGate", pod: newPod("p", nil, nil, controllerRef("apps/v1", "ReplicaSet")), allPods: true,
			wantGates: []corev1.PodReadinessGate{kruiseReady}, wantPaths: []string{"/spec/readinessGates"}},
		{name: "pod without owner with KruisePodReadinessGate", pod: newPod("p", nil, nil, nil), allPods: true,
			wantGates: []corev1.PodReadinessGate{kruiseReady}, wantPaths: []string{"/spec/readinessGates"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			gate := features.NewFeatureGate()
			if err := gate.SetFromMap(map[string]bool{string(features.KruisePodReadinessGate): tt.allPods}); err != nil {
				t.Fatal(err)
			}
			w := NewMutatingWebhook()
			w.Add(KruisePodReadyGate(gate))
			req := createRequest(t, tt.pod)
			if tt.raw != "" {
				req.Object.Raw = []byte(tt.raw)
			}
			resp := w.Handle(ctx, req)
			var paths []string
			for _, op := range patchOf(t, resp) {
				if op.Op != "add" {
					t.Errorf("patch op %s, want add", op.Op)
				}
				paths = append(paths, op.Path)
			}
			if !slices.Equal(paths, tt.wantPaths) {
				t.Errorf("patch paths %v, want %v", paths, tt.wantPaths)
			}
			if got := patched(t, req, resp).Spec.ReadinessGates; !equality.Semantic.DeepEqual(got, tt.wantGates) {
				t.Errorf("stored readiness gates %v, want %v", got, tt.wantGates)
			}
		})
	}
}

// The mutation passes on the pod its additions make, so that a later mutation sees it.
func TestKruisePodReadyGatePassesTheChangedPodOn(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pod := newPod("p", nil, nil, controllerRef("apps.kruise.io/v1alpha1", "CloneSet"))
	req := createRequest(t, pod)
	mutated := pod.DeepCopy()
	additions, err := KruisePodReadyGate(features.NewFeatureGate()).Mutate(ctx, req, mutated)
	if err != nil || len(additions) != 1 {
		t.Fatalf("additions %v, error %v; want one addition", additions, err)
	}
	want := pod.DeepCopy()
	want.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: appsv1beta1.KruisePodReadyConditionType}}
	if !equality.Semantic.DeepEqual(mutated, want) {
		t.Errorf("pod passed on %+v, want %+v", mutated, want)
	}
	// A second run finds the gate and adds nothing.
	if again, _ := KruisePodReadyGate(features.NewFeatureGate()).Mutate(ctx, req, mutated); len(again) != 0 {
		t.Errorf("second run added %v", again)
	}
}
