package api

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"
)

// The objects below are minimal but valid instances of each kind, written as a user
// would write them; tests change copies of them.

func newDaemonSet(namespace, name string) *appsv1alpha1.DaemonSet {
	labels := map[string]string{"app": name}
	return &appsv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1alpha1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example/agent:1.0"}}},
			},
			UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{
				Type: appsv1alpha1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{
					Type:           appsv1alpha1.StandardRollingUpdateType,
					MaxUnavailable: ptr.To(intstr.FromInt32(1)),
				},
			},
		},
	}
}

func newPodUnavailableBudget(namespace, name string) *policyv1alpha1.PodUnavailableBudget {
	return &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			MaxUnavailable: ptr.To(intstr.FromString("25%")),
		},
	}
}

func newContainerRecreateRequest(namespace, name string) *appsv1alpha1.ContainerRecreateRequest {
	return &appsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1alpha1.ContainerRecreateRequestSpec{
			PodName:    "web-0",
			Containers: []appsv1alpha1.ContainerRecreateRequestContainer{{Name: "app"}},
			Strategy: &appsv1alpha1.ContainerRecreateRequestStrategy{
				FailurePolicy: appsv1alpha1.ContainerRecreateRequestFailurePolicyFail,
			},
		},
	}
}

func newNodeImage(name string) *appsv1alpha1.NodeImage {
	return &appsv1alpha1.NodeImage{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.NodeImageSpec{
			Images: map[string]appsv1alpha1.ImageSpec{
				"registry.example/agent": {Tags: []appsv1alpha1.ImageTagSpec{{Tag: "1.0", Version: 1}}},
			},
		},
	}
}

func newImagePullJob(namespace, name string) *appsv1alpha1.ImagePullJob {
	return &appsv1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1alpha1.ImagePullJobSpec{
			Image: "registry.example/agent:1.0",
			ImagePullJobTemplate: appsv1alpha1.ImagePullJobTemplate{
				Parallelism:      ptr.To(intstr.FromInt32(2)),
				CompletionPolicy: appsv1alpha1.CompletionPolicy{Type: appsv1alpha1.Always},
			},
		},
	}
}
