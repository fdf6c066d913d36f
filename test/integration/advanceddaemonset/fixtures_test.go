package advanceddaemonset

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	kruiseclient "github.com/bosun-dev/client-go/clientset/versioned"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/pkg/webhook/configuration"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

const (
	// controllerUnderTest is the --controllers name of the Advanced DaemonSet controller.
	controllerUnderTest = "advanced-daemonset-controller"

	// strictMaxUnavailableGate counts replacements of unavailable old pods against
	// maxUnavailable.
	strictMaxUnavailableGate = "AdvancedDaemonSetStrictMaxUnavailable"

	// conditionProgressing is the status condition bosun writes where OpenKruise writes none.
	conditionProgressing = appsv1.DaemonSetConditionType("Progressing")
	reasonRollingUpdate  = "RollingUpdate"
	reasonComplete       = "RolloutComplete"
	reasonPaused         = "RolloutPaused"

	// Event reasons, checked verbatim: users and tools filter on them.
	eventFailedDaemonPod    = "FailedDaemonPod"
	eventUpdatedPodInPlace  = "SuccessfulUpdatePodInPlace"
	kindDaemonSet           = "DaemonSet"
	partitionedScalingLabel = appsv1alpha1.ProgressiveCreatePodAnnotation

	// nodeOwnerLabel marks the Nodes a test made with its namespace: Nodes are cluster-scoped
	// and the controller of every later test would otherwise see them.
	nodeOwnerLabel = "bosun.dev/integration-test-namespace"

	// image1..image4 are successive images of a DaemonSet's container.
	image1 = "registry.example/agent:1.0"
	image2 = "registry.example/agent:2.0"
	image3 = "registry.example/agent:3.0"
	image4 = "registry.example/agent:4.0"

	// testTimeout bounds one test; waitTimeout one awaited state. Generous: the machine is
	// small and shared, and a healthy run is far quicker.
	testTimeout = 5 * time.Minute
	waitTimeout = 2 * time.Minute

	// idlePeriod is how long nothing may write to the test namespace before a test checks
	// that something did NOT happen: by then the controller has acted on all it saw.
	idlePeriod = 2 * time.Second
)

// testEnv is what every test works with: a context bounded by testTimeout, the shared
// control plane, admin clients (core, bosun's typed API, dynamic), a fresh namespace and
// the audit events logged since the test began.
type testEnv struct {
	ctx     context.Context
	cp      *framework.ControlPlane
	client  kubernetes.Interface
	kruise  kruiseclient.Interface
	dynamic dynamic.Interface
	ns      string
	audit   *framework.AuditTail
}

// setup prepares a test. When the test ends — after its manager has stopped, since it is
// started later — the webhook configurations the manager wrote are deleted (they fail
// closed, and nothing answers them any more), then every DaemonSet, pod, revision and Node
// of the test, so that the managers of later tests, which watch the whole cluster, do not
// work on them: without a namespace controller or garbage collector they would stay.
func setup(t *testing.T) *testEnv {
	t.Helper()
	cp := framework.SharedControlPlane(t)
	audit := framework.NewAuditTail(t, cp)
	client := cp.Clientset(t)
	kruise, err := kruiseclient.NewForConfig(cp.Config())
	if err != nil {
		t.Fatalf("creating bosun's clientset: %v", err)
	}
	dyn, err := dynamic.NewForConfig(cp.Config())
	if err != nil {
		t.Fatalf("creating a dynamic client: %v", err)
	}
	ns := framework.CreateTestNamespace(t, client).Name
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	e := &testEnv{ctx: ctx, cp: cp, client: client, kruise: kruise, dynamic: dyn, ns: ns, audit: audit}
	t.Cleanup(func() { e.removeWorkloads(t) })
	return e
}

// startManager runs bosun-controller-manager with only the Advanced DaemonSet controller,
// its admission webhooks and the given --feature-gates (none when empty) until the test ends.
func (e *testEnv) startManager(t *testing.T, featureGates string) *framework.ControllerManager {
	t.Helper()
	return framework.StartBosunControllerManager(t, e.cp, framework.ControllerManagerOptions{
		Controllers:  controllerUnderTest,
		Webhooks:     true,
		FeatureGates: featureGates,
	})
}

// removeWorkloads deletes the webhook configurations, then the namespace's DaemonSets,
// pods and ControllerRevisions (finalizers and grace periods included) and the test's Nodes.
func (e *testEnv) removeWorkloads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admission := e.client.AdmissionregistrationV1()
	if err := admission.MutatingWebhookConfigurations().Delete(ctx, configuration.MutatingName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("cleanup: deleting %s: %v", configuration.MutatingName, err)
	}
	if err := admission.ValidatingWebhookConfigurations().Delete(ctx, configuration.ValidatingName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("cleanup: deleting %s: %v", configuration.ValidatingName, err)
	}
	dropFinalizers := []byte(`{"metadata":{"finalizers":null}}`)
	dsList, err := e.kruise.AppsV1alpha1().DaemonSets(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Errorf("cleanup: listing DaemonSets: %v", err)
	} else {
		for _, ds := range dsList.Items {
			if len(ds.Finalizers) > 0 {
				_, err := e.kruise.AppsV1alpha1().DaemonSets(e.ns).Patch(ctx, ds.Name, types.MergePatchType, dropFinalizers, metav1.PatchOptions{})
				if err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("cleanup: releasing DaemonSet %s: %v", ds.Name, err)
				}
			}
		}
	}
	if err := e.kruise.AppsV1alpha1().DaemonSets(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Errorf("cleanup: deleting DaemonSets: %v", err)
	}
	podList, err := e.client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Errorf("cleanup: listing pods: %v", err)
	} else {
		for _, pod := range podList.Items {
			if len(pod.Finalizers) > 0 {
				_, err := e.client.CoreV1().Pods(e.ns).Patch(ctx, pod.Name, types.MergePatchType, dropFinalizers, metav1.PatchOptions{})
				if err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("cleanup: releasing pod %s: %v", pod.Name, err)
				}
			}
		}
	}
	now := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	if err := e.client.CoreV1().Pods(e.ns).DeleteCollection(ctx, now, metav1.ListOptions{}); err != nil {
		t.Errorf("cleanup: deleting pods: %v", err)
	}
	if err := e.client.AppsV1().ControllerRevisions(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Errorf("cleanup: deleting ControllerRevisions: %v", err)
	}
	if err := e.client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: nodeOwnerLabel + "=" + e.ns}); err != nil {
		t.Errorf("cleanup: deleting Nodes: %v", err)
	}
}

// startKubelet marks every pod Running and Ready as it appears, as a kubelet would once its
// containers pass their probes — except pods one of whose readiness gates is explicitly
// False (an in-place update in progress), which a kubelet would not report ready.
func (e *testEnv) startKubelet(t *testing.T) {
	t.Helper()
	framework.StartPodReadierForTest(t, e.ctx, e.client, e.ns, 2, noReadinessGateFalse)
}

func noReadinessGateFalse(pod *corev1.Pod) bool {
	for _, gate := range pod.Spec.ReadinessGates {
		if c := podCondition(pod, gate.ConditionType); c != nil && c.Status == corev1.ConditionFalse {
			return false
		}
	}
	return true
}

// ---- Builders ----

// newDS is a DaemonSet whose selector and template labels are app=<name>, with one
// container running image1 and nothing else set: the webhook defaults the rest.
func newDS(name string) *appsv1alpha1.DaemonSet {
	selector := map[string]string{"app": name}
	return &appsv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: copyMap(selector)},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image1}}},
			},
		},
	}
}

// rollingUpdate sets the DaemonSet's strategy to RollingUpdate and returns its (non-nil)
// parameters for the caller to fill in.
func rollingUpdate(ds *appsv1alpha1.DaemonSet) *appsv1alpha1.RollingUpdateDaemonSet {
	ds.Spec.UpdateStrategy.Type = appsv1alpha1.RollingUpdateDaemonSetStrategyType
	if ds.Spec.UpdateStrategy.RollingUpdate == nil {
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1alpha1.RollingUpdateDaemonSet{}
	}
	return ds.Spec.UpdateStrategy.RollingUpdate
}

func copyMap(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// ---- Nodes ----

// nodeName is the name of the test's node with that suffix; names sort like the suffixes.
func (e *testEnv) nodeName(suffix string) string { return e.ns + "-" + suffix }

// createNode creates a Ready node named after suffix, with the changes of opts applied
// (labels, taints, unschedulable, conditions), and returns it. kube-apiserver taints every
// new Node not-ready:NoSchedule (the node lifecycle controller would lift it once the
// kubelet reports Ready; none runs here), so the taints are written again after creation
// to be exactly those asked for.
func (e *testEnv) createNode(t *testing.T, suffix string, opts ...func(*corev1.Node)) *corev1.Node {
	t.Helper()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: e.nodeName(suffix), Labels: map[string]string{nodeOwnerLabel: e.ns}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}}},
	}
	for _, opt := range opts {
		opt(node)
	}
	taints, status := node.Spec.Taints, node.Status
	if _, err := e.client.CoreV1().Nodes().Create(e.ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating node %s: %v", node.Name, err)
	}
	e.updateNode(t, node.Name, func(n *corev1.Node) { n.Spec.Taints = taints })
	var updated *corev1.Node
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := e.client.CoreV1().Nodes().Get(e.ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status = status
		updated, err = e.client.CoreV1().Nodes().UpdateStatus(e.ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("writing the status of node %s: %v", node.Name, err)
	}
	return updated
}

// createNodes creates Ready nodes for the suffixes and returns their names, in order.
func (e *testEnv) createNodes(t *testing.T, suffixes ...string) []string {
	t.Helper()
	var names []string
	for _, s := range suffixes {
		names = append(names, e.createNode(t, s).Name)
	}
	return names
}

func withLabels(labels map[string]string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		for k, v := range labels {
			n.Labels[k] = v
		}
	}
}

func withTaint(key string, effect corev1.TaintEffect) func(*corev1.Node) {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Value: "true", Effect: effect})
	}
}

// updateNode applies mutate to the live node's metadata or spec, retrying on conflicts.
func (e *testEnv) updateNode(t *testing.T, name string, mutate func(*corev1.Node)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := e.client.CoreV1().Nodes().Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(node)
		_, err = e.client.CoreV1().Nodes().Update(e.ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("updating node %s: %v", name, err)
	}
}

// ---- Pod predicates ----

// nodeOf returns the node a DaemonSet pod is meant for: spec.nodeName, else the single
// node its required affinity term names (no scheduler binds pods here).
func nodeOf(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	if names := affinityNodeNames(pod); len(names) == 1 {
		return names[0]
	}
	return ""
}

// affinityNodeNames returns the values of the metadata.name In [...] field requirements
// of the pod's required node affinity.
func affinityNodeNames(pod *corev1.Pod) []string {
	if pod.Spec.Affinity == nil || pod.Spec.Affinity.NodeAffinity == nil ||
		pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	var names []string
	for _, term := range pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, req := range term.MatchFields {
			if req.Key == "metadata.name" && req.Operator == corev1.NodeSelectorOpIn {
				names = append(names, req.Values...)
			}
		}
	}
	return names
}

func hashOf(pod *corev1.Pod) string { return pod.Labels[appsv1alpha1.ControllerRevisionHashLabelKey] }

func controlledBy(pod *corev1.Pod, uid types.UID) bool {
	ref := metav1.GetControllerOf(pod)
	return ref != nil && ref.UID == uid
}

// daemonPods returns the active pods controlled by uid, sorted by name.
func daemonPods(pods []corev1.Pod, uid types.UID) []corev1.Pod {
	var out []corev1.Pod
	for i := range pods {
		if podutil.IsPodActive(&pods[i]) && controlledBy(&pods[i], uid) {
			out = append(out, pods[i])
		}
	}
	return out
}

// byNode groups pods by nodeOf.
func byNode(pods []corev1.Pod) map[string][]corev1.Pod {
	out := map[string][]corev1.Pod{}
	for _, pod := range pods {
		out[nodeOf(&pod)] = append(out[nodeOf(&pod)], pod)
	}
	return out
}

// onePerNode reports whether pods are exactly one per node of nodes (none elsewhere), each
// with hash when hash is not empty.
func onePerNode(pods []corev1.Pod, nodes []string, hash string) bool {
	if len(pods) != len(nodes) {
		return false
	}
	grouped := byNode(pods)
	for _, node := range nodes {
		if len(grouped[node]) != 1 || (hash != "" && hashOf(&grouped[node][0]) != hash) {
			return false
		}
	}
	return true
}

func podCondition(pod *corev1.Pod, condType corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == condType {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func dsCondition(ds *appsv1alpha1.DaemonSet, condType appsv1.DaemonSetConditionType) *appsv1.DaemonSetCondition {
	for i := range ds.Status.Conditions {
		if ds.Status.Conditions[i].Type == condType {
			return &ds.Status.Conditions[i]
		}
	}
	return nil
}

// nodesWithoutAvailablePod counts the nodes of nodes where no active pod has been Ready
// for minReadySeconds at now.
func nodesWithoutAvailablePod(pods []*corev1.Pod, nodes []string, minReadySeconds int32, now time.Time) int {
	available := map[string]bool{}
	for _, pod := range pods {
		if podutil.IsPodActive(pod) && podutil.IsPodAvailable(pod, minReadySeconds, metav1.NewTime(now)) {
			available[nodeOf(pod)] = true
		}
	}
	n := 0
	for _, node := range nodes {
		if !available[node] {
			n++
		}
	}
	return n
}

func podNames(pods []corev1.Pod) []string {
	names := make([]string, 0, len(pods))
	for _, pod := range pods {
		names = append(names, pod.Name)
	}
	return names
}

func podUIDs(pods []corev1.Pod) map[string]types.UID {
	out := map[string]types.UID{}
	for _, pod := range pods {
		out[nodeOf(&pod)] = pod.UID
	}
	return out
}

// ---- API actions (each fails the test on error) ----

func (e *testEnv) createDS(t *testing.T, ds *appsv1alpha1.DaemonSet) *appsv1alpha1.DaemonSet {
	t.Helper()
	created, err := e.kruise.AppsV1alpha1().DaemonSets(e.ns).Create(e.ctx, ds, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating DaemonSet %s: %v", ds.Name, err)
	}
	return created
}

func (e *testEnv) getDS(t *testing.T, name string) *appsv1alpha1.DaemonSet {
	t.Helper()
	ds, err := e.kruise.AppsV1alpha1().DaemonSets(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting DaemonSet %s: %v", name, err)
	}
	return ds
}

// tryUpdateDS applies mutate to the live DaemonSet and updates it, retrying on conflicts.
func (e *testEnv) tryUpdateDS(name string, mutate func(*appsv1alpha1.DaemonSet)) (*appsv1alpha1.DaemonSet, error) {
	var updated *appsv1alpha1.DaemonSet
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ds, err := e.kruise.AppsV1alpha1().DaemonSets(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(ds)
		updated, err = e.kruise.AppsV1alpha1().DaemonSets(e.ns).Update(e.ctx, ds, metav1.UpdateOptions{})
		return err
	})
	return updated, err
}

func (e *testEnv) updateDS(t *testing.T, name string, mutate func(*appsv1alpha1.DaemonSet)) *appsv1alpha1.DaemonSet {
	t.Helper()
	updated, err := e.tryUpdateDS(name, mutate)
	if err != nil {
		t.Fatalf("updating DaemonSet %s: %v", name, err)
	}
	return updated
}

// setImage changes the image of the DaemonSet's container: a new revision.
func (e *testEnv) setImage(t *testing.T, name, image string) *appsv1alpha1.DaemonSet {
	t.Helper()
	return e.updateDS(t, name, func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = image })
}

func (e *testEnv) createPod(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	created, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
	return created
}

func (e *testEnv) deletePod(t *testing.T, name string) {
	t.Helper()
	if err := e.client.CoreV1().Pods(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting pod %s: %v", name, err)
	}
}

// updatePod applies mutate to the live pod's metadata or spec, retrying on conflicts.
func (e *testEnv) updatePod(t *testing.T, name string, mutate func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	return e.writePod(t, name, mutate, false)
}

// updatePodStatus applies mutate to the live pod's status, as a kubelet would.
func (e *testEnv) updatePodStatus(t *testing.T, name string, mutate func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	return e.writePod(t, name, mutate, true)
}

func (e *testEnv) writePod(t *testing.T, name string, mutate func(*corev1.Pod), status bool) *corev1.Pod {
	t.Helper()
	pods := e.client.CoreV1().Pods(e.ns)
	var updated *corev1.Pod
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := pods.Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(pod)
		if status {
			updated, err = pods.UpdateStatus(e.ctx, pod, metav1.UpdateOptions{})
		} else {
			updated, err = pods.Update(e.ctx, pod, metav1.UpdateOptions{})
		}
		return err
	})
	if err != nil {
		t.Fatalf("updating pod %s (status: %v): %v", name, status, err)
	}
	return updated
}

// listPods returns the namespace's pods, sorted by name.
func (e *testEnv) listPods(t *testing.T) []corev1.Pod {
	t.Helper()
	pods, err := e.tryListPods(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return pods
}

func (e *testEnv) tryListPods(ctx context.Context) ([]corev1.Pod, error) {
	list, err := e.client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pods of %s: %w", e.ns, err)
	}
	slices.SortFunc(list.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return list.Items, nil
}

// revisions returns the namespace's ControllerRevisions by their controller-revision-hash.
func (e *testEnv) revisions(t *testing.T) map[string]appsv1.ControllerRevision {
	t.Helper()
	list, err := e.client.AppsV1().ControllerRevisions(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing ControllerRevisions: %v", err)
	}
	out := map[string]appsv1.ControllerRevision{}
	for _, rev := range list.Items {
		out[rev.Labels[appsv1alpha1.ControllerRevisionHashLabelKey]] = rev
	}
	return out
}

// dsEvents returns the events of reason recorded on the DaemonSet.
func (e *testEnv) dsEvents(t *testing.T, name, reason string) []corev1.Event {
	t.Helper()
	list, err := e.client.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=" + kindDaemonSet + ",involvedObject.name=" + name + ",reason=" + reason,
	})
	if err != nil {
		t.Fatalf("listing events of DaemonSet %s: %v", name, err)
	}
	return list.Items
}

// ---- Waiting ----

// waitForDS waits until cond holds for the live DaemonSet and returns it.
func (e *testEnv) waitForDS(t *testing.T, name, what string, cond func(*appsv1alpha1.DaemonSet) bool) *appsv1alpha1.DaemonSet {
	t.Helper()
	var last *appsv1alpha1.DaemonSet
	err := framework.WaitFor(e.ctx, waitTimeout, what, func(ctx context.Context) (bool, error) {
		ds, err := e.kruise.AppsV1alpha1().DaemonSets(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil // retried; a persistent error ends in the timeout
		}
		last = ds
		return cond(ds), nil
	})
	if err != nil {
		t.Fatalf("DaemonSet %s: %v; last: %s", name, err, dsString(last))
	}
	return last
}

// waitForPods waits until cond holds for the namespace's pods (sorted by name) and
// returns them.
func (e *testEnv) waitForPods(t *testing.T, what string, cond func([]corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	var last []corev1.Pod
	err := framework.WaitFor(e.ctx, waitTimeout, what, func(ctx context.Context) (bool, error) {
		pods, err := e.tryListPods(ctx)
		if err != nil {
			return false, nil
		}
		last = pods
		return cond(pods), nil
	})
	if err != nil {
		t.Fatalf("%v; last pods: %s", err, describePods(last))
	}
	return last
}

// waitForDaemonPods waits until the DaemonSet runs exactly one active pod on each of
// nodes and none elsewhere, each with hash unless hash is empty, and returns them.
func (e *testEnv) waitForDaemonPods(t *testing.T, ds *appsv1alpha1.DaemonSet, nodes []string, hash string) []corev1.Pod {
	t.Helper()
	what := fmt.Sprintf("one pod of DaemonSet %s on each of %v", ds.Name, nodes)
	if hash != "" {
		what += " with hash " + hash
	}
	pods := e.waitForPods(t, what, func(pods []corev1.Pod) bool {
		return onePerNode(daemonPods(pods, ds.UID), nodes, hash)
	})
	return daemonPods(pods, ds.UID)
}

// waitForSettled waits until the DaemonSet's status reports, for its current generation,
// every one of nodes desired, scheduled, updated and available, and until its pods are
// one per node with the current hash. It returns the DaemonSet and its pods.
func (e *testEnv) waitForSettled(t *testing.T, name string, nodes []string) (*appsv1alpha1.DaemonSet, []corev1.Pod) {
	t.Helper()
	n := int32(len(nodes))
	ds := e.waitForDS(t, name, fmt.Sprintf("%d pods desired, scheduled, updated and available for the current generation", n), func(ds *appsv1alpha1.DaemonSet) bool {
		s := ds.Status
		return s.ObservedGeneration == ds.Generation && s.DaemonSetHash != "" && s.DesiredNumberScheduled == n &&
			s.CurrentNumberScheduled == n && s.UpdatedNumberScheduled == n && s.NumberAvailable == n && s.NumberMisscheduled == 0
	})
	return ds, e.waitForDaemonPods(t, ds, nodes, ds.Status.DaemonSetHash)
}

// waitForNewHash waits until the DaemonSet's status names a revision other than old for
// its current generation, and returns it.
func (e *testEnv) waitForNewHash(t *testing.T, name, old string) string {
	t.Helper()
	ds := e.waitForDS(t, name, "status.daemonSetHash to change from "+old, func(ds *appsv1alpha1.DaemonSet) bool {
		return ds.Status.ObservedGeneration == ds.Generation && ds.Status.DaemonSetHash != "" && ds.Status.DaemonSetHash != old
	})
	return ds.Status.DaemonSetHash
}

// waitForIdle waits until nothing (the controller included) has written to the test
// namespace for idlePeriod. Tests call it before checking that something did NOT happen.
func (e *testEnv) waitForIdle(t *testing.T) {
	t.Helper()
	start := time.Now()
	err := framework.WaitFor(e.ctx, waitTimeout, "the namespace to see no writes for "+idlePeriod.String(), func(context.Context) (bool, error) {
		writes, err := e.requests(func(ev *auditv1.Event) bool {
			return isWrite(ev.Verb) && ev.ObjectRef != nil && ev.ObjectRef.Namespace == e.ns
		})
		if err != nil {
			return false, err
		}
		last := start
		for _, w := range writes {
			if w.completed.After(last) {
				last = w.completed
			}
		}
		return time.Since(last) >= idlePeriod, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func isWrite(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

func dsString(ds *appsv1alpha1.DaemonSet) string {
	if ds == nil {
		return "<none>"
	}
	spec, _ := json.Marshal(ds.Spec.UpdateStrategy)
	status, _ := json.Marshal(ds.Status)
	return fmt.Sprintf("generation %d updateStrategy %s status %s", ds.Generation, spec, status)
}

func describePods(pods []corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d pods", len(pods))
	for i, pod := range pods {
		if i == 20 {
			b.WriteString(" ...")
			break
		}
		owner := "<orphan>"
		if ref := metav1.GetControllerOf(&pod); ref != nil {
			owner = ref.Name
		}
		fmt.Fprintf(&b, "; %s (owner %s, node %q, hash %q, phase %s, ready %v, deleting %v)", pod.Name, owner, nodeOf(&pod),
			hashOf(&pod), pod.Status.Phase, podutil.IsPodReady(&pod), pod.DeletionTimestamp != nil)
	}
	return b.String()
}

// ---- Observing every change (for "never more than N" properties) ----

// observePods runs an informer on the namespace's pods until the test ends and calls
// onChange with all pods known after each add, update and delete, in the order the API
// server made them. It returns once the informer has synced, after one call with the pods
// that existed then: the adds of the initial list are not changes, and the partial states
// they pass through are not reported.
func (e *testEnv) observePods(t *testing.T, onChange func(pods []*corev1.Pod)) {
	t.Helper()
	lw := &cache.ListWatch{
		ListFunc: func(opts metav1.ListOptions) (runtime.Object, error) {
			return e.client.CoreV1().Pods(e.ns).List(e.ctx, opts)
		},
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) {
			return e.client.CoreV1().Pods(e.ns).Watch(e.ctx, opts)
		},
	}
	var mu sync.Mutex
	live := false
	known := map[types.UID]*corev1.Pod{}
	notify := func() {
		if !live {
			return
		}
		pods := make([]*corev1.Pod, 0, len(known))
		for _, pod := range known {
			pods = append(pods, pod)
		}
		onChange(pods)
	}
	set := func(obj any) {
		if pod, ok := obj.(*corev1.Pod); ok {
			mu.Lock()
			defer mu.Unlock()
			known[pod.UID] = pod
			notify()
		}
	}
	runInformer(t, lw, &corev1.Pod{}, cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				mu.Lock()
				defer mu.Unlock()
				delete(known, pod.UID)
				notify()
			}
		},
	})
	mu.Lock()
	defer mu.Unlock()
	live = true
	notify()
}

// observeDS runs an informer on the DaemonSet until the test ends and calls onChange with
// every version of it.
func (e *testEnv) observeDS(t *testing.T, name string, onChange func(*appsv1alpha1.DaemonSet)) {
	t.Helper()
	field := "metadata.name=" + name
	lw := &cache.ListWatch{
		ListFunc: func(opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = field
			return e.kruise.AppsV1alpha1().DaemonSets(e.ns).List(e.ctx, opts)
		},
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = field
			return e.kruise.AppsV1alpha1().DaemonSets(e.ns).Watch(e.ctx, opts)
		},
	}
	var mu sync.Mutex
	seen := func(obj any) {
		if ds, ok := obj.(*appsv1alpha1.DaemonSet); ok {
			mu.Lock()
			defer mu.Unlock()
			onChange(ds)
		}
	}
	runInformer(t, lw, &appsv1alpha1.DaemonSet{}, cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, obj any) { seen(obj) },
	})
}

// runInformer runs an informer with handler until the test ends, and returns once the
// handler has been given the initial list.
func runInformer(t *testing.T, lw cache.ListerWatcher, objType runtime.Object, handler cache.ResourceEventHandler) {
	t.Helper()
	informer := cache.NewSharedIndexInformer(lw, objType, 0, cache.Indexers{})
	registration, err := informer.AddEventHandler(handler)
	if err != nil {
		t.Fatalf("adding an event handler: %v", err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		informer.Run(stop)
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
	})
	if !cache.WaitForCacheSync(stop, informer.HasSynced, registration.HasSynced) {
		t.Fatal("the informer did not sync")
	}
}

// maxRecorder keeps the largest value it was given, safely across goroutines.
type maxRecorder struct {
	mu   sync.Mutex
	max  int
	note string
}

func (r *maxRecorder) record(v int, note func() string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v > r.max {
		r.max, r.note = v, note()
	}
}

func (r *maxRecorder) get() (int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.max, r.note
}

func describePodPtrs(pods []*corev1.Pod) string {
	list := make([]corev1.Pod, 0, len(pods))
	for _, p := range pods {
		list = append(list, *p)
	}
	slices.SortFunc(list, func(a, b corev1.Pod) int { return strings.Compare(nodeOf(&a), nodeOf(&b)) })
	return describePods(list)
}

// ---- Audit log ----

// request is one completed API request, as the audit log saw it.
type request struct {
	verb, resource, subresource, name string
	code                              int32
	// received and completed are the API server's times for the request's arrival and
	// its response.
	received, completed time.Time
}

// requests returns the completed requests logged since the test began for which match
// holds, ordered by arrival.
func (e *testEnv) requests(match func(*auditv1.Event) bool) ([]request, error) {
	events, err := e.audit.Read()
	if err != nil {
		return nil, err
	}
	var out []request
	for i := range events {
		ev := &events[i]
		if !match(ev) {
			continue
		}
		r := request{verb: ev.Verb, received: ev.RequestReceivedTimestamp.Time, completed: ev.StageTimestamp.Time}
		if ev.ObjectRef != nil {
			r.resource, r.subresource, r.name = ev.ObjectRef.Resource, ev.ObjectRef.Subresource, ev.ObjectRef.Name
		}
		if ev.ResponseStatus != nil {
			r.code = ev.ResponseStatus.Code
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b request) int { return a.received.Compare(b.received) })
	return out, nil
}

// podRequests returns the successful requests with verb on pods (not their subresources)
// of the test namespace.
func (e *testEnv) podRequests(t *testing.T, verb string) []request {
	t.Helper()
	reqs, err := e.requests(func(ev *auditv1.Event) bool {
		return ev.ObjectRef != nil && ev.ObjectRef.Namespace == e.ns && ev.ObjectRef.Resource == "pods" &&
			ev.ObjectRef.Subresource == "" && ev.Verb == verb && ev.ResponseStatus != nil && ev.ResponseStatus.Code < 300
	})
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}
