package containerrecreaterequest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/daemon/cri/crifake"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// Strings users, tools and OpenKruise read, checked verbatim.
const (
	podUIDLabel            = "crr.apps.kruise.io/pod-uid"
	nodeNameLabel          = "crr.apps.kruise.io/node-name"
	activeLabel            = "crr.apps.kruise.io/active"
	syncStatusesAnnotation = "crr.apps.kruise.io/sync-container-statuses"
	unreadyAcquiredKey     = "crr.apps.kruise.io/unready-acquired"
	kruisePodReady         = "KruisePodReady"

	messagePodGone         = "pod has gone"
	messageNoResponse      = "daemon has not responded for a long time"
	messageDeadlineExceeds = "recreating has exceeded the activeDeadlineSeconds"

	webhookCRRMutation = "mcontainerrecreaterequest.kb.io"
)

const (
	// crrController is the --controllers name of the manager-side controller.
	crrController = "containerrecreaterequest"
	// daemonGate switches the CRR webhook (and the NodeImage one) off when false.
	daemonGate = "KruiseDaemon"

	// nodeOwnerLabel marks the Nodes a test made with its namespace: Nodes are cluster-scoped,
	// and the cleanup deletes them by it.
	nodeOwnerLabel = "bosun.dev/integration-test-namespace"

	image = "registry.example/app:1.0"

	// testTimeout bounds one test; waitTimeout one awaited state. Generous: the machine is
	// small and shared, and a healthy run is far quicker. The manager's 60 s response
	// timeout fits in waitTimeout.
	testTimeout = 6 * time.Minute
	waitTimeout = 2 * time.Minute
)

type crr = appsv1alpha1.ContainerRecreateRequest

// testEnv is what every test works with: a context bounded by testTimeout, the shared
// control plane, admin clients and a fresh namespace.
type testEnv struct {
	ctx    context.Context
	cp     *framework.ControlPlane
	client kubernetes.Interface
	bosun  bosunclientset.Interface
	ns     string
}

// setup prepares a test. When it ends — after its manager and agents have stopped, since
// they start later — the webhook configurations are deleted (nothing answers them any
// more), then the namespace's requests (finalizers dropped), pods and the test's Nodes,
// so that the managers and agents of later tests do not work on them: without a namespace
// controller they would stay.
func setup(t *testing.T) *testEnv {
	t.Helper()
	cp := framework.SharedControlPlane(t)
	client := cp.Clientset(t)
	bosun, err := bosunclientset.NewForConfig(cp.Config())
	if err != nil {
		t.Fatalf("creating bosun's clientset: %v", err)
	}
	ns := framework.CreateTestNamespace(t, client).Name
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	e := &testEnv{ctx: ctx, cp: cp, client: client, bosun: bosun, ns: ns}
	t.Cleanup(func() { e.removeEverything(t) })
	return e
}

func (e *testEnv) removeEverything(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := framework.DeleteWebhookConfigurations(ctx, e.client); err != nil {
		t.Errorf("cleanup: %v", err)
	}
	all := metav1.ListOptions{}
	requests := e.bosun.AppsV1alpha1().ContainerRecreateRequests(e.ns)
	if list, err := requests.List(ctx, all); err == nil {
		dropFinalizers := []byte(`{"metadata":{"finalizers":null}}`)
		for _, r := range list.Items {
			if len(r.Finalizers) > 0 {
				_, _ = requests.Patch(ctx, r.Name, types.MergePatchType, dropFinalizers, metav1.PatchOptions{})
			}
		}
	}
	if err := requests.DeleteCollection(ctx, metav1.DeleteOptions{}, all); err != nil {
		t.Errorf("cleanup: deleting ContainerRecreateRequests: %v", err)
	}
	now := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	if err := e.client.CoreV1().Pods(e.ns).DeleteCollection(ctx, now, all); err != nil {
		t.Errorf("cleanup: deleting pods: %v", err)
	}
	if err := e.client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: nodeOwnerLabel + "=" + e.ns}); err != nil {
		t.Errorf("cleanup: deleting Nodes: %v", err)
	}
}

// ---- The manager ----

// startManager runs bosun-controller-manager with the CRR controller and its webhook until
// the test ends, and returns once the API server calls the webhook. featureGates is the
// --feature-gates value ("" for the defaults).
func (e *testEnv) startManager(t *testing.T, featureGates string, extraArgs ...string) *framework.ControllerManager {
	t.Helper()
	probe := newCRR("admission-probe", "admission-probe", "app")
	return framework.StartBosunControllerManagerWithWebhooks(e.ctx, t, e.cp, framework.ControllerManagerOptions{
		Controllers:  crrController,
		FeatureGates: featureGates,
		ExtraArgs:    extraArgs,
	}, framework.WebhookProbe{Webhook: webhookCRRMutation, Send: func(ctx context.Context) {
		// Refused or not (the pod does not exist), the request reaches the webhook.
		_, _ = e.bosun.AppsV1alpha1().ContainerRecreateRequests(e.ns).Create(ctx, probe, framework.DryRunCreate)
	}})
}

// ---- The node agent ----

// startAgent serves a fake CRI runtime on a fresh unix socket and runs the real
// bosun-daemon for node against it until the test ends; it returns the runtime once the
// agent reports ready (runtime found, informers synced).
func (e *testEnv) startAgent(t *testing.T, node string) *crifake.Runtime {
	t.Helper()
	runtime := crifake.Start(t, filepath.Join(crifake.ShortTempDir(t), "containerd.sock"))
	framework.StartBosunDaemon(e.ctx, t, e.cp, framework.BosunDaemonOptions{Node: node, RuntimeEndpoint: runtime.Endpoint(), Verbosity: 4})
	return runtime
}

// ---- Nodes and pods ----

// createNode creates a Ready Node named <namespace>-<suffix> with the test's label plus
// labels, and returns its name.
func (e *testEnv) createNode(t *testing.T, suffix string, labels map[string]string) string {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-" + suffix, Labels: map[string]string{nodeOwnerLabel: e.ns}}}
	maps.Copy(node.Labels, labels)
	if _, err := e.client.CoreV1().Nodes().Create(e.ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating node %s: %v", node.Name, err)
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := e.client.CoreV1().Nodes().Get(e.ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.Conditions = []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}}
		_, err = e.client.CoreV1().Nodes().UpdateStatus(e.ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("writing the status of node %s: %v", node.Name, err)
	}
	return node.Name
}

// newPod is a pod bound to node (not bound when node is empty) with one container per
// name, each with the same image.
func newPod(name, node string, containers ...string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
		},
	}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: image})
	}
	return pod
}

// newContainerID is a fresh containerd container ID: 64 hex characters.
func newContainerID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// containerIDOf is the pod-status form of a runtime container ID.
func containerIDOf(id string) string { return "containerd://" + id }

// createPod creates pod in the test's namespace and returns it as the API server stored it.
func (e *testEnv) createPod(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	created, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
	return created
}

// runningContainer is the status of one running container of a pod, as a kubelet writes it.
type runningContainer struct {
	name string
	// id is the runtime's container ID, without the containerd:// prefix.
	id           string
	restartCount int32
	startedAt    time.Time
	ready        bool
}

// createRunningPod creates pod (which must be bound to a node) and writes its status as a
// kubelet would once every container runs and is ready: phase Running, Ready, and one
// container status per container with a fresh containerd ID, started now. It returns the
// pod and the runtime ID of each container by name.
func (e *testEnv) createRunningPod(t *testing.T, pod *corev1.Pod) (*corev1.Pod, map[string]string) {
	t.Helper()
	e.createPod(t, pod)
	ids := map[string]string{}
	var statuses []runningContainer
	now := time.Now()
	for _, c := range pod.Spec.Containers {
		ids[c.Name] = newContainerID()
		statuses = append(statuses, runningContainer{name: c.Name, id: ids[c.Name], startedAt: now, ready: true})
	}
	return e.setContainerStatuses(t, pod.Name, statuses...), ids
}

// setContainerStatuses writes the given container statuses into the pod's status (others
// are kept), sets phase Running and makes the Ready condition True when every container
// is ready. It plays the kubelet after a container was started again.
func (e *testEnv) setContainerStatuses(t *testing.T, podName string, containers ...runningContainer) *corev1.Pod {
	t.Helper()
	var updated *corev1.Pod
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx, podName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range containers {
			status := corev1.ContainerStatus{
				Name: c.name, Image: image, ImageID: "registry.example/app@sha256:" + strings.Repeat("0", 64),
				ContainerID: containerIDOf(c.id), RestartCount: c.restartCount, Ready: c.ready, Started: ptr.To(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(c.startedAt)}},
			}
			replaced := false
			for i := range pod.Status.ContainerStatuses {
				if pod.Status.ContainerStatuses[i].Name == c.name {
					pod.Status.ContainerStatuses[i] = status
					replaced = true
				}
			}
			if !replaced {
				pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, status)
			}
		}
		allReady := len(pod.Status.ContainerStatuses) == len(pod.Spec.Containers)
		for _, s := range pod.Status.ContainerStatuses {
			allReady = allReady && s.Ready
		}
		pod.Status.Phase = corev1.PodRunning
		setPodCondition(pod, corev1.PodReady, allReady)
		setPodCondition(pod, corev1.ContainersReady, allReady)
		updated, err = e.client.CoreV1().Pods(e.ns).UpdateStatus(e.ctx, pod, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("writing the container statuses of pod %s: %v", podName, err)
	}
	return updated
}

// setPodCondition sets a condition of type kind to True or False, keeping its transition
// time when the status does not change.
func setPodCondition(pod *corev1.Pod, kind corev1.PodConditionType, value bool) {
	status := corev1.ConditionFalse
	if value {
		status = corev1.ConditionTrue
	}
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == kind {
			if pod.Status.Conditions[i].Status != status {
				pod.Status.Conditions[i].Status = status
				pod.Status.Conditions[i].LastTransitionTime = metav1.Now()
			}
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: kind, Status: status, LastTransitionTime: metav1.Now()})
}

func (e *testEnv) getPod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	pod, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting pod %s: %v", name, err)
	}
	return pod
}

// podCondition returns the pod's condition of type kind, nil when it has none.
func podCondition(pod *corev1.Pod, kind corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == kind {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// ---- Requests ----

type crrOption func(*crr)

// newCRR is a request named name to recreate containers of pod, with nothing else set but
// what opts set.
func newCRR(name, pod string, containers ...string) *crr {
	r := &crr{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1alpha1.ContainerRecreateRequestSpec{PodName: pod}}
	for _, c := range containers {
		r.Spec.Containers = append(r.Spec.Containers, appsv1alpha1.ContainerRecreateRequestContainer{Name: c})
	}
	return r
}

// withCRR applies opts to r and returns it.
func withCRR(r *crr, opts ...crrOption) *crr {
	for _, opt := range opts {
		opt(r)
	}
	return r
}

func activeDeadline(seconds int64) crrOption {
	return func(r *crr) { r.Spec.ActiveDeadlineSeconds = ptr.To(seconds) }
}

func ttlAfterFinished(seconds int32) crrOption {
	return func(r *crr) { r.Spec.TTLSecondsAfterFinished = ptr.To(seconds) }
}

// strategy sets the request's strategy (created empty when missing) with set.
func strategy(set func(*appsv1alpha1.ContainerRecreateRequestStrategy)) crrOption {
	return func(r *crr) {
		if r.Spec.Strategy == nil {
			r.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{}
		}
		set(r.Spec.Strategy)
	}
}

func (e *testEnv) tryCreateCRR(r *crr) (*crr, error) {
	return e.bosun.AppsV1alpha1().ContainerRecreateRequests(e.ns).Create(e.ctx, r, metav1.CreateOptions{})
}

func (e *testEnv) createCRR(t *testing.T, r *crr) *crr {
	t.Helper()
	created, err := e.tryCreateCRR(r)
	if err != nil {
		t.Fatalf("creating ContainerRecreateRequest %s: %v", r.Name, err)
	}
	return created
}

func (e *testEnv) getCRR(t *testing.T, name string) *crr {
	t.Helper()
	r, err := e.bosun.AppsV1alpha1().ContainerRecreateRequests(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting ContainerRecreateRequest %s: %v", name, err)
	}
	return r
}

// tryUpdateCRR applies mutate to the live request and updates it once (no conflict retry:
// the caller wants the answer of admission).
func (e *testEnv) tryUpdateCRR(name string, mutate func(*crr)) (*crr, error) {
	r, err := e.bosun.AppsV1alpha1().ContainerRecreateRequests(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	mutate(r)
	return e.bosun.AppsV1alpha1().ContainerRecreateRequests(e.ns).Update(e.ctx, r, metav1.UpdateOptions{})
}

// waitForCRR waits until cond holds for the live request and returns it. cond sees nil
// when the request does not exist.
func (e *testEnv) waitForCRR(t *testing.T, name, what string, cond func(*crr) bool) *crr {
	t.Helper()
	var last *crr
	err := framework.WaitFor(e.ctx, waitTimeout, what, func(ctx context.Context) (bool, error) {
		r, err := e.bosun.AppsV1alpha1().ContainerRecreateRequests(e.ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			r = nil
		case err != nil:
			return false, nil // retried; a persistent error ends in the timeout
		}
		last = r
		return cond(r), nil
	})
	if err != nil {
		t.Fatalf("ContainerRecreateRequest %s: %v; last: %s", name, err, describeCRR(last))
	}
	return last
}

// completed reports whether the request exists and is Completed with a completionTime.
func completed(r *crr) bool {
	return r != nil && r.Status.Phase == appsv1alpha1.ContainerRecreateRequestCompleted && r.Status.CompletionTime != nil
}

// waitForCompleted waits until the request is Completed and returns it.
func (e *testEnv) waitForCompleted(t *testing.T, name string) *crr {
	t.Helper()
	return e.waitForCRR(t, name, "phase Completed with a completionTime", completed)
}

func describeCRR(r *crr) string {
	if r == nil {
		return "<none>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase %q, message %q, completionTime %v, labels %v, annotations %v, finalizers %v, states [",
		r.Status.Phase, r.Status.Message, r.Status.CompletionTime, r.Labels, r.Annotations, r.Finalizers)
	for i, s := range r.Status.ContainerRecreateStates {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s killed=%v %q", s.Name, s.Phase, s.IsKilled, s.Message)
	}
	b.WriteString("]")
	return b.String()
}

// ---- Checks ----

// statusCode is the HTTP code of an API error, 0 for other errors.
func statusCode(err error) int32 {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Code
	}
	return 0
}

// expectRefused checks that err is an API error of HTTP code whose message contains every
// string of contains.
func expectRefused(t *testing.T, what string, err error, code int32, contains ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s was allowed, want HTTP %d", what, code)
		return
	}
	if got := statusCode(err); got != code {
		t.Errorf("%s: HTTP %d (%v), want %d", what, got, err, code)
		return
	}
	for _, s := range contains {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: %q does not contain %q", what, err.Error(), s)
		}
	}
}
