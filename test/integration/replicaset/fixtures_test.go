package replicaset

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
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

// testEnv is what every test works with: the framework's environment (see envOptions).
type testEnv struct{ *framework.Env }

// envOptions give every test a context bounded by testTimeout and the audit events logged
// since it began. When the test ends (after its controller managers have stopped, since
// they are started later), every ReplicaSet and pod of the namespace is removed, so that
// the managers of later tests, which watch all namespaces, do not keep working on them:
// without a namespace controller the deleted namespace would keep them forever.
var envOptions = framework.EnvOptions{
	Timeout: testTimeout, WaitTimeout: waitTimeout, Audit: true,
	Remove: []string{"replicasets.apps", "pods"},
}

func setup(t *testing.T) *testEnv {
	t.Helper()
	return &testEnv{framework.NewTestEnv(t, framework.SharedControlPlane(t), envOptions)}
}

// replicaSets are the namespace's ReplicaSets, shown by statusString when a wait fails.
func (e *testEnv) replicaSets() *framework.Objects[*appsv1.ReplicaSet] {
	return e.ReplicaSets().DescribedBy(statusString)
}

// startController runs bosun-controller-manager with only the ReplicaSet controller and
// the given --feature-gates (none when empty) until the test ends.
func (e *testEnv) startController(t *testing.T, featureGates string) *framework.ControllerManager {
	t.Helper()
	return framework.StartBosunControllerManager(t, e.CP, framework.ControllerManagerOptions{
		Controllers:  "replicaset",
		FeatureGates: featureGates,
	})
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

func (e *testEnv) scaleRS(t *testing.T, name string, replicas int32) *appsv1.ReplicaSet {
	t.Helper()
	return e.replicaSets().Update(t, name, func(rs *appsv1.ReplicaSet) { rs.Spec.Replicas = ptr.To(replicas) })
}

// holdAndDelete deletes a pod that holdFinalizer keeps terminating until release.
func (e *testEnv) holdAndDelete(t *testing.T, name string) {
	t.Helper()
	e.Pods().Update(t, name, func(pod *corev1.Pod) { pod.Finalizers = append(pod.Finalizers, holdFinalizer) })
	e.Pods().Delete(t, name)
}

// release removes holdFinalizer from a pod, which lets a deleted pod go.
func (e *testEnv) release(t *testing.T, name string) {
	t.Helper()
	e.Pods().Update(t, name, func(pod *corev1.Pod) {
		pod.Finalizers = slices.DeleteFunc(pod.Finalizers, func(f string) bool { return f == holdFinalizer })
	})
}

// failedCreateEvents returns the Warning FailedCreate events recorded on a ReplicaSet.
func (e *testEnv) failedCreateEvents(t *testing.T, rsName string) []corev1.Event {
	t.Helper()
	return slices.DeleteFunc(e.GetEvents(t, e.Namespace, "ReplicaSet", rsName), func(ev corev1.Event) bool {
		return ev.Reason != "FailedCreate" || ev.Type != corev1.EventTypeWarning
	})
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
	quota, err := e.Client.CoreV1().ResourceQuotas(e.Namespace).Create(e.Ctx, quota, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the pod quota: %v", err)
	}
	quota.Status = corev1.ResourceQuotaStatus{
		Hard: limits,
		Used: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(0, resource.DecimalSI)},
	}
	if _, err := e.Client.CoreV1().ResourceQuotas(e.Namespace).UpdateStatus(e.Ctx, quota, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing the pod quota's status: %v", err)
	}
}

// raisePodQuota sets the quota's hard pod limit, in spec and status; status.used stays
// what admission counted.
func (e *testEnv) raisePodQuota(t *testing.T, hard int64) {
	t.Helper()
	quotas := e.Client.CoreV1().ResourceQuotas(e.Namespace)
	limit := *resource.NewQuantity(hard, resource.DecimalSI)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		quota, err := quotas.Get(e.Ctx, "pods", metav1.GetOptions{})
		if err != nil {
			return err
		}
		quota.Spec.Hard[corev1.ResourcePods] = limit
		quota, err = quotas.Update(e.Ctx, quota, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		quota.Status.Hard[corev1.ResourcePods] = limit
		_, err = quotas.UpdateStatus(e.Ctx, quota, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("raising the pod quota to %d: %v", hard, err)
	}
}

// ---- Waiting ----

// waitForReplicas waits until the ReplicaSet is settled at n replicas: its status reports
// n replicas for its current generation, and exactly n active pods are controlled by it.
// It returns those pods, sorted by name.
func (e *testEnv) waitForReplicas(t *testing.T, name string, n int32) []corev1.Pod {
	t.Helper()
	rs := e.replicaSets().WaitFor(t, name, fmt.Sprintf("status.replicas %d for the current generation", n), func(rs *appsv1.ReplicaSet) bool {
		return rs.Status.ObservedGeneration == rs.Generation && rs.Status.Replicas == n
	})
	pods := e.WaitForPods(t, fmt.Sprintf("%d active pods controlled by ReplicaSet %s", n, name), func(pods []corev1.Pod) bool {
		return len(activeControlledBy(pods, rs.UID)) == int(n)
	})
	return activeControlledBy(pods, rs.UID)
}

func statusString(rs *appsv1.ReplicaSet) string {
	if rs == nil {
		return "<none>"
	}
	data, _ := json.Marshal(rs.Status)
	return fmt.Sprintf("generation %d spec.replicas %d status %s", rs.Generation, ptr.Deref(rs.Spec.Replicas, 1), data)
}

// ---- Audit log ----

// podWrites returns the requests with one of verbs on pods (not their subresources) of
// the test namespace.
func (e *testEnv) podWrites(t *testing.T, verbs ...string) []framework.Request {
	t.Helper()
	reqs, err := e.Requests(func(ev *auditv1.Event) bool {
		return ev.ObjectRef != nil && ev.ObjectRef.Namespace == e.Namespace && ev.ObjectRef.Resource == "pods" &&
			ev.ObjectRef.Subresource == "" && slices.Contains(verbs, ev.Verb)
	})
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}

// countCodes returns how many requests were answered with code.
func countCodes(reqs []framework.Request, code int32) int {
	n := 0
	for _, r := range reqs {
		if r.Code == code {
			n++
		}
	}
	return n
}
