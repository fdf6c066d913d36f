package replicaset

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

const (
	// holdFinalizer keeps a deleted pod or ReplicaSet in place, with a deletionTimestamp,
	// until the test removes it: there is no kubelet or garbage collector to finish it.
	holdFinalizer = "bosun.dev/test-hold"

	// testTimeout bounds one test (the 2,000-pod one needs well under a minute).
	testTimeout = 3 * time.Minute

	// waitTimeout bounds one awaited state.
	waitTimeout = time.Minute

	// idlePeriod is how long nothing may write to the test namespace before a test checks
	// that something did NOT happen: by then the controller has acted on all it saw.
	idlePeriod = 1500 * time.Millisecond

	// conditionReplicaFailure is the ReplicaSet condition type that reports failed creates and deletes.
	conditionReplicaFailure = appsv1.ReplicaSetConditionType("ReplicaFailure")
)

// testEnv is what every test works with: a context bounded by testTimeout, the shared
// control plane, an admin clientset, a fresh namespace, and the audit events logged
// since the test began.
type testEnv struct {
	ctx    context.Context
	cp     *framework.ControlPlane
	client kubernetes.Interface
	ns     string
	audit  *framework.AuditTail
}

// setup prepares a test. When the test ends (after its controller managers have stopped,
// since they are started later), every ReplicaSet and pod of the namespace is removed, so
// that the managers of later tests, which watch all namespaces, do not keep working on
// them: without a namespace controller the deleted namespace would keep them forever.
func setup(t *testing.T) *testEnv {
	t.Helper()
	cp := framework.SharedControlPlane(t)
	audit := framework.NewAuditTail(t, cp)
	client := cp.Clientset(t)
	ns := framework.CreateTestNamespace(t, client).Name
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	e := &testEnv{ctx: ctx, cp: cp, client: client, ns: ns, audit: audit}
	t.Cleanup(func() { e.removeWorkloads(t) })
	return e
}

// startController runs bosun-controller-manager with only the ReplicaSet controller and
// the given --feature-gates (none when empty) until the test ends.
func (e *testEnv) startController(t *testing.T, featureGates string) *framework.ControllerManager {
	t.Helper()
	return framework.StartBosunControllerManager(t, e.cp, framework.ControllerManagerOptions{
		Controllers:  "replicaset",
		FeatureGates: featureGates,
	})
}

// removeWorkloads deletes the namespace's ReplicaSets and pods, finalizers and grace
// periods included.
func (e *testEnv) removeWorkloads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dropFinalizers := []byte(`{"metadata":{"finalizers":null}}`)
	rsList, err := e.client.AppsV1().ReplicaSets(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Errorf("cleanup: listing ReplicaSets: %v", err)
		return
	}
	for _, rs := range rsList.Items {
		if len(rs.Finalizers) > 0 {
			_, err := e.client.AppsV1().ReplicaSets(e.ns).Patch(ctx, rs.Name, types.MergePatchType, dropFinalizers, metav1.PatchOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("cleanup: releasing ReplicaSet %s: %v", rs.Name, err)
			}
		}
	}
	podList, err := e.client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Errorf("cleanup: listing pods: %v", err)
		return
	}
	for _, pod := range podList.Items {
		if len(pod.Finalizers) > 0 {
			_, err := e.client.CoreV1().Pods(e.ns).Patch(ctx, pod.Name, types.MergePatchType, dropFinalizers, metav1.PatchOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("cleanup: releasing pod %s: %v", pod.Name, err)
			}
		}
	}
	if err := e.client.AppsV1().ReplicaSets(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Errorf("cleanup: deleting ReplicaSets: %v", err)
	}
	// Grace period 0: bound pods would otherwise wait 30 s for a kubelet that never comes.
	now := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	if err := e.client.CoreV1().Pods(e.ns).DeleteCollection(ctx, now, metav1.ListOptions{}); err != nil {
		t.Errorf("cleanup: deleting pods: %v", err)
	}
}

// ---- Builders ----

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example/app:1.0"}}}
}

// newReplicaSet is an apps/v1 ReplicaSet whose selector and template labels are app=<name>.
func newReplicaSet(name string, replicas int32) *appsv1.ReplicaSet {
	return replicaSetSelecting(name, replicas, map[string]string{"app": name})
}

// replicaSetSelecting is an apps/v1 ReplicaSet whose selector and template labels are
// selector.
func replicaSetSelecting(name string, replicas int32, selector map[string]string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: copyLabels(selector)},
				Spec:       podSpec(),
			},
		},
	}
}

// newPod is an unscheduled pod. Without a node, the API server deletes it at once
// instead of waiting for a kubelet.
func newPod(name string, podLabels map[string]string, refs ...metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: copyLabels(podLabels), OwnerReferences: refs},
		Spec:       podSpec(),
	}
}

// controllerRef is the ownerReference the controller puts on its pods.
func controllerRef(rs *appsv1.ReplicaSet) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

// plainRef is a non-controller ownerReference.
func plainRef(apiVersion, kind, name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid}
}

func copyLabels(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// ---- Predicates ----

func controlledBy(pod *corev1.Pod, uid types.UID) bool {
	ref := metav1.GetControllerOf(pod)
	return ref != nil && ref.UID == uid
}

// activeControlledBy returns the active pods controlled by uid, sorted by name.
func activeControlledBy(pods []corev1.Pod, uid types.UID) []corev1.Pod {
	var out []corev1.Pod
	for i := range pods {
		if podutil.IsPodActive(&pods[i]) && controlledBy(&pods[i], uid) {
			out = append(out, pods[i])
		}
	}
	return out
}

func countActive(pods []corev1.Pod) int {
	n := 0
	for i := range pods {
		if podutil.IsPodActive(&pods[i]) {
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

// replicaFailure returns the ReplicaSet's ReplicaFailure condition, or nil.
func replicaFailure(rs *appsv1.ReplicaSet) *appsv1.ReplicaSetCondition {
	for i := range rs.Status.Conditions {
		if rs.Status.Conditions[i].Type == conditionReplicaFailure {
			return &rs.Status.Conditions[i]
		}
	}
	return nil
}

// sameRefs reports whether two ownerReference lists hold the same references, in any
// order (strategic merge may append).
func sameRefs(a, b []metav1.OwnerReference) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(r metav1.OwnerReference) string {
		return fmt.Sprintf("%s|%s|%s|%s|%v|%v", r.APIVersion, r.Kind, r.Name, r.UID,
			ptr.Deref(r.Controller, false), ptr.Deref(r.BlockOwnerDeletion, false))
	}
	ka, kb := make([]string, 0, len(a)), make([]string, 0, len(b))
	for i := range a {
		ka, kb = append(ka, key(a[i])), append(kb, key(b[i]))
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return slices.Equal(ka, kb)
}

// ---- API actions (each fails the test on error) ----

func (e *testEnv) createRS(t *testing.T, rs *appsv1.ReplicaSet) *appsv1.ReplicaSet {
	t.Helper()
	created, err := e.client.AppsV1().ReplicaSets(e.ns).Create(e.ctx, rs, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating ReplicaSet %s: %v", rs.Name, err)
	}
	return created
}

func (e *testEnv) getRS(t *testing.T, name string) *appsv1.ReplicaSet {
	t.Helper()
	rs, err := e.client.AppsV1().ReplicaSets(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting ReplicaSet %s: %v", name, err)
	}
	return rs
}

// tryUpdateRS applies mutate to the live ReplicaSet and updates it, retrying on conflicts.
func (e *testEnv) tryUpdateRS(name string, mutate func(*appsv1.ReplicaSet)) (*appsv1.ReplicaSet, error) {
	var updated *appsv1.ReplicaSet
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rs, err := e.client.AppsV1().ReplicaSets(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(rs)
		updated, err = e.client.AppsV1().ReplicaSets(e.ns).Update(e.ctx, rs, metav1.UpdateOptions{})
		return err
	})
	return updated, err
}

func (e *testEnv) updateRS(t *testing.T, name string, mutate func(*appsv1.ReplicaSet)) *appsv1.ReplicaSet {
	t.Helper()
	updated, err := e.tryUpdateRS(name, mutate)
	if err != nil {
		t.Fatalf("updating ReplicaSet %s: %v", name, err)
	}
	return updated
}

func (e *testEnv) scaleRS(t *testing.T, name string, replicas int32) *appsv1.ReplicaSet {
	t.Helper()
	return e.updateRS(t, name, func(rs *appsv1.ReplicaSet) { rs.Spec.Replicas = ptr.To(replicas) })
}

func (e *testEnv) createPod(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	created, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
	return created
}

func (e *testEnv) getPod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	pod, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting pod %s: %v", name, err)
	}
	return pod
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

// holdAndDelete deletes a pod that holdFinalizer keeps terminating until release.
func (e *testEnv) holdAndDelete(t *testing.T, name string) {
	t.Helper()
	e.updatePod(t, name, func(pod *corev1.Pod) { pod.Finalizers = append(pod.Finalizers, holdFinalizer) })
	if err := e.client.CoreV1().Pods(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting pod %s: %v", name, err)
	}
}

// release removes holdFinalizer from a pod, which lets a deleted pod go.
func (e *testEnv) release(t *testing.T, name string) {
	t.Helper()
	e.updatePod(t, name, func(pod *corev1.Pod) {
		pod.Finalizers = slices.DeleteFunc(pod.Finalizers, func(f string) bool { return f == holdFinalizer })
	})
}

// setRunning marks a pod Running, ready or not, with its Ready condition's transition
// time at readySince (see framework.SetPodRunning).
func (e *testEnv) setRunning(t *testing.T, name string, ready bool, readySince time.Time) {
	t.Helper()
	if _, err := framework.SetPodRunning(e.ctx, e.client, e.ns, name, ready, readySince); err != nil {
		t.Fatal(err)
	}
}

// listPods returns the namespace's pods (matching selector, when not nil), sorted by name.
func (e *testEnv) listPods(t *testing.T, selector map[string]string) []corev1.Pod {
	t.Helper()
	pods, err := e.tryListPods(e.ctx, selector)
	if err != nil {
		t.Fatal(err)
	}
	return pods
}

func (e *testEnv) tryListPods(ctx context.Context, selector map[string]string) ([]corev1.Pod, error) {
	opts := metav1.ListOptions{}
	if selector != nil {
		opts.LabelSelector = labels.SelectorFromSet(selector).String()
	}
	list, err := e.client.CoreV1().Pods(e.ns).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing pods of %s: %w", e.ns, err)
	}
	slices.SortFunc(list.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return list.Items, nil
}

// failedCreateEvents returns the Warning FailedCreate events recorded on a ReplicaSet.
func (e *testEnv) failedCreateEvents(t *testing.T, rsName string) []corev1.Event {
	t.Helper()
	list, err := e.client.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=ReplicaSet,involvedObject.name=" + rsName + ",reason=FailedCreate,type=Warning",
	})
	if err != nil {
		t.Fatalf("listing events of ReplicaSet %s: %v", rsName, err)
	}
	return list.Items
}

// ---- Quota (no quota controller runs: the test writes the status it would write) ----

// createPodQuota creates a ResourceQuota "pods" limiting the namespace to hard pods, and
// writes the status a quota controller would: hard as in the spec, nothing used. The
// API server's quota admission then counts every pod it admits into status.used itself.
func (e *testEnv) createPodQuota(t *testing.T, hard int64) {
	t.Helper()
	limits := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(hard, resource.DecimalSI)}
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Spec:       corev1.ResourceQuotaSpec{Hard: limits},
	}
	quota, err := e.client.CoreV1().ResourceQuotas(e.ns).Create(e.ctx, quota, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the pod quota: %v", err)
	}
	quota.Status = corev1.ResourceQuotaStatus{
		Hard: limits,
		Used: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(0, resource.DecimalSI)},
	}
	if _, err := e.client.CoreV1().ResourceQuotas(e.ns).UpdateStatus(e.ctx, quota, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing the pod quota's status: %v", err)
	}
}

// raisePodQuota sets the quota's hard pod limit, in spec and status; status.used stays
// what admission counted.
func (e *testEnv) raisePodQuota(t *testing.T, hard int64) {
	t.Helper()
	quotas := e.client.CoreV1().ResourceQuotas(e.ns)
	limit := *resource.NewQuantity(hard, resource.DecimalSI)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		quota, err := quotas.Get(e.ctx, "pods", metav1.GetOptions{})
		if err != nil {
			return err
		}
		quota.Spec.Hard[corev1.ResourcePods] = limit
		quota, err = quotas.Update(e.ctx, quota, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		quota.Status.Hard[corev1.ResourcePods] = limit
		_, err = quotas.UpdateStatus(e.ctx, quota, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("raising the pod quota to %d: %v", hard, err)
	}
}

// ---- Waiting ----

// waitForRS waits until cond holds for the live ReplicaSet and returns it.
func (e *testEnv) waitForRS(t *testing.T, name, what string, cond func(*appsv1.ReplicaSet) bool) *appsv1.ReplicaSet {
	t.Helper()
	var last *appsv1.ReplicaSet
	err := framework.WaitFor(e.ctx, waitTimeout, what, func(ctx context.Context) (bool, error) {
		rs, err := e.client.AppsV1().ReplicaSets(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil // retried; a persistent error ends in the timeout
		}
		last = rs
		return cond(rs), nil
	})
	if err != nil {
		t.Fatalf("ReplicaSet %s: %v; last status: %s", name, err, statusString(last))
	}
	return last
}

// waitForPods waits until cond holds for the namespace's pods (sorted by name) and
// returns them.
func (e *testEnv) waitForPods(t *testing.T, what string, cond func([]corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	var last []corev1.Pod
	err := framework.WaitFor(e.ctx, waitTimeout, what, func(ctx context.Context) (bool, error) {
		pods, err := e.tryListPods(ctx, nil)
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

// waitForPod waits until cond holds for the live pod and returns it.
func (e *testEnv) waitForPod(t *testing.T, name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	err := framework.WaitFor(e.ctx, waitTimeout, what, func(ctx context.Context) (bool, error) {
		pod, err := e.client.CoreV1().Pods(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = pod
		return cond(pod), nil
	})
	if err != nil {
		if last != nil {
			t.Fatalf("pod %s: %v; ownerReferences %+v", name, err, last.OwnerReferences)
		}
		t.Fatalf("pod %s: %v", name, err)
	}
	return last
}

// waitForReplicas waits until the ReplicaSet is settled at n replicas: its status reports
// n replicas for its current generation, and exactly n active pods are controlled by it.
// It returns those pods, sorted by name.
func (e *testEnv) waitForReplicas(t *testing.T, name string, n int32) []corev1.Pod {
	t.Helper()
	rs := e.waitForRS(t, name, fmt.Sprintf("status.replicas %d for the current generation", n), func(rs *appsv1.ReplicaSet) bool {
		return rs.Status.ObservedGeneration == rs.Generation && rs.Status.Replicas == n
	})
	pods := e.waitForPods(t, fmt.Sprintf("%d active pods controlled by ReplicaSet %s", n, name), func(pods []corev1.Pod) bool {
		return len(activeControlledBy(pods, rs.UID)) == int(n)
	})
	return activeControlledBy(pods, rs.UID)
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

func statusString(rs *appsv1.ReplicaSet) string {
	if rs == nil {
		return "<none>"
	}
	data, _ := json.Marshal(rs.Status)
	return fmt.Sprintf("generation %d spec.replicas %d status %s", rs.Generation, ptr.Deref(rs.Spec.Replicas, 1), data)
}

func describePods(pods []corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d pods", len(pods))
	for i, pod := range pods {
		if i == 10 {
			b.WriteString(" ...")
			break
		}
		owner := "<orphan>"
		if ref := metav1.GetControllerOf(&pod); ref != nil {
			owner = ref.Name
		}
		fmt.Fprintf(&b, "; %s (owner %s, phase %s, deleting %v, node %q)", pod.Name, owner, pod.Status.Phase, pod.DeletionTimestamp != nil, pod.Spec.NodeName)
	}
	return b.String()
}

// ---- Audit log ----

// request is one completed API request, as the audit log saw it.
type request struct {
	verb, resource, subresource string
	code                        int32
	message                     string
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
			r.resource, r.subresource = ev.ObjectRef.Resource, ev.ObjectRef.Subresource
		}
		if ev.ResponseStatus != nil {
			r.code, r.message = ev.ResponseStatus.Code, ev.ResponseStatus.Message
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b request) int { return a.received.Compare(b.received) })
	return out, nil
}

// podWrites returns the requests with one of verbs on pods (not their subresources) of
// the test namespace.
func (e *testEnv) podWrites(t *testing.T, verbs ...string) []request {
	t.Helper()
	reqs, err := e.requests(func(ev *auditv1.Event) bool {
		return ev.ObjectRef != nil && ev.ObjectRef.Namespace == e.ns && ev.ObjectRef.Resource == "pods" &&
			ev.ObjectRef.Subresource == "" && slices.Contains(verbs, ev.Verb)
	})
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}

// countCodes returns how many requests were answered with code.
func countCodes(reqs []request, code int32) int {
	n := 0
	for _, r := range reqs {
		if r.code == code {
			n++
		}
	}
	return n
}
