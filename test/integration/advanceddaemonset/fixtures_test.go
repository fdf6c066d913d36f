package advanceddaemonset

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
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

// testEnv is what every test works with: the framework's environment (see envOptions).
type testEnv struct{ *framework.Env }

// envOptions give every test a context bounded by testTimeout and the audit events logged
// since it began. When the test ends — after its manager has stopped, since it is started
// later — the webhook configurations the manager wrote are deleted (they fail closed, and
// nothing answers them any more), then every DaemonSet, pod, revision and Node of the test,
// so that the managers of later tests, which watch the whole cluster, do not work on them:
// without a namespace controller or garbage collector they would stay.
var envOptions = framework.EnvOptions{
	Timeout: testTimeout, WaitTimeout: waitTimeout, Audit: true, RemoveWebhookConfigurations: true,
	Remove:     []string{"daemonsets.apps.kruise.io", "pods", "controllerrevisions.apps"},
	PodDetails: podDetails,
}

func setup(t *testing.T) *testEnv {
	t.Helper()
	return &testEnv{framework.NewTestEnv(t, framework.SharedControlPlane(t), envOptions)}
}

// daemonSets are the namespace's Advanced DaemonSets, shown by dsString when a wait fails.
func (e *testEnv) daemonSets() *framework.Objects[*appsv1alpha1.DaemonSet] {
	return e.DaemonSets().DescribedBy(dsString)
}

// startManager runs bosun-controller-manager with only the Advanced DaemonSet controller,
// its admission webhooks and the given --feature-gates (none when empty) until the test ends.
func (e *testEnv) startManager(t *testing.T, featureGates string) *framework.ControllerManager {
	t.Helper()
	return framework.StartBosunControllerManager(t, e.CP, framework.ControllerManagerOptions{
		Controllers:  controllerUnderTest,
		Webhooks:     true,
		FeatureGates: featureGates,
	})
}

// startKubelet marks every pod Running and Ready as it appears, as a kubelet would once its
// containers pass their probes — except pods one of whose readiness gates is explicitly
// False (an in-place update in progress), which a kubelet would not report ready.
func (e *testEnv) startKubelet(t *testing.T) {
	t.Helper()
	e.StartPodReadier(t, 2, noReadinessGateFalse)
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

// createNode creates a Ready node named after suffix (see framework.Env.NodeName), with the
// changes of opts applied (labels, taints, unschedulable, conditions), and returns it; its
// taints are exactly those opts add (see framework.Env.CreateNode).
func (e *testEnv) createNode(t *testing.T, suffix string, opts ...func(*corev1.Node)) *corev1.Node {
	t.Helper()
	node := e.NewNode(suffix, map[string]string{}, time.Now())
	for _, opt := range opts {
		opt(node)
	}
	return e.CreateNode(t, node)
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

func podUIDs(pods []corev1.Pod) map[string]types.UID {
	out := map[string]types.UID{}
	for _, pod := range pods {
		out[nodeOf(&pod)] = pod.UID
	}
	return out
}

// ---- API actions (each fails the test on error) ----

// setImage changes the image of the DaemonSet's container: a new revision.
func (e *testEnv) setImage(t *testing.T, name, image string) *appsv1alpha1.DaemonSet {
	t.Helper()
	return e.daemonSets().Update(t, name, func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = image })
}

// revisions returns the namespace's ControllerRevisions by their controller-revision-hash.
func (e *testEnv) revisions(t *testing.T) map[string]appsv1.ControllerRevision {
	t.Helper()
	list, err := e.Client.AppsV1().ControllerRevisions(e.Namespace).List(e.Ctx, metav1.ListOptions{})
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
	return slices.DeleteFunc(e.GetEvents(t, e.Namespace, kindDaemonSet, name), func(ev corev1.Event) bool { return ev.Reason != reason })
}

// ---- Waiting ----

// waitForDaemonPods waits until the DaemonSet runs exactly one active pod on each of
// nodes and none elsewhere, each with hash unless hash is empty, and returns them.
func (e *testEnv) waitForDaemonPods(t *testing.T, ds *appsv1alpha1.DaemonSet, nodes []string, hash string) []corev1.Pod {
	t.Helper()
	what := fmt.Sprintf("one pod of DaemonSet %s on each of %v", ds.Name, nodes)
	if hash != "" {
		what += " with hash " + hash
	}
	pods := e.WaitForPods(t, what, func(pods []corev1.Pod) bool {
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
	ds := e.daemonSets().WaitFor(t, name, fmt.Sprintf("%d pods desired, scheduled, updated and available for the current generation", n), func(ds *appsv1alpha1.DaemonSet) bool {
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
	ds := e.daemonSets().WaitFor(t, name, "status.daemonSetHash to change from "+old, func(ds *appsv1alpha1.DaemonSet) bool {
		return ds.Status.ObservedGeneration == ds.Generation && ds.Status.DaemonSetHash != "" && ds.Status.DaemonSetHash != old
	})
	return ds.Status.DaemonSetHash
}

func dsString(ds *appsv1alpha1.DaemonSet) string {
	if ds == nil {
		return "<none>"
	}
	spec, _ := json.Marshal(ds.Spec.UpdateStrategy)
	status, _ := json.Marshal(ds.Status)
	return fmt.Sprintf("generation %d updateStrategy %s status %s", ds.Generation, spec, status)
}

func describePods(pods []corev1.Pod) string { return framework.DescribePodsWith(pods, podDetails) }

// podDetails is what describePods says of a DaemonSet pod beyond what every pod has.
func podDetails(pod *corev1.Pod) string {
	return fmt.Sprintf("meant for node %q, hash %q", nodeOf(pod), hashOf(pod))
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
			return e.Client.CoreV1().Pods(e.Namespace).List(e.Ctx, opts)
		},
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) {
			return e.Client.CoreV1().Pods(e.Namespace).Watch(e.Ctx, opts)
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
			return e.Bosun.AppsV1alpha1().DaemonSets(e.Namespace).List(e.Ctx, opts)
		},
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = field
			return e.Bosun.AppsV1alpha1().DaemonSets(e.Namespace).Watch(e.Ctx, opts)
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
	framework.RunInformer(t, cache.NewSharedIndexInformer(lw, objType, 0, cache.Indexers{}), handler)
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

// podRequests returns the successful requests with verb on pods (not their subresources)
// of the test namespace.
func (e *testEnv) podRequests(t *testing.T, verb string) []framework.Request {
	t.Helper()
	reqs, err := e.Requests(func(ev *auditv1.Event) bool {
		return ev.ObjectRef != nil && ev.ObjectRef.Namespace == e.Namespace && ev.ObjectRef.Resource == "pods" &&
			ev.ObjectRef.Subresource == "" && ev.Verb == verb && ev.ResponseStatus != nil && ev.ResponseStatus.Code < 300
	})
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}
