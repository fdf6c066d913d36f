package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/test/e2e/cluster"
)

const (
	// sidePort is where the second web server of a launch-priority pod listens; the pod's
	// containers share its network.
	sidePort = 8081
	// sideReadyAfter is how long the side container stays not ready after it starts, so
	// that the order of the containers shows in their start times.
	sideReadyAfter = 5 * time.Second
)

// launchPriorityCloneSet is a CloneSet of one pod updated in place, with two web servers:
// main, without a launch priority, and side (KRUISE_CONTAINER_PRIORITY 10, ready only
// sideReadyAfter after it starts), both at version.
func launchPriorityCloneSet(name, version string) *appsv1alpha1.CloneSet {
	labels := map[string]string{"app": name}
	template := webserverPod(version, labels)
	main := template.Spec.Containers[0]
	main.Name = "main"
	side := *main.DeepCopy()
	side.Name = "side"
	side.Ports = []corev1.ContainerPort{{ContainerPort: sidePort}}
	side.Env = []corev1.EnvVar{
		{Name: kruisepod.LaunchPriorityEnv, Value: "10"},
		{Name: "PORT", Value: fmt.Sprint(sidePort)},
		{Name: "READY_AFTER", Value: sideReadyAfter.String()},
	}
	side.ReadinessProbe.HTTPGet.Port = intstr.FromInt32(sidePort)
	side.LivenessProbe.HTTPGet.Port = intstr.FromInt32(sidePort)
	template.Spec.Containers = []corev1.Container{main, side}
	return &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas:       ptr.To[int32](1),
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
			Template:       template,
			UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{Type: appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType},
		},
	}
}

// containerStatus returns the status of container name of pod, or nil.
func containerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// waitForLaunchPriorityPod waits until the CloneSet's only pod runs both containers at
// version, started restarts times, Ready, with its in-place update (if any) complete; with
// uid set, it must be that pod.
func waitForLaunchPriorityPod(t *testing.T, namespace, name, version string, restarts int32, uid string) *corev1.Pod {
	t.Helper()
	client := clientset(t)
	var found *corev1.Pod
	waitFor(t, daemonSetTimeout, fmt.Sprintf("the pod of CloneSet %s to run %s in both containers", name, version), func(ctx context.Context) (bool, error) {
		pods, err := listPods(ctx, client, namespace, "app="+name)
		if err != nil || len(pods) != 1 {
			return false, err
		}
		pod := &pods[0]
		if (uid != "" && string(pod.UID) != uid) || !podReady(pod) || !hasCondition(pod, appsv1alpha1.InPlaceUpdateReady) ||
			pod.Labels[appsv1alpha1.LifecycleStateKey] != string(appsv1alpha1.LifecycleStateNormal) {
			return false, nil
		}
		for _, c := range []string{"main", "side"} {
			status := containerStatus(pod, c)
			if status == nil || !status.Ready || status.State.Running == nil || status.Image != cluster.WebserverImage(version) || status.RestartCount != restarts {
				return false, nil
			}
		}
		found = pod
		return true, nil
	})
	return found
}

// Container launch priority (acceptance scenario 18) on the real node. The pod webhook
// gives both containers their barrier env; side (priority 10) starts first and main only
// once side is ready. An image change of both is made in place in two batches, recorded in
// the in-place update state: side first, main only once the new side is ready.
func TestCloneSetContainerLaunchPriority(t *testing.T) {
	requireCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t)
	bosun := bosunClientset(t)
	client := clientset(t)

	if _, err := bosun.AppsV1alpha1().CloneSets(ns).Create(ctx, launchPriorityCloneSet("prio", "v1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := waitForLaunchPriorityPod(t, ns, "prio", "v1", 0, "")
	for i, key := range []string{"p_0", "p_10"} {
		if p, ok := kruisepod.LaunchPriority(&pod.Spec.Containers[i]); !ok || kruisepod.BarrierKey(p) != key {
			t.Errorf("container %s waits for %q (%v), want %s", pod.Spec.Containers[i].Name, kruisepod.BarrierKey(p), ok, key)
		}
	}
	barrier, err := client.CoreV1().ConfigMaps(ns).Get(ctx, kruisepod.BarrierName(pod.Name), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the pod's barrier: %v", err)
	}
	if _, ok := barrier.Data["p_0"]; !ok || len(barrier.Data) != 2 || pod.Annotations[kruisepod.LaunchPriorityCompletedAnnotation] != "true" {
		t.Errorf("barrier data %v, completed %q; want p_0 and p_10, and the pod marked completed", barrier.Data, pod.Annotations[kruisepod.LaunchPriorityCompletedAnnotation])
	}
	// Start times have whole seconds: a second of slack.
	main, side := containerStatus(pod, "main"), containerStatus(pod, "side")
	if started := main.State.Running.StartedAt.Sub(side.State.Running.StartedAt.Time); started < sideReadyAfter-time.Second {
		t.Errorf("main started %v after side, want at least side's %v to readiness", started, sideReadyAfter)
	}

	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cs, err := bosun.AppsV1alpha1().CloneSets(ns).Get(ctx, "prio", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i := range cs.Spec.Template.Spec.Containers {
			cs.Spec.Template.Spec.Containers[i].Image = cluster.WebserverImage("v2")
		}
		_, err = bosun.AppsV1alpha1().CloneSets(ns).Update(ctx, cs, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	updated := waitForLaunchPriorityPod(t, ns, "prio", "v2", 1, string(pod.UID))

	var state kruisepod.InPlaceUpdateState
	if err := json.Unmarshal([]byte(updated.Annotations[appsv1alpha1.InPlaceUpdateStateKey]), &state); err != nil {
		t.Fatalf("reading the in-place update state: %v", err)
	}
	batches := state.ContainerBatchesRecord
	if len(batches) != 2 || !slices.Equal(batches[0].Containers, []string{"side"}) || !slices.Equal(batches[1].Containers, []string{"main"}) {
		t.Fatalf("batches %+v, want side, then main", batches)
	}
	if gap := batches[1].Timestamp.Sub(batches[0].Timestamp.Time); gap < sideReadyAfter-time.Second {
		t.Errorf("main's batch came %v after side's, want at least side's %v to readiness", gap, sideReadyAfter)
	}
	main, side = containerStatus(updated, "main"), containerStatus(updated, "side")
	if stopped := main.LastTerminationState.Terminated; stopped == nil || stopped.FinishedAt.Sub(side.State.Running.StartedAt.Time) < sideReadyAfter-time.Second {
		t.Errorf("old main stopped at %+v, want at least %v after the new side started at %v", stopped, sideReadyAfter, side.State.Running.StartedAt)
	}
	for _, port := range []int{cluster.WebserverPort, sidePort} {
		body, err := client.CoreV1().Pods(ns).ProxyGet("http", updated.Name, fmt.Sprint(port), "/version", nil).DoRaw(ctx)
		if err != nil || string(body) != "v2" && string(body) != "v2\n" {
			t.Errorf("GET /version on port %d: %q, %v; want v2", port, body, err)
		}
	}
}
