package pod

import (
	"context"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/webhook"
)

// KruisePodReadyGate returns the mutation that adds the readiness gate KruisePodReady to
// the new pods of every controller in group apps.kruise.io (whatever its kind and version)
// and, with feature KruisePodReadinessGate, to every new pod. The gate is what makes the
// not-ready marks of lifecycle hooks and ContainerRecreateRequests take a pod out of
// service; pod-readiness-controller sets the condition True once the pod exists, so the
// mutation belongs with that controller: a gate nobody satisfies would keep the pod from
// ever becoming Ready. gates is read on every request; features.DefaultFeatureGate when
// nil.
func KruisePodReadyGate(gates featuregate.FeatureGate) Mutation {
	if gates == nil {
		gates = features.DefaultFeatureGate
	}
	return Mutation{
		Name: "KruisePodReady readiness gate",
		Mutate: func(ctx context.Context, _ *admissionv1.AdmissionRequest, pod *corev1.Pod) ([]webhook.Addition, error) {
			if !ownedByKruise(pod) && !gates.Enabled(features.KruisePodReadinessGate) {
				return nil, nil
			}
			additions := addReadinessGate(pod, appsv1beta1.KruisePodReadyConditionType)
			if len(additions) > 0 {
				klog.FromContext(ctx).V(4).Info("Adding readiness gate KruisePodReady to a new pod")
			}
			return additions, nil
		},
	}
}

// ownedByKruise reports whether pod's controller is in group apps.kruise.io. A reference
// whose apiVersion does not parse is in no group.
func ownedByKruise(pod *corev1.Pod) bool {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == appsv1beta1.GroupName
}

// addReadinessGate adds gate t to pod unless it has it, and returns the additions that do
// the same to the object: the whole list when the pod has none, else the gate appended.
func addReadinessGate(pod *corev1.Pod, t corev1.PodConditionType) []webhook.Addition {
	if kruisepod.HasReadinessGate(pod, t) {
		return nil
	}
	gate := corev1.PodReadinessGate{ConditionType: t}
	if pod.Spec.ReadinessGates == nil {
		pod.Spec.ReadinessGates = []corev1.PodReadinessGate{gate}
		return []webhook.Addition{{Path: "/spec/readinessGates", Value: []corev1.PodReadinessGate{gate}}}
	}
	pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, gate)
	return []webhook.Addition{{Path: "/spec/readinessGates/-", Value: gate}}
}
