package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/e2e/cluster"
)

// requireInCluster skips a test unless bosun runs inside the cluster, installed from its
// images and chart (`make test-e2e` runs these tests on such a cluster of their own).
func requireInCluster(t *testing.T) *cluster.Cluster {
	t.Helper()
	c := requireCluster(t)
	if !c.InCluster() {
		t.Skipf("needs bosun installed inside the cluster (%s=1)", inClusterEnv)
	}
	return c
}

// TestInClusterInstall checks what only an install inside the cluster has: the manager's
// replicas are pods that elect a leader, the API server calls the webhooks through the
// Service, and a deleted leader hands over to the other replica.
func TestInClusterInstall(t *testing.T) {
	requireInCluster(t)
	ctx := testContext(t)
	client := clientset(t)
	ns := cluster.InClusterNamespace

	managers, err := listPods(ctx, client, ns, "app.kubernetes.io/name="+cluster.InClusterManager)
	if err != nil {
		t.Fatal(err)
	}
	if len(managers) != 2 {
		t.Fatalf("%d manager pods, want the Deployment's 2", len(managers))
	}
	leader := leaderPod(t, ctx, managers)
	t.Logf("leader: %s", leader)

	// Every webhook of bosun names the Service, with the CA the replicas share.
	validating, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, config := range validating.Items {
		for _, webhook := range config.Webhooks {
			service := webhook.ClientConfig.Service
			if service == nil || !strings.Contains(config.Name, "bosun") {
				continue
			}
			checked++
			if service.Namespace != ns || service.Name != "bosun-webhook" || len(webhook.ClientConfig.CABundle) == 0 {
				t.Errorf("webhook %s of %s calls %s/%s with %d bytes of CA, want %s/bosun-webhook with the shared CA",
					webhook.Name, config.Name, service.Namespace, service.Name, len(webhook.ClientConfig.CABundle), ns)
			}
		}
	}
	if checked == 0 {
		t.Errorf("no validating webhook of bosun calls a Service; configurations: %d", len(validating.Items))
	}

	// Admission through the Service: bosun's own answer comes back.
	pub := &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "selects-everything", Namespace: newNamespace(t)},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{},
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		},
	}
	_, err = bosunClientset(t).PolicyV1alpha1().PodUnavailableBudgets(pub.Namespace).Create(ctx, pub, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "denied the request") || !strings.Contains(err.Error(), "empty selector is invalid") {
		t.Errorf("creating a budget with an empty selector: error %v, want bosun's webhook to deny it", err)
	}

	// The leader's pod goes: the other replica takes the Lease, and the Deployment brings
	// back a second replica.
	if err := client.CoreV1().Pods(ns).Delete(ctx, leader, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "another replica to lead and two to be ready again", func(ctx context.Context) (bool, error) {
		pods, err := listPods(ctx, client, ns, "app.kubernetes.io/name="+cluster.InClusterManager)
		if err != nil {
			return false, err
		}
		ready := 0
		for i := range pods {
			if pods[i].DeletionTimestamp == nil && podReady(&pods[i]) {
				ready++
			}
		}
		holder, err := leaseHolder(ctx, t)
		if err != nil {
			return false, err
		}
		return ready == 2 && holder != "" && !strings.HasPrefix(holder, leader+"_"), nil
	})
}

// leaderPod returns the name of the manager pod holding the Lease.
func leaderPod(t *testing.T, ctx context.Context, managers []corev1.Pod) string {
	t.Helper()
	holder, err := leaseHolder(ctx, t)
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range managers {
		// The identity is "<host name>_<uuid>", and a pod's host name is its name.
		if strings.HasPrefix(holder, pod.Name+"_") {
			return pod.Name
		}
	}
	t.Fatalf("the Lease is held by %q, none of the manager pods", holder)
	return ""
}

func leaseHolder(ctx context.Context, t *testing.T) (string, error) {
	lease, err := clientset(t).CoordinationV1().Leases(cluster.InClusterNamespace).Get(ctx, cluster.InClusterManager, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return ptr.Deref(lease.Spec.HolderIdentity, ""), nil
}
