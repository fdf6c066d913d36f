package e2e

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

// A container killed behind Kubernetes' back, through the CRI: the kubelet notices, the pod
// turns NotReady and the ReplicaSet's status follows; a ReplicaSet's pods always restart
// their containers, so the kubelet starts a new container in the same pod, and the
// ReplicaSet keeps exactly its pods (it neither replaces the pod nor adds one) and reports
// them all Ready again.
func TestReplicaSetRecoversAPodWhoseContainerWasKilled(t *testing.T) {
	client := clientset(t)
	rt := runtimeService(t)
	ctx := testContext(t)
	ns := newNamespace(t)
	const replicas = 2
	labels := map[string]string{"app": "killed"}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "killed", Namespace: ns},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: webserverPod("v1", labels),
		},
	}
	if _, err := client.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForReplicaSetReady(t, ns, "killed", replicas)
	pods, err := listPods(ctx, client, ns, "app=killed")
	if err != nil {
		t.Fatal(err)
	}
	podUIDs := map[types.UID]bool{}
	for _, p := range pods {
		podUIDs[p.UID] = true
	}
	victim := pods[0]

	containers, err := runningContainers(ctx, rt, string(victim.UID))
	if err != nil {
		t.Fatal(err)
	}
	if len(containers) != 1 {
		t.Fatalf("pod %s has %d running containers in the runtime, want 1", victim.Name, len(containers))
	}
	killed := containers[0].Id
	t.Logf("killing container %s of pod %s through the CRI", killed[:12], victim.Name)
	if _, err := rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: killed, Timeout: 0}); err != nil {
		t.Fatalf("stopping the container over CRI: %v", err)
	}

	waitFor(t, 2*time.Minute, "the kubelet to restart the killed container and the ReplicaSet to be Ready again",
		func(ctx context.Context) (bool, error) {
			pod, err := client.CoreV1().Pods(ns).Get(ctx, victim.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if len(pod.Status.ContainerStatuses) != 1 || pod.Status.ContainerStatuses[0].RestartCount < 1 || !podReady(pod) {
				return false, nil
			}
			rs, err := client.AppsV1().ReplicaSets(ns).Get(ctx, "killed", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return rs.Status.ReadyReplicas == replicas && rs.Status.AvailableReplicas == replicas, nil
		})

	containers, err = runningContainers(ctx, rt, string(victim.UID))
	if err != nil {
		t.Fatal(err)
	}
	if len(containers) != 1 || containers[0].Id == killed {
		t.Errorf("after the restart the pod runs %d containers (%v); want one new container, not %s", len(containers), containers, killed[:12])
	}
	pods, err = listPods(ctx, client, ns, "app=killed")
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != replicas {
		t.Errorf("the ReplicaSet has %d pods after the kill, want %d", len(pods), replicas)
	}
	for _, p := range pods {
		if !podUIDs[p.UID] {
			t.Errorf("pod %s (UID %s) is new: the ReplicaSet replaced a pod that the kubelet restarted", p.Name, p.UID)
		}
	}
}

// waitForReplicaSetReady waits until the ReplicaSet has observed its spec and reports
// replicas Ready and available pods.
func waitForReplicaSetReady(t *testing.T, namespace, name string, replicas int32) {
	t.Helper()
	client := clientset(t)
	waitFor(t, 2*time.Minute, "ReplicaSet "+name+" to have its pods Ready", func(ctx context.Context) (bool, error) {
		rs, err := client.AppsV1().ReplicaSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return rs.Status.ObservedGeneration >= rs.Generation && rs.Status.Replicas == replicas &&
			rs.Status.ReadyReplicas == replicas && rs.Status.AvailableReplicas == replicas, nil
	})
}
