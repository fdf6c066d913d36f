package containerrecreaterequest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

	image = "registry.example/app:1.0"

	// testTimeout bounds one test; waitTimeout one awaited state. Generous: the machine is
	// small and shared, and a healthy run is far quicker. The manager's 60 s response
	// timeout fits in waitTimeout.
	testTimeout = 6 * time.Minute
	waitTimeout = 2 * time.Minute
)

type crr = appsv1alpha1.ContainerRecreateRequest

// testEnv is what every test works with: the framework's environment (see envOptions).
type testEnv struct{ *framework.Env }

// envOptions give every test a context bounded by testTimeout. When it ends — after its
// manager and agents have stopped, since they start later — the webhook configurations are
// deleted (nothing answers them any more), then the namespace's requests (finalizers
// dropped), pods and the test's Nodes, so that the managers and agents of later tests do
// not work on them: without a namespace controller they would stay.
var envOptions = framework.EnvOptions{
	Timeout: testTimeout, WaitTimeout: waitTimeout, RemoveWebhookConfigurations: true,
	Remove: []string{"containerrecreaterequests.apps.kruise.io", "pods"},
}

func setup(t *testing.T) *testEnv {
	t.Helper()
	return &testEnv{framework.NewTestEnv(t, framework.SharedControlPlane(t), envOptions)}
}

// requests are the namespace's ContainerRecreateRequests, shown by describeCRR when a wait
// fails.
func (e *testEnv) requests() *framework.Objects[*crr] {
	return e.ContainerRecreateRequests().DescribedBy(describeCRR)
}

// ---- The manager ----

// startManager runs bosun-controller-manager with the CRR controller and its webhook until
// the test ends, and returns once the API server calls the webhook. featureGates is the
// --feature-gates value ("" for the defaults).
func (e *testEnv) startManager(t *testing.T, featureGates string, extraArgs ...string) *framework.ControllerManager {
	t.Helper()
	probe := newCRR("admission-probe", "admission-probe", "app")
	return framework.StartBosunControllerManagerWithWebhooks(e.Ctx, t, e.CP, framework.ControllerManagerOptions{
		Controllers:  crrController,
		FeatureGates: featureGates,
		ExtraArgs:    extraArgs,
	}, framework.WebhookProbe{Webhook: webhookCRRMutation, Send: func(ctx context.Context) {
		// Refused or not (the pod does not exist), the request reaches the webhook.
		_, _ = e.Bosun.AppsV1alpha1().ContainerRecreateRequests(e.Namespace).Create(ctx, probe, framework.DryRunCreate)
	}})
}

// ---- The node agent ----

// startAgent serves a fake CRI runtime on a fresh unix socket and runs the real
// bosun-daemon for node against it until the test ends; it returns the runtime once the
// agent reports ready (runtime found, informers synced).
func (e *testEnv) startAgent(t *testing.T, node string) *crifake.Runtime {
	t.Helper()
	runtime := crifake.Start(t, filepath.Join(crifake.ShortTempDir(t), "containerd.sock"))
	framework.StartBosunDaemon(e.Ctx, t, e.CP, framework.BosunDaemonOptions{Node: node, RuntimeEndpoint: runtime.Endpoint(), Verbosity: 4})
	return runtime
}

// ---- Nodes and pods ----

// createNode creates a Ready Node named <namespace>-<suffix> with labels (see
// framework.Env.CreateNode) and returns its name.
func (e *testEnv) createNode(t *testing.T, suffix string, labels map[string]string) string {
	t.Helper()
	return e.CreateNode(t, e.NewNode(suffix, labels, time.Now())).Name
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
	e.Pods().Create(t, pod)
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
	return e.Pods().UpdateStatus(t, podName, func(pod *corev1.Pod) {
		var statuses []corev1.ContainerStatus
		for _, c := range containers {
			statuses = append(statuses, corev1.ContainerStatus{
				Name: c.name, Image: image, ImageID: "registry.example/app@sha256:" + strings.Repeat("0", 64),
				ContainerID: containerIDOf(c.id), RestartCount: c.restartCount, Ready: c.ready, Started: ptr.To(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(c.startedAt)}},
			})
		}
		putContainerStatuses(pod, statuses...)
	})
}

// putContainerStatuses puts statuses into the pod's status in place of those of the same
// containers (the others are kept), sets phase Running and makes the Ready and
// ContainersReady conditions True when every container is ready: what a kubelet writes
// once it has (re)started containers.
func putContainerStatuses(pod *corev1.Pod, statuses ...corev1.ContainerStatus) {
	for _, status := range statuses {
		if i := slices.IndexFunc(pod.Status.ContainerStatuses, func(s corev1.ContainerStatus) bool { return s.Name == status.Name }); i >= 0 {
			pod.Status.ContainerStatuses[i] = status
		} else {
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

// completed reports whether the request exists and is Completed with a completionTime.
func completed(r *crr) bool {
	return r != nil && r.Status.Phase == appsv1alpha1.ContainerRecreateRequestCompleted && r.Status.CompletionTime != nil
}

// waitForCompleted waits until the request is Completed and returns it.
func (e *testEnv) waitForCompleted(t *testing.T, name string) *crr {
	t.Helper()
	return e.requests().WaitForEvenAbsent(t, name, "phase Completed with a completionTime", completed)
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
