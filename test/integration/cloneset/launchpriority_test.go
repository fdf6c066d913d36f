package cloneset

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// startLaunchPriorityManager runs bosun-controller-manager leading with the
// container-launch-priority controller alone, whose entry brings the pod webhook's launch
// priority mutation, until the test ends, and returns once the API server calls the pod
// webhook.
func (e *testEnv) startLaunchPriorityManager(t *testing.T) *framework.ControllerManager {
	t.Helper()
	probe := launchPriorityPod("admission-probe")
	send := func(ctx context.Context) {
		_, _ = e.Client.CoreV1().Pods(e.Namespace).Create(ctx, probe, framework.DryRunCreate)
	}
	return framework.StartBosunControllerManagerWithWebhooks(e.Ctx, t, e.CP,
		framework.ControllerManagerOptions{Controllers: "containerlaunchpriority", Verbosity: 4},
		framework.WebhookProbe{Webhook: "mpod.kb.io", Send: send},
	)
}

// launchPriorityPod is pod name with containers main (no priority) and side
// (KRUISE_CONTAINER_PRIORITY 10), as a user writes it.
func launchPriorityPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "main", Image: image1},
			{Name: "side", Image: image2, Env: []corev1.EnvVar{{Name: kruisepod.LaunchPriorityEnv, Value: "10"}}},
		}},
	}
}

// barrierKeys returns the sorted keys of a barrier, nil for none.
func barrierKeys(cm *corev1.ConfigMap) []string {
	if cm == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(cm.Data))
}

// A pod whose containers declare launch priorities gets a barrier env per container from
// the pod webhook, and its barrier ConfigMap gets the key of one priority after the other
// as the containers before become ready; then the pod is marked completed.
func TestContainerLaunchPriority(t *testing.T) {
	e := setup(t)
	// No garbage collector runs: the barrier would outlive its pod.
	e.OnCleanup(func(ctx context.Context) error {
		return e.Client.CoreV1().ConfigMaps(e.Namespace).Delete(ctx, "web-barrier", metav1.DeleteOptions{})
	})
	e.startLaunchPriorityManager(t)

	pod := e.Pods().Create(t, launchPriorityPod("web"))
	for i, want := range []string{"p_0", "p_10"} {
		priority, ok := kruisepod.LaunchPriority(&pod.Spec.Containers[i])
		env := pod.Spec.Containers[i].Env
		ref := env[len(env)-1].ValueFrom
		if !ok || ref == nil || ref.ConfigMapKeyRef.Name != "web-barrier" || ref.ConfigMapKeyRef.Key != want {
			t.Fatalf("container %s: env %+v (priority %d, %v), want the barrier web-barrier/%s", pod.Spec.Containers[i].Name, env, priority, ok, want)
		}
	}

	// The kubelet stand-in: both containers created, neither ready.
	e.Pods().UpdateStatus(t, "web", func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: image1}, {Name: "side", Image: image2}}
	})
	barrier := e.ConfigMaps().WaitFor(t, "web-barrier", "the key of priority 10", func(cm *corev1.ConfigMap) bool {
		return slices.Equal(barrierKeys(cm), []string{"p_10"})
	})
	if refs := barrier.OwnerReferences; len(refs) != 1 || refs[0].Kind != "Pod" || refs[0].UID != pod.UID || refs[0].Controller != nil {
		t.Errorf("barrier owners %+v, want the pod, without a controller reference", refs)
	}

	// side is ready: main may start, and the pod is done with.
	e.Pods().UpdateStatus(t, "web", func(p *corev1.Pod) { p.Status.ContainerStatuses[1].Ready = true })
	e.ConfigMaps().WaitFor(t, "web-barrier", "the key of priority 0 too", func(cm *corev1.ConfigMap) bool {
		return slices.Equal(barrierKeys(cm), []string{"p_0", "p_10"})
	})
	e.Pods().WaitFor(t, "web", "marked completed", func(p *corev1.Pod) bool {
		return p.Annotations[kruisepod.LaunchPriorityCompletedAnnotation] == "true"
	})

	// A pod whose priorities are all equal is left alone; one with a priority that is not an
	// integer is refused.
	equal := launchPriorityPod("equal")
	equal.Spec.Containers[0].Env = []corev1.EnvVar{{Name: kruisepod.LaunchPriorityEnv, Value: "10"}}
	if got := e.Pods().Create(t, equal); len(got.Spec.Containers[0].Env) != 1 || len(got.Spec.Containers[1].Env) != 1 {
		t.Errorf("pod with equal priorities got envs %+v and %+v, want its own only", got.Spec.Containers[0].Env, got.Spec.Containers[1].Env)
	}
	bad := launchPriorityPod("bad")
	bad.Spec.Containers[1].Env[0].Value = "high"
	if _, err := e.Pods().TryCreate(bad); err == nil || !strings.Contains(err.Error(), kruisepod.LaunchPriorityEnv) {
		t.Errorf("creating a pod with priority %q: %v, want a refusal naming %s", "high", err, kruisepod.LaunchPriorityEnv)
	}
}
