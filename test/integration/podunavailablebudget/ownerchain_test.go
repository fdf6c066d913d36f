package podunavailablebudget

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// rolloutCRD is a Rollout-style workload, as Argo Rollouts' or OpenKruise Rollout's: it
// controls ReplicaSets, which control the pods, and has a /scale subresource. It declares
// no status.selector, so that nothing but the owner chain leads from it to its pods.
const rolloutCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: rollouts.test.bosun.dev
spec:
  group: test.bosun.dev
  names:
    kind: Rollout
    listKind: RolloutList
    plural: rollouts
    singular: rollout
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas:
                type: integer
                format: int32
          status:
            type: object
            properties:
              replicas:
                type: integer
                format: int32
              selector:
                type: string
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.selector
`

var rollouts = schema.GroupVersionResource{Group: "test.bosun.dev", Version: "v1", Resource: "rollouts"}

// Beyond OpenKruise, with PodUnavailableBudgetOwnerChain on: a budget targeting a
// Rollout-style workload covers the pods of the ReplicaSets it controls (OpenKruise finds
// none, so its budget protects nothing), and counts the Rollout's replicas — the top of the
// chain — not the ReplicaSet's. The Rollout wants 5 pods while its ReplicaSet runs 4 (as in
// the middle of a canary step); maxUnavailable 2 leaves 3 that must stay available.
func TestOwnerChain(t *testing.T) {
	e := setup(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rollouts.yaml"), []byte(rolloutCRD), 0o600); err != nil {
		t.Fatal(err)
	}
	// Before the manager starts, so that its discovery knows the kind from the start.
	if err := framework.InstallCRDs(e.Ctx, e.CP.Config(), dir); err != nil {
		t.Fatal(err)
	}
	opts := managerOptions(ownerChainGate + "=true")
	opts.Controllers += ",replicaset"
	e.startManager(t, opts)
	var frozen atomic.Bool
	framework.StartPodReadierForTest(t, e.Ctx, e.Client, e.Namespace, 2, func(*corev1.Pod) bool { return !frozen.Load() })

	rollout, err := e.Dynamic.Resource(rollouts).Namespace(e.Namespace).Create(e.Ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.bosun.dev/v1",
		"kind":       "Rollout",
		"metadata":   map[string]any{"name": "web"},
		"spec":       map[string]any{"replicas": int64(5)},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Rollout web: %v", err)
	}
	rs := newReplicaSet("web-canary", 4, map[string]string{"app": "web"})
	rs.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "test.bosun.dev/v1", Kind: "Rollout", Name: rollout.GetName(), UID: rollout.GetUID(), Controller: ptr.To(true),
	}}
	rs = e.ReplicaSets().Create(t, rs)
	// A Ready pod of the namespace the budget must not count.
	e.Pods().Create(t, newPod("decoy", map[string]string{"app": "decoy"}, nil))
	e.SetPodRunning(t, "decoy", true, time.Time{})

	pods := e.WaitForPods(t, "4 Ready pods of ReplicaSet web-canary", func(pods []corev1.Pod) bool {
		return len(readyPodsOf(pods, rs)) == 4
	})
	names := readyPodsOf(pods, rs)
	frozen.Store(true)

	e.budgets().Create(t, newBudget("web", withTarget("test.bosun.dev/v1", "Rollout", "web"), withMaxUnavailable(intstr.FromInt32(2))))
	e.waitForTagged(t, "web", names...)
	e.waitForSettled(t, "web", counts{total: 5, desired: 3, current: 4, allowed: 1})
	if decoy := e.Pods().Get(t, "decoy"); !untagged(decoy) {
		t.Errorf("pod decoy, outside the Rollout, was tagged: %v", decoy.Annotations)
	}

	framework.MustSucceed(t, "deleting pod "+names[0], e.deletePod(names[0]))
	// The ReplicaSet replaces it, but nothing marks the replacement Ready.
	expectBudgetDenial(t, "deleting pod "+names[1], e.deletePod(names[1]))
}

// readyPodsOf returns the names of the active, Ready pods controlled by rs.
func readyPodsOf(pods []corev1.Pod, rs *appsv1.ReplicaSet) []string {
	var names []string
	for _, pod := range pods {
		if ref := metav1.GetControllerOf(&pod); ref != nil && ref.UID == rs.UID && isActiveReady(&pod) {
			names = append(names, pod.Name)
		}
	}
	return names
}
