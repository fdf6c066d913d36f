package podreadiness

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

const (
	// controllerUnderTest is the --controllers name of the controller, whose enabling also
	// serves the readiness gate in the mutating pod webhook.
	controllerUnderTest = "pod-readiness-controller"
	mutatingPodWebhook  = "mpod.kb.io"

	// idlePeriod is how long nothing may write to the test namespace before the test checks
	// that something did NOT happen.
	idlePeriod = 2 * time.Second
)

var kruisePodReady = corev1.PodReadinessGate{ConditionType: appsv1beta1.KruisePodReadyConditionType}

// newPod is a pod with one container and controller reference controller (none when nil).
func newPod(name string, controller *metav1.OwnerReference) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
	}
	if controller != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*controller}
	}
	return pod
}

// controlledBy is a controller reference to a workload that need not exist: no garbage
// collector runs.
func controlledBy(apiVersion, kind, name string) *metav1.OwnerReference {
	return &metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("uid-" + name), Controller: ptr.To(true)}
}

// kruisePodReadyCondition returns the pod's KruisePodReady condition, nil without one.
func kruisePodReadyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == appsv1beta1.KruisePodReadyConditionType {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// A CloneSet's pod gets the gate at creation and the condition True right after; an
// Advanced DaemonSet's too, after its own gate; a ReplicaSet's pod gets neither. A pod
// given the gate by its author gets the condition whatever its owner.
func TestKruisePodsGetTheGateAndTheCondition(t *testing.T) {
	e := framework.NewTestEnv(t, framework.SharedControlPlane(t), framework.EnvOptions{
		Timeout: 2 * time.Minute, WaitTimeout: time.Minute, Audit: true, RemoveWebhookConfigurations: true,
		Remove: []string{"pods"},
	})
	probe := newPod("admission-probe", controlledBy("apps.kruise.io/v1alpha1", "CloneSet", "probe"))
	framework.StartBosunControllerManagerWithWebhooks(e.Ctx, t, e.CP,
		framework.ControllerManagerOptions{Controllers: controllerUnderTest},
		framework.WebhookProbe{Webhook: mutatingPodWebhook, Send: func(ctx context.Context) {
			_, _ = e.Client.CoreV1().Pods(e.Namespace).Create(ctx, probe, framework.DryRunCreate)
		}})

	cloneSetPod := e.Pods().Create(t, newPod("web-x7k2p", controlledBy("apps.kruise.io/v1alpha1", "CloneSet", "web")))
	if !slices.Equal(cloneSetPod.Spec.ReadinessGates, []corev1.PodReadinessGate{kruisePodReady}) {
		t.Errorf("CloneSet pod stored with readiness gates %v, want [KruisePodReady]", cloneSetPod.Spec.ReadinessGates)
	}
	daemonPod := newPod("agent-n1", controlledBy("apps.kruise.io/v1beta1", "DaemonSet", "agent"))
	daemonPod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: appsv1beta1.InPlaceUpdateReady}}
	daemonPod = e.Pods().Create(t, daemonPod)
	if want := []corev1.PodReadinessGate{{ConditionType: appsv1beta1.InPlaceUpdateReady}, kruisePodReady}; !slices.Equal(daemonPod.Spec.ReadinessGates, want) {
		t.Errorf("Advanced DaemonSet pod stored with readiness gates %v, want %v", daemonPod.Spec.ReadinessGates, want)
	}
	replicaSetPod := e.Pods().Create(t, newPod("api-5d8f", controlledBy("apps/v1", "ReplicaSet", "api")))
	if len(replicaSetPod.Spec.ReadinessGates) != 0 {
		t.Errorf("ReplicaSet pod stored with readiness gates %v, want none", replicaSetPod.Spec.ReadinessGates)
	}
	gatedByHand := newPod("by-hand", nil)
	gatedByHand.Spec.ReadinessGates = []corev1.PodReadinessGate{kruisePodReady}
	e.Pods().Create(t, gatedByHand)

	for _, name := range []string{cloneSetPod.Name, daemonPod.Name, gatedByHand.Name} {
		e.Pods().WaitFor(t, name, "condition KruisePodReady True", func(pod *corev1.Pod) bool {
			cond := kruisePodReadyCondition(pod)
			return cond != nil && cond.Status == corev1.ConditionTrue
		})
	}

	e.WaitForNoWrites(t, idlePeriod)
	if cond := kruisePodReadyCondition(e.Pods().Get(t, replicaSetPod.Name)); cond != nil {
		t.Errorf("ReplicaSet pod got condition %+v, want none", cond)
	}
}
