package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/bosun-dev/bosun/test/e2e/cluster"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// requireCluster skips the case when the suite is skipped, and fails it at once when the
// cluster has already broken (an earlier case may have left a dead kubelet behind).
func requireCluster(t *testing.T) *cluster.Cluster {
	t.Helper()
	if suite == nil {
		t.Skip(skipReason)
	}
	if err := suite.Err(); err != nil {
		t.Fatalf("the local cluster is broken: %v", err)
	}
	return suite
}

// testContext is a context that ends with the test.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}

func clientset(t *testing.T) kubernetes.Interface {
	t.Helper()
	client, err := requireCluster(t).Clientset()
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// waitFor polls condition until it is true, failing the test when timeout passes, when
// condition errs, or as soon as a component of the cluster has died: every poll looks at
// the cluster first.
func waitFor(t *testing.T, timeout time.Duration, what string, condition func(ctx context.Context) (bool, error)) {
	t.Helper()
	err := framework.WaitFor(testContext(t), timeout, what, func(ctx context.Context) (bool, error) {
		if err := suite.Err(); err != nil {
			return false, fmt.Errorf("the local cluster broke: %w", err)
		}
		return condition(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// newNamespace creates a namespace for the test, waits for its default ServiceAccount
// (pods need it) and deletes the namespace when the test ends.
func newNamespace(t *testing.T) string {
	t.Helper()
	client := clientset(t)
	ctx := testContext(t)
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: strings.TrimRight("e2e-"+name, "-") + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the test namespace: %v", err)
	}
	t.Cleanup(func() {
		if err := client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}); err != nil {
			t.Logf("deleting namespace %s: %v", ns.Name, err)
		}
	})
	waitFor(t, time.Minute, "the default ServiceAccount of "+ns.Name, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	return ns.Name
}

// webserverPod is a pod template of the test web server (test/images/webserver) at
// version, with a readiness probe on /ready and a liveness probe on /healthz, labelled
// labels. env is added to the container's environment (READY_AFTER, START_NOT_READY).
func webserverPod(version string, labels map[string]string, env ...corev1.EnvVar) corev1.PodTemplateSpec {
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(cluster.WebserverPort)}},
			PeriodSeconds:    1,
			FailureThreshold: 1,
			TimeoutSeconds:   1,
		}
	}
	grace := int64(5)
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name:           "webserver",
				Image:          cluster.WebserverImage(version),
				Ports:          []corev1.ContainerPort{{ContainerPort: cluster.WebserverPort}},
				Env:            env,
				ReadinessProbe: probe("/ready"),
				LivenessProbe:  probe("/healthz"),
			}},
		},
	}
}

// podReady reports whether the pod's Ready condition is True.
func podReady(pod *corev1.Pod) bool {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// listPods lists the pods of namespace matching selector.
func listPods(ctx context.Context, client kubernetes.Interface, namespace, selector string) ([]corev1.Pod, error) {
	list, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing pods %s in %s: %w", selector, namespace, err)
	}
	return list.Items, nil
}

// webserverVersion asks a pod's web server for its version through the API server's pod
// proxy (the way `kubectl get --raw` reaches it).
func webserverVersion(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod) (string, error) {
	body, err := client.CoreV1().Pods(pod.Namespace).ProxyGet("http", pod.Name, fmt.Sprint(cluster.WebserverPort), "/version", nil).DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("GET /version of pod %s: %w", pod.Name, err)
	}
	return strings.TrimSpace(string(body)), nil
}

// runtimeService connects to the node's container runtime over CRI, as the kubelet does.
func runtimeService(t *testing.T) runtimeapi.RuntimeServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(requireCluster(t).RuntimeEndpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("connecting to the container runtime: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return runtimeapi.NewRuntimeServiceClient(conn)
}

// runningContainers lists the running containers of a pod, as the runtime sees them (the
// kubelet labels each with its pod's UID).
func runningContainers(ctx context.Context, rt runtimeapi.RuntimeServiceClient, podUID string) ([]*runtimeapi.Container, error) {
	list, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{"io.kubernetes.pod.uid": podUID},
	}})
	if err != nil {
		return nil, fmt.Errorf("listing the containers of pod %s over CRI: %w", podUID, err)
	}
	return list.Containers, nil
}
