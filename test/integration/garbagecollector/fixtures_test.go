package garbagecollector

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

const (
	// testTimeout bounds one test.
	testTimeout = 5 * time.Minute
	// waitTimeout bounds one awaited state. The collector needs well under a second for
	// most; the machines are small and shared.
	waitTimeout = time.Minute
	// stressTimeout bounds the settling of TestStressingCascadingDeletion, as upstream's.
	stressTimeout = 300 * time.Second
	// observationWindow is the least time a test watches for something that must NOT
	// happen. With client-go's per-item backoff (5 ms doubling) a collector retrying an item
	// in a loop sends about ten requests in that time.
	observationWindow = 3 * time.Second

	// unknownFinalizer holds a deleted object in place; no controller knows it.
	unknownFinalizer = "x/y"

	finalizerOrphan     = metav1.FinalizerOrphanDependents // "orphan"
	finalizerForeground = metav1.FinalizerDeleteDependents // "foregroundDeletion"
)

var (
	background = metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}
	foreground = metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}
	orphan     = metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}

	widgetGVR = schema.GroupVersionResource{Group: "gc.integration.bosun.dev", Version: "v1", Resource: "widgets"}
)

// env is what every test works with: the framework's environment, with a context bounded
// by testTimeout and (on the shared control plane) the audit events logged since the test
// began, for the test t.
type env struct {
	*framework.Env
	t  *testing.T
	gc *collector // set by startCollector

	canaries int
}

// setup prepares a test on the package's shared control plane. When the test ends, after its
// collector has stopped (it starts later), its namespaces are emptied of everything the tests
// create there, finalizers included, so that the collectors of later tests (which watch every
// namespace, and no namespace controller ever empties a deleted one) have nothing left to do
// with them.
func setup(t *testing.T) *env {
	t.Helper()
	return newEnv(t, framework.SharedControlPlane(t), framework.EnvOptions{
		Audit: true,
		Remove: []string{
			"pods", "replicationcontrollers", "configmaps", "secrets", "deployments.apps", "replicasets.apps",
			widgetGVR.GroupResource().String(),
		},
	})
}

// setupOn prepares a test on a control plane of its own, which the test throws away.
func setupOn(t *testing.T, cp *framework.ControlPlane) *env {
	t.Helper()
	return newEnv(t, cp, framework.EnvOptions{})
}

func newEnv(t *testing.T, cp *framework.ControlPlane, opts framework.EnvOptions) *env {
	t.Helper()
	opts.Timeout, opts.WaitTimeout = testTimeout, waitTimeout
	e := framework.NewTestEnv(t, cp, opts)
	return &env{Env: e, t: t}
}

// startCollector starts the collector under test for the rest of the test.
func (e *env) startCollector(opts collectorOptions) *collector {
	e.t.Helper()
	e.gc = startCollector(e.t, e.CP, opts)
	return e.gc
}

// newNamespace creates a further namespace of the test, emptied when the test ends.
func (e *env) newNamespace() string {
	e.t.Helper()
	return e.NewNamespace(e.t)
}

// ---- Builders ----

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example/app:1"}}}
}

// newPod is an unscheduled pod: without a kubelet it stays Pending, and the API server deletes
// it at once unless a finalizer holds it.
func newPod(name string, refs ...metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: refs}, Spec: podSpec()}
}

// heldPod is newPod held by unknownFinalizer once deleted.
func heldPod(name string, refs ...metav1.OwnerReference) *corev1.Pod {
	pod := newPod(name, refs...)
	pod.Finalizers = []string{unknownFinalizer}
	return pod
}

// newRC is a core v1 ReplicationController; no controller acts on it in these tests.
func newRC(name string) *corev1.ReplicationController {
	labels := map[string]string{"name": "test"}
	return &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ReplicationControllerSpec{
			Selector: labels,
			Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec()},
		},
	}
}

// newReplicaSet is an apps/v1 ReplicaSet selecting app=<name>.
func newReplicaSet(name string, replicas int32) *appsv1.ReplicaSet {
	labels := map[string]string{"app": name}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec()},
		},
	}
}

// newConfigMap is a ConfigMap with the given owners.
func newConfigMap(name string, refs ...metav1.OwnerReference) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: refs}}
}

// newWidget is a Widget custom resource with the given owners.
func newWidget(name string, refs ...metav1.OwnerReference) *unstructured.Unstructured {
	w := &unstructured.Unstructured{}
	w.SetAPIVersion(widgetGVR.GroupVersion().String())
	w.SetKind("Widget")
	w.SetName(name)
	w.SetOwnerReferences(refs)
	return w
}

// ref is an ownerReference to an object of the given apiVersion and kind; block sets
// blockOwnerDeletion (nil leaves it unset).
func ref(apiVersion, kind string, obj metav1.Object, block *bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: obj.GetName(), UID: obj.GetUID(), BlockOwnerDeletion: block}
}

func rcRef(rc *corev1.ReplicationController, block *bool) metav1.OwnerReference {
	return ref("v1", "ReplicationController", rc, block)
}

func cmRef(cm *corev1.ConfigMap) metav1.OwnerReference { return ref("v1", "ConfigMap", cm, nil) }

func widgetRef(w *unstructured.Unstructured) metav1.OwnerReference {
	return ref(widgetGVR.GroupVersion().String(), "Widget", w, nil)
}

// rsControllerRef is the ownerReference a ReplicaSet controller puts on its pods.
func rsControllerRef(rs *appsv1.ReplicaSet) metav1.OwnerReference {
	r := ref("apps/v1", "ReplicaSet", rs, ptr.To(true))
	r.Controller = ptr.To(true)
	return r
}

// missingRef is an ownerReference to an object that never existed.
func missingRef(apiVersion, kind, name string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uuid.NewUUID()}
}

// ---- Writes ----

func (e *env) createConfigMap(ns string, cm *corev1.ConfigMap) *corev1.ConfigMap {
	e.t.Helper()
	return framework.NewObjects(e.Env, "ConfigMap", ns, e.Client.CoreV1().ConfigMaps(ns)).Create(e.t, cm)
}

func (e *env) createWidget(w *unstructured.Unstructured) *unstructured.Unstructured {
	e.t.Helper()
	created, err := e.Dynamic.Resource(widgetGVR).Namespace(e.Namespace).Create(e.Ctx, w, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating Widget %s: %v", w.GetName(), err)
	}
	return created
}

// releasePod removes unknownFinalizer from a pod.
func (e *env) releasePod(name string) {
	e.t.Helper()
	patch := []byte(`{"metadata":{"$deleteFromPrimitiveList/finalizers":["` + unknownFinalizer + `"]}}`)
	if _, err := e.Client.CoreV1().Pods(e.Namespace).Patch(e.Ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		e.t.Fatalf("removing finalizer %s from pod %s: %v", unknownFinalizer, name, err)
	}
}

// ---- Waits ----

// waitFor waits for condition, failing the test on timeout; errors returned by condition are
// retried, since the API server may answer a slow request with one.
func (e *env) waitFor(what string, timeout time.Duration, condition func(ctx context.Context) (bool, error)) {
	e.t.Helper()
	e.AwaitWithin(e.t, timeout, what, condition, nil)
}

// waitGone waits until get reports NotFound.
func (e *env) waitGone(what string, get func(ctx context.Context) error) {
	e.t.Helper()
	e.waitFor(what+" to be deleted", waitTimeout, func(ctx context.Context) (bool, error) {
		err := get(ctx)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// waitPodsDeleting waits until every named pod has a deletionTimestamp: the collector has
// deleted them and the unknown finalizer holds them.
func (e *env) waitPodsDeleting(names ...string) {
	e.t.Helper()
	e.waitFor(fmt.Sprintf("the collector to delete pods %v", names), waitTimeout, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			pod, err := e.Client.CoreV1().Pods(e.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if pod.DeletionTimestamp == nil {
				return false, nil
			}
		}
		return true, nil
	})
}

// waitInGraph waits until the collector's dependency graph has a vertex for every uid: it has
// observed those objects (with an owner or a dependent; the graph omits lone objects).
func (e *env) waitInGraph(uids ...types.UID) {
	e.t.Helper()
	e.waitGraph(fmt.Sprintf("the collector's graph to show %v", uids), func(g *dotGraph) bool { return g.has(uids...) }, uids...)
}

// waitGraph waits until the collector's graph around uids satisfies condition, and returns it.
func (e *env) waitGraph(what string, condition func(g *dotGraph) bool, uids ...types.UID) *dotGraph {
	e.t.Helper()
	var last *dotGraph
	e.Await(e.t, what, func(context.Context) (bool, error) {
		g, err := e.gc.graph(uids...)
		if err != nil {
			return false, err
		}
		last = g
		return condition(g), nil
	}, func() string {
		if last == nil {
			return "no graph"
		}
		return "graph:\n" + last.text
	})
	return last
}

// caughtUp waits until the collector has demonstrably processed work given to it now: it
// creates a canary ConfigMap whose only owner never existed, and waits until the collector has
// deleted it. The collector's single graph builder handles events in order, so by then it has
// seen every earlier change, and its workers have taken up at least one later item.
func (e *env) caughtUp() {
	e.t.Helper()
	e.canaries++
	name := fmt.Sprintf("canary-%d", e.canaries)
	e.createConfigMap(e.Namespace, newConfigMap(name, missingRef("v1", "ConfigMap", "canary-owner")))
	e.waitGone("canary ConfigMap "+name, func(ctx context.Context) error {
		_, err := e.Client.CoreV1().ConfigMaps(e.Namespace).Get(ctx, name, metav1.GetOptions{})
		return err
	})
}

// observe gives the collector a window to do what it must not: at least observationWindow and
// two canaries (see caughtUp) after it began.
func (e *env) observe() {
	e.t.Helper()
	began := time.Now()
	for i := 0; i < 2 || time.Since(began) < observationWindow; i++ {
		e.caughtUp()
	}
}

// ---- Reads ----

// ownerUIDs returns the UIDs of an object's ownerReferences, in order.
func ownerUIDs(obj metav1.Object) []types.UID {
	var uids []types.UID
	for _, r := range obj.GetOwnerReferences() {
		uids = append(uids, r.UID)
	}
	return uids
}

// ---- Audit log ----

// requests returns the audited requests (since the test began) that match.
func (e *env) requests(match func(ev *auditv1.Event) bool) []auditv1.Event {
	e.t.Helper()
	events, err := e.AuditEvents(match)
	if err != nil {
		e.t.Fatal(err)
	}
	return events
}

// about matches requests about one object (not lists or watches of its kind).
func about(resource, ns, name string) func(ev *auditv1.Event) bool {
	return func(ev *auditv1.Event) bool {
		r := ev.ObjectRef
		return r != nil && r.Resource == resource && r.Namespace == ns && r.Name == name && r.Subresource == ""
	}
}

// byProcess matches requests the collector's process sent.
func (e *env) byProcess(match func(ev *auditv1.Event) bool) func(ev *auditv1.Event) bool {
	return func(ev *auditv1.Event) bool { return e.gc.sentBy(ev.UserAgent) && match(ev) }
}

// describe lists requests for messages.
func describe(events []auditv1.Event) string {
	var b bytes.Buffer
	for _, ev := range events {
		fmt.Fprintf(&b, "\n  %s %s %s (%d) by %s", ev.RequestReceivedTimestamp.Format(time.StampMilli), ev.Verb, ev.RequestURI, responseCode(ev), ev.UserAgent)
	}
	return b.String()
}

func responseCode(ev auditv1.Event) int32 {
	if ev.ResponseStatus == nil {
		return 0
	}
	return ev.ResponseStatus.Code
}
