package containerrecreaterequest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/daemon/cri/crifake"
)

// agentEnv is a test with a manager, one Node and the real bosun-daemon for it, talking to
// a fake runtime that holds the test's pods.
type agentEnv struct {
	*testEnv
	node    string
	runtime *crifake.Runtime
}

// setupAgent starts the manager (with its webhook), creates a Ready Node and runs the agent
// for it.
func setupAgent(t *testing.T) *agentEnv {
	t.Helper()
	e := setup(t)
	e.startManager(t, "")
	node := e.createNode(t, "agent", nil)
	return &agentEnv{testEnv: e, node: node, runtime: e.startAgent(t, node)}
}

// createRuntimePod creates pod on the agent's Node, starts its containers in the fake
// runtime (sandbox IP 127.0.0.1) and writes the pod status a kubelet would then write:
// Running, every container running and ready under its runtime ID. It returns the pod.
func (a *agentEnv) createRuntimePod(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	pod.Spec.NodeName = a.node
	created := a.Pods().Create(t, pod)
	var names []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	a.runtime.AddPod(crifake.Pod{UID: string(created.UID), Namespace: created.Namespace, Name: created.Name, IP: "127.0.0.1", Containers: names})
	return a.writeRuntimeStatuses(t, created, true, names...)
}

// writeRuntimeStatuses plays the kubelet after it (re)started containers: it writes the
// status of the named containers of pod from their current instances in the fake runtime
// (ID as "fake-runtime://<id>", restart count, start time), with readiness ready.
func (a *agentEnv) writeRuntimeStatuses(t *testing.T, pod *corev1.Pod, ready bool, names ...string) *corev1.Pod {
	t.Helper()
	return a.Pods().UpdateStatus(t, pod.Name, func(live *corev1.Pod) {
		var statuses []corev1.ContainerStatus
		for _, name := range names {
			current, ok := a.runtime.Container(string(pod.UID), name)
			if !ok {
				t.Fatalf("the fake runtime has no container %s in pod %s", name, pod.Name)
			}
			statuses = append(statuses, corev1.ContainerStatus{
				Name: name, Image: image, ImageID: "registry.example/app@sha256:0000",
				ContainerID: crifake.KubeContainerID(current.ID), RestartCount: current.RestartCount,
				Ready: ready, Started: ptr.To(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(current.StartedAt)}},
			})
		}
		putContainerStatuses(live, statuses...)
	})
}

// restart plays the kubelet after the agent stopped a container: a new instance in the
// fake runtime, then its status (ready) in the pod.
func (a *agentEnv) restart(t *testing.T, pod *corev1.Pod, name string) {
	t.Helper()
	a.runtime.RestartContainer(string(pod.UID), name)
	a.writeRuntimeStatuses(t, pod, true, name)
}

// waitForStops waits until the fake runtime has received n StopContainer calls and
// returns them.
func (a *agentEnv) waitForStops(t *testing.T, n int) []crifake.ContainerCall {
	t.Helper()
	var stops []crifake.ContainerCall
	a.Await(t, fmt.Sprintf("%d StopContainer calls", n), func(context.Context) (bool, error) {
		stops = a.runtime.StopCalls()
		return len(stops) >= n, nil
	}, func() string { return fmt.Sprintf("%+v", stops) })
	return stops
}

// stopWitness records, at the moment of every StopContainer call, the live state of the
// test's requests: what the agent had written before it stopped a container.
type stopWitness struct {
	mu    sync.Mutex
	seen  []stopMoment
	names []string
}

type stopMoment struct {
	call     crifake.ContainerCall
	at       time.Time
	requests map[string]*crr
	pod      *corev1.Pod
}

// witnessStops installs a stop hook that reads requests names and pod podName.
func (a *agentEnv) witnessStops(t *testing.T, podName string, names ...string) *stopWitness {
	t.Helper()
	w := &stopWitness{names: names}
	a.runtime.SetStopHook(func(call crifake.ContainerCall) {
		m := stopMoment{call: call, at: time.Now(), requests: map[string]*crr{}}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, name := range names {
			if r, err := a.Bosun.AppsV1alpha1().ContainerRecreateRequests(a.Namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
				m.requests[name] = r
			}
		}
		if pod, err := a.Client.CoreV1().Pods(a.Namespace).Get(ctx, podName, metav1.GetOptions{}); err == nil {
			m.pod = pod
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.seen = append(w.seen, m)
	})
	t.Cleanup(func() { a.runtime.SetStopHook(nil) })
	return w
}

func (w *stopWitness) moments() []stopMoment {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.seen)
}

// stateOf returns the state of container name in r, or the zero state.
func stateOf(r *crr, name string) appsv1alpha1.ContainerRecreateRequestContainerRecreateState {
	if r != nil {
		for _, s := range r.Status.ContainerRecreateStates {
			if s.Name == name {
				return s
			}
		}
	}
	return appsv1alpha1.ContainerRecreateRequestContainerRecreateState{}
}

// hasPhase reports whether r exists with phase.
func hasPhase(phase appsv1alpha1.ContainerRecreateRequestPhase) func(*crr) bool {
	return func(r *crr) bool { return r != nil && r.Status.Phase == phase }
}

// containerIDOfRuntime is the current runtime container ID of name in pod.
func (a *agentEnv) containerIDOfRuntime(pod *corev1.Pod, name string) string {
	c, _ := a.runtime.Container(string(pod.UID), name)
	return c.ID
}

// setKruisePodReady sets the pod's KruisePodReady condition True, as the party owning the
// readiness gate does for a pod nobody has marked not ready.
func (a *agentEnv) setKruisePodReady(t *testing.T, podName string) {
	t.Helper()
	a.Pods().UpdateStatus(t, podName, func(live *corev1.Pod) { setPodCondition(live, kruisePodReady, true) })
}

// waitForPodEvent waits for an event of type, reason and message on pod podName.
func (a *agentEnv) waitForPodEvent(t *testing.T, podName, eventType, reason, message string) {
	t.Helper()
	a.WaitForEvent(t, a.Namespace, "Pod", podName, fmt.Sprintf("a %s event %s %q", eventType, reason, message), func(ev *corev1.Event) bool {
		return ev.Type == eventType && ev.Reason == reason && ev.Message == message
	})
}

func containsString(list []string, s string) bool { return slices.Contains(list, s) }

// getHub reads the request in v1beta1, the version the controllers work on; the tests
// otherwise read it as v1alpha1 users do.
func (a *agentEnv) getHub(t *testing.T, name string) *appsv1beta1.ContainerRecreateRequest {
	t.Helper()
	r, err := a.Bosun.AppsV1beta1().ContainerRecreateRequests(a.Namespace).Get(a.Ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading ContainerRecreateRequest %s in v1beta1: %v", name, err)
	}
	return r
}

// expectNoCarriers checks that the v1beta1 request holds neither v1alpha1 annotation that
// carries a status field: the controllers write the fields only.
func expectNoCarriers(t *testing.T, r *appsv1beta1.ContainerRecreateRequest) {
	t.Helper()
	for _, key := range []string{syncStatusesAnnotation, unreadyAcquiredKey} {
		if value, ok := r.Annotations[key]; ok {
			t.Errorf("v1beta1 request %s carries annotation %s=%q", r.Name, key, value)
		}
	}
}
