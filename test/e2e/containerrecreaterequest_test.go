package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bosun-dev/bosun/test/e2e/cluster"
)

// recreateTimeout bounds one container's recreation on the node: preStop, stop, the
// kubelet's restart (back-off starts at 10 s), probes, and the agent noticing.
const recreateTimeout = 2 * time.Minute

// hookedWebserverPod is a bare pod of the web server whose preStop hook appends "prestop" to
// a log on an emptyDir volume, which survives the container's restart and which the
// restarted web server serves at /hooks.
func hookedWebserverPod(name string) *corev1.Pod {
	template := webserverPod("v1", map[string]string{"app": name},
		corev1.EnvVar{Name: "HOOK_LOG", Value: "/hooks/log"})
	container := &template.Spec.Containers[0]
	container.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
		Exec: &corev1.ExecAction{Command: []string{"/webserver", "hook", "prestop"}},
	}}
	container.VolumeMounts = []corev1.VolumeMount{{Name: "hooks", MountPath: "/hooks"}}
	template.Spec.Volumes = []corev1.Volume{{Name: "hooks", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: template.Labels}, Spec: template.Spec}
}

// startReadyPod creates pod and waits until it runs and is ready.
func startReadyPod(t *testing.T, ns string, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	client := clientset(t)
	if _, err := client.CoreV1().Pods(ns).Create(testContext(t), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var ready *corev1.Pod
	waitFor(t, daemonSetTimeout, "pod "+pod.Name+" to run and be ready", func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ready = p
		return podReady(p) && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].ContainerID != "", nil
	})
	return ready
}

// newCRR is a ContainerRecreateRequest as a user writes it: the pod and the container.
func newCRR(name, pod string) *appsv1alpha1.ContainerRecreateRequest {
	return &appsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.ContainerRecreateRequestSpec{
			PodName:    pod,
			Containers: []appsv1alpha1.ContainerRecreateRequestContainer{{Name: "webserver"}},
		},
	}
}

// waitForCRRCompleted waits until the request completed and the manager has taken it off
// the agents' watch (label crr.apps.kruise.io/active removed), and returns it.
func waitForCRRCompleted(t *testing.T, ns, name string) *appsv1alpha1.ContainerRecreateRequest {
	t.Helper()
	bosun := bosunClientset(t)
	var crr *appsv1alpha1.ContainerRecreateRequest
	waitFor(t, recreateTimeout, "ContainerRecreateRequest "+name+" to complete and lose its active label", func(ctx context.Context) (bool, error) {
		got, err := bosun.AppsV1alpha1().ContainerRecreateRequests(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		crr = got
		_, active := got.Labels[appsv1alpha1.ContainerRecreateRequestActiveKey]
		return got.Status.Phase == appsv1alpha1.ContainerRecreateRequestCompleted && !active, nil
	})
	return crr
}

func requireSucceeded(t *testing.T, crr *appsv1alpha1.ContainerRecreateRequest) {
	t.Helper()
	if crr.Status.Message != "" || crr.Status.CompletionTime == nil || len(crr.Status.ContainerRecreateStates) != 1 ||
		crr.Status.ContainerRecreateStates[0].Phase != appsv1alpha1.ContainerRecreateRequestSucceeded {
		t.Fatalf("ContainerRecreateRequest %s completed with %+v", crr.Name, crr.Status)
	}
}

// waitForRestarts waits until the pod's container has restarted `restarts` times since
// before, under a new container ID, and is ready again; the pod stays the same pod.
func waitForRestarts(t *testing.T, before *corev1.Pod, restarts int32) *corev1.Pod {
	t.Helper()
	client := clientset(t)
	old := before.Status.ContainerStatuses[0]
	var after *corev1.Pod
	waitFor(t, recreateTimeout, fmt.Sprintf("the container of %s to restart %d time(s) and be ready", before.Name, restarts), func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(before.Namespace).Get(ctx, before.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		after = p
		status := p.Status.ContainerStatuses[0]
		return status.RestartCount >= old.RestartCount+restarts && status.Ready && status.ContainerID != old.ContainerID, nil
	})
	if after.UID != before.UID {
		t.Fatalf("pod %s was recreated (UID %s → %s); only its container should be", before.Name, before.UID, after.UID)
	}
	if got := after.Status.ContainerStatuses[0].RestartCount; got != old.RestartCount+restarts {
		t.Errorf("restart count %d → %d, want +%d", old.RestartCount, got, restarts)
	}
	return after
}

// A ContainerRecreateRequest restarts a container of a Running pod on the real node: the
// preStop hook runs, containerd stops the container, the kubelet starts a new one (same pod
// UID, restart count +1, new container ID, ready), and the request completes Succeeded.
func TestContainerRecreateRequestRestartsAContainer(t *testing.T) {
	requireCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t)
	client, bosun := clientset(t), bosunClientset(t)
	before := startReadyPod(t, ns, hookedWebserverPod("web"))

	created, err := bosun.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, newCRR("restart-web", "web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Admission filled in what the agent needs.
	target := created.Spec.Containers[0]
	if created.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey] != string(before.UID) ||
		created.Labels[appsv1alpha1.ContainerRecreateRequestNodeNameKey] != before.Spec.NodeName ||
		target.StatusContext == nil || target.StatusContext.ContainerID != before.Status.ContainerStatuses[0].ContainerID ||
		target.PreStop == nil || target.PreStop.Exec == nil {
		t.Fatalf("admission did not fill the request in: labels %v, container %+v", created.Labels, target)
	}

	requireSucceeded(t, waitForCRRCompleted(t, ns, created.Name))
	after := waitForRestarts(t, before, 1)

	// The hook ran in the old container and wrote to the volume the new one serves.
	body, err := client.CoreV1().Pods(ns).ProxyGet("http", after.Name, fmt.Sprint(cluster.WebserverPort), "/hooks", nil).DoRaw(ctx)
	if err != nil {
		t.Fatalf("GET /hooks: %v", err)
	}
	if strings.TrimSpace(string(body)) != "prestop" {
		t.Errorf("/hooks = %q, want the preStop hook's one line", body)
	}
	events, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web,reason=Killing"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range events.Items {
		found = found || strings.Contains(e.Message, "by ContainerRecreateRequest")
	}
	if !found {
		t.Errorf("no Killing event from the ContainerRecreateRequest on the pod: %+v", events.Items)
	}
}

// Two requests for one pod, created back to back: both finish, one after the other, in
// creation order. Both name the container as it was before either ran, so the restart the
// first one caused also satisfies the second: the container restarts once.
func TestTwoContainerRecreateRequestsForOnePodBothFinish(t *testing.T) {
	requireCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t)
	bosun := bosunClientset(t)
	before := startReadyPod(t, ns, hookedWebserverPod("web"))

	for _, name := range []string{"first", "second"} {
		if _, err := bosun.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, newCRR(name, "web"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	first := waitForCRRCompleted(t, ns, "first")
	second := waitForCRRCompleted(t, ns, "second")
	requireSucceeded(t, first)
	requireSucceeded(t, second)
	if second.Status.CompletionTime.Before(first.Status.CompletionTime) {
		t.Errorf("second completed at %v, before first at %v", second.Status.CompletionTime, first.Status.CompletionTime)
	}
	waitForRestarts(t, before, 1)
}
