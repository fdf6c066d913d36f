package framework_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// requireKruiseManager skips the test when the release's kruise-manager has not been built:
// it is built on demand (hack/build-kruise.sh, minutes the first time), not by `make
// test-servers`.
func requireKruiseManager(t *testing.T, release framework.KruiseRelease) {
	t.Helper()
	var missing *framework.MissingBinariesError
	if _, err := framework.ToolPath(release.ManagerBinary()); errors.As(err, &missing) {
		t.Skipf("%s is not built (hack/build-kruise.sh %s): %v", release.ManagerBinary(), release.ManagerBinary(), err)
	} else if err != nil {
		t.Fatal(err)
	}
}

// kruise-manager started by the framework, with OpenKruise's DaemonSet CRD alone, runs its
// DaemonSet controller, which creates the daemon pod of a Ready node, and 1.9's serves its
// conversion webhook (a v1alpha1 DaemonSet is stored as v1beta1, through it; 1.8's CRD has
// v1alpha1 alone). Its other controllers have no CRD and stay idle.
func TestKruiseManagerRunsItsDaemonSetController(t *testing.T) {
	t.Run("1.9", func(t *testing.T) { testKruiseManagerRunsItsDaemonSetController(t, framework.Kruise19) })
	t.Run("1.8", func(t *testing.T) { testKruiseManagerRunsItsDaemonSetController(t, framework.Kruise18) })
}

func testKruiseManagerRunsItsDaemonSetController(t *testing.T, release framework.KruiseRelease) {
	requireKruiseManager(t, release)
	cp := framework.StartTestControlPlane(t, framework.Options{})
	client := cp.Clientset(t)
	ctx, cancel := context.WithTimeout(context.Background(), framework.KruiseManagerStartTimeout+3*time.Minute)
	defer cancel()
	if err := framework.InstallKruiseReleaseManifests(ctx, cp.Config(), release, "DaemonSet"); err != nil {
		t.Fatal(err)
	}
	km := framework.RunKruiseManager(t, cp, framework.KruiseManagerOptions{Release: release, WaitForControllers: []string{"daemonset-controller"}})

	metrics, err := km.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(metrics, `controller_runtime_reconcile_total{controller="daemonset-controller"`) {
		t.Error("kruise-manager's metrics do not show its DaemonSet controller")
	}
	if strings.Contains(metrics, `controller="cloneset-controller"`) {
		t.Error("kruise-manager runs its CloneSet controller without the CloneSet CRD")
	}

	node, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kruise-node"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// kube-apiserver taints a new node not-ready; no node lifecycle controller lifts it here.
	node.Spec.Taints = nil
	if node, err = client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now()}}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	ns := framework.CreateTestNamespace(t, client)
	dynamicClient, err := dynamic.NewForConfig(cp.Config())
	if err != nil {
		t.Fatal(err)
	}
	ds := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1alpha1",
		"kind":       "DaemonSet",
		"metadata":   map[string]any{"name": "agent"},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app": "agent"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "agent"}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "agent", "image": "registry.k8s.io/pause:3.10"}}},
			},
		},
	}}
	daemonSets := schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "daemonsets"}
	if _, err := dynamicClient.Resource(daemonSets).Namespace(ns.Name).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a v1alpha1 DaemonSet (with 1.9, converted to the stored v1beta1 by kruise-manager's webhook): %v", err)
	}
	err = framework.WaitFor(ctx, time.Minute, "kruise-manager to create the daemon pod of "+node.Name, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
		if err != nil {
			return false, err
		}
		for _, pod := range pods.Items {
			owner := metav1.GetControllerOf(&pod)
			affinity, err := json.Marshal(pod.Spec.Affinity)
			if err != nil {
				return false, err
			}
			if owner != nil && owner.Kind == "DaemonSet" && owner.Name == "agent" && strings.Contains(string(affinity), `"`+node.Name+`"`) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// Once it stops, its fail-closed webhooks go with it.
	km.Stop(framework.DefaultStopGracePeriod)
	if err := framework.RemoveKruiseWebhooks(ctx, client); err != nil {
		t.Fatal(err)
	}
	if _, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, framework.KruiseValidatingWebhookConfiguration, metav1.GetOptions{}); err == nil {
		t.Error("the validating configuration survived RemoveKruiseWebhooks")
	}
}
