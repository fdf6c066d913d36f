package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/bosun-dev/bosun/test/e2e/cluster"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// The node faults: a component of the node is killed (SIGKILL) while bosun-daemon is in the
// middle of a ContainerRecreateRequest or a NodeImage pull, and started again at once. The
// request or the pull must still end once, in the right phase, and the pod be healthy.

// faultSignal is how every fault ends its component: a crash, no clean-up.
const faultSignal = syscall.SIGKILL

// restartComponent kills the named component of the node and starts it again, returning
// once it is healthy; the time it took is logged.
func restartComponent(t *testing.T, name string) {
	t.Helper()
	began := time.Now()
	if err := requireCluster(t).RestartComponent(testContext(t), name, faultSignal); err != nil {
		t.Fatalf("restarting %s: %v", name, err)
	}
	t.Logf("%s killed (%v) and healthy again after %v", name, faultSignal, time.Since(began).Round(10*time.Millisecond))
}

// slowStoppingPod is the web server pod of the hook log (see hookedWebserverPod) with a
// preStop hook that writes "prestop" and then sleeps hookSleep (none when 0), and a server
// that on SIGTERM writes "sigterm" and serves termDelay more (none when 0), within a grace
// period long enough for both.
func slowStoppingPod(name string, hookSleep, termDelay time.Duration) *corev1.Pod {
	pod := hookedWebserverPod(name)
	container := &pod.Spec.Containers[0]
	if hookSleep > 0 {
		container.Lifecycle.PreStop.Exec.Command = []string{"/webserver", "hook", "prestop", hookSleep.String()}
	} else {
		container.Lifecycle = nil
	}
	if termDelay > 0 {
		container.Env = append(container.Env, corev1.EnvVar{Name: "TERM_DELAY", Value: termDelay.String()})
	}
	grace := int64((hookSleep + termDelay + 10*time.Second) / time.Second)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	return pod
}

// hookLines returns the pod's hook log (GET /hooks), one entry a line.
func hookLines(ctx context.Context, t *testing.T, pod *corev1.Pod) ([]string, error) {
	body, err := clientset(t).CoreV1().Pods(pod.Namespace).ProxyGet("http", pod.Name, fmt.Sprint(cluster.WebserverPort), "/hooks", nil).DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(body)), nil
}

// waitForHookLine waits until the pod's hook log holds line: the hook or the stop it marks
// is in flight.
func waitForHookLine(t *testing.T, pod *corev1.Pod, line string) {
	t.Helper()
	waitFor(t, recreateTimeout, fmt.Sprintf("%q in the hook log of %s", line, pod.Name), func(ctx context.Context) (bool, error) {
		lines, err := hookLines(ctx, t, pod)
		if err != nil {
			return false, nil // the server may be between answers
		}
		for _, l := range lines {
			if l == line {
				return true, nil
			}
		}
		return false, nil
	})
}

// crrHistory records every status a ContainerRecreateRequest shows, through a watch, from
// its creation on.
type crrHistory struct {
	mu       sync.Mutex
	statuses []appsv1alpha1.ContainerRecreateRequestStatus
}

// watchCRR starts recording the request called name in ns; call it before creating it.
func watchCRR(t *testing.T, ns, name string) *crrHistory {
	t.Helper()
	h := &crrHistory{}
	bosun := bosunClientset(t)
	ctx := testContext(t)
	resourceVersion := ""
	go func() {
		for ctx.Err() == nil {
			w, err := bosun.AppsV1alpha1().ContainerRecreateRequests(ns).Watch(ctx, metav1.ListOptions{
				FieldSelector: "metadata.name=" + name, ResourceVersion: resourceVersion,
			})
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for event := range w.ResultChan() {
				crr, ok := event.Object.(*appsv1alpha1.ContainerRecreateRequest)
				if !ok || (event.Type != watch.Added && event.Type != watch.Modified) {
					continue
				}
				resourceVersion = crr.ResourceVersion
				h.mu.Lock()
				h.statuses = append(h.statuses, *crr.Status.DeepCopy())
				h.mu.Unlock()
			}
		}
	}()
	return h
}

// requireCompletedOnce fails unless the request, once Completed, never changed phase or
// completion time again.
func (h *crrHistory) requireCompletedOnce(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	var completion *metav1.Time
	var phases []string
	for _, s := range h.statuses {
		if len(phases) == 0 || phases[len(phases)-1] != string(s.Phase) {
			phases = append(phases, string(s.Phase))
		}
		switch {
		case completion == nil && s.CompletionTime != nil:
			completion = s.CompletionTime.DeepCopy()
		case completion != nil && (s.CompletionTime == nil || !s.CompletionTime.Equal(completion) || s.Phase != appsv1alpha1.ContainerRecreateRequestCompleted):
			t.Errorf("after completing at %v the request showed phase %q, completion %v", completion, s.Phase, s.CompletionTime)
		}
	}
	t.Logf("the request went through the phases %s in %d status versions", strings.Join(phases, " → "), len(h.statuses))
	if completion == nil {
		t.Error("the watch never saw the request complete")
	}
}

// requireRecreatedOnce checks on the node that the pod's container runs as its next
// attempt exactly (one recreate, no second one), under the ID the pod reports, and that
// the pod answers its version.
func requireRecreatedOnce(t *testing.T, before, after *corev1.Pod) {
	t.Helper()
	ctx := testContext(t)
	running, err := runningContainers(ctx, runtimeService(t), string(after.UID))
	if err != nil {
		t.Fatal(err)
	}
	oldAttempt := before.Status.ContainerStatuses[0].RestartCount
	status := after.Status.ContainerStatuses[0]
	if len(running) != 1 || "containerd://"+running[0].Id != status.ContainerID || running[0].Metadata.GetAttempt() != uint32(oldAttempt+1) {
		var seen []string
		for _, c := range running {
			seen = append(seen, fmt.Sprintf("%s attempt %d", c.Id, c.Metadata.GetAttempt()))
		}
		t.Errorf("running containers of %s: %v; want only %s as attempt %d", after.Name, seen, status.ContainerID, oldAttempt+1)
	}
	if version, err := webserverVersion(ctx, clientset(t), after); err != nil || version != "v1" {
		t.Errorf("the recreated web server answers %q (%v), want v1", version, err)
	}
}

// recreateThroughFault runs a ContainerRecreateRequest for a Ready pod, waits for inFlight
// to appear in the pod's hook log, applies fault, and checks that the request completes
// once, Succeeded, with the container recreated exactly once and the pod healthy.
func recreateThroughFault(t *testing.T, pod *corev1.Pod, inFlight string, fault func()) {
	t.Helper()
	ctx := testContext(t)
	ns := newNamespace(t)
	began := time.Now()
	before := startReadyPod(t, ns, pod)
	history := watchCRR(t, ns, "recreate")
	if _, err := bosunClientset(t).AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, newCRR("recreate", pod.Name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForHookLine(t, before, inFlight)
	fault()

	crr := waitForCRRCompleted(t, ns, "recreate")
	requireSucceeded(t, crr)
	after := waitForRestarts(t, before, 1)
	history.requireCompletedOnce(t)
	requireRecreatedOnce(t, before, after)
	lines, err := hookLines(ctx, t, after)
	if err != nil {
		t.Fatalf("GET /hooks: %v", err)
	}
	t.Logf("hook log after the recreate: %v; the case took %v", lines, time.Since(began).Round(100*time.Millisecond))
}

// bosun-daemon is killed while it runs the preStop hook of the container it recreates, and
// restarted at once: the restarted agent stops the container (the hook may run again: a
// hook is at least once), the request completes once, Succeeded, and the container was
// recreated exactly once.
func TestNodeFaultDaemonKilledDuringPreStopHook(t *testing.T) {
	requireCluster(t)
	recreateThroughFault(t, slowStoppingPod("web", 4*time.Second, 0), "prestop", func() {
		restartComponent(t, "bosun-daemon")
	})
}

// bosun-daemon is killed while containerd stops the container (its server serves on for a
// few seconds after SIGTERM), and restarted at once: the stop the runtime was given goes
// on, the restarted agent finishes the request once, and the container was recreated
// exactly once.
func TestNodeFaultDaemonKilledWhileStoppingAContainer(t *testing.T) {
	requireCluster(t)
	recreateThroughFault(t, slowStoppingPod("web", 0, 4*time.Second), "sigterm", func() {
		restartComponent(t, "bosun-daemon")
	})
}

// The kubelet is killed while bosun-daemon runs the preStop hook of a recreate, and
// restarted: the agent stops the container while no kubelet runs, the restarted kubelet
// starts the new one, and the request completes once, Succeeded.
func TestNodeFaultKubeletRestartedDuringRecreate(t *testing.T) {
	requireCluster(t)
	recreateThroughFault(t, slowStoppingPod("web", 3*time.Second, 0), "prestop", func() {
		restartComponent(t, "kubelet")
	})
}

// nodeImageHistory records, through a watch of the node's NodeImage, every status of one
// tag of one image.
type nodeImageHistory struct {
	mu       sync.Mutex
	statuses []appsv1alpha1.ImageTagStatus
	// wrong are the statuses whose counters disagree with their tags.
	wrong []string
}

func watchNodeImageTag(t *testing.T, name, image, tag string) *nodeImageHistory {
	t.Helper()
	h := &nodeImageHistory{}
	bosun := bosunClientset(t)
	ctx := testContext(t)
	resourceVersion := ""
	var lastStatus *appsv1alpha1.NodeImageStatus
	go func() {
		for ctx.Err() == nil {
			w, err := bosun.AppsV1alpha1().NodeImages().Watch(ctx, metav1.ListOptions{
				FieldSelector: "metadata.name=" + name, ResourceVersion: resourceVersion,
			})
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for event := range w.ResultChan() {
				ni, ok := event.Object.(*appsv1alpha1.NodeImage)
				if !ok || (event.Type != watch.Added && event.Type != watch.Modified) {
					continue
				}
				resourceVersion = ni.ResourceVersion
				h.mu.Lock()
				if status := findTagStatus(ni.Status.ImageStatuses[image].Tags, tag); status != nil {
					h.statuses = append(h.statuses, *status.DeepCopy())
				}
				// Only a status the agent wrote must agree with the spec: a change of the
				// spec shows the status written for the spec before it.
				if lastStatus != nil && !apiequality.Semantic.DeepEqual(lastStatus, &ni.Status) {
					if problem := countersProblem(ni); problem != "" {
						h.wrong = append(h.wrong, problem)
					}
				}
				lastStatus = ni.Status.DeepCopy()
				h.mu.Unlock()
			}
		}
	}()
	return h
}

// countersProblem says how the NodeImage's counters disagree with its spec and tag
// statuses written by the agent, "" when they agree. Tags the agent has not reported yet
// count only towards desired.
func countersProblem(ni *appsv1alpha1.NodeImage) string {
	var desired, counted int32
	byPhase := map[appsv1alpha1.ImagePullPhase]int32{}
	for name, spec := range ni.Spec.Images {
		desired += int32(len(spec.Tags))
		for _, tag := range spec.Tags {
			if status := findTagStatus(ni.Status.ImageStatuses[name].Tags, tag.Tag); status != nil {
				byPhase[status.Phase]++
				counted++
			}
		}
	}
	s := ni.Status
	if s.Desired != desired || s.Succeeded != byPhase[appsv1alpha1.ImagePhaseSucceeded] || s.Failed != byPhase[appsv1alpha1.ImagePhaseFailed] ||
		s.Pulling != byPhase[appsv1alpha1.ImagePhasePulling] || s.Waiting != byPhase[appsv1alpha1.ImagePhaseWaiting] ||
		s.Succeeded+s.Failed+s.Pulling+s.Waiting != counted {
		return fmt.Sprintf("resourceVersion %s: desired %d succeeded %d failed %d pulling %d waiting %d, but %d tags in spec with phases %v",
			ni.ResourceVersion, s.Desired, s.Succeeded, s.Failed, s.Pulling, s.Waiting, desired, byPhase)
	}
	return ""
}

// pullThroughFault pulls the large web server image of the fault cases through the slow registry with a
// NodeImage, kills the named component once the tag reports progress between 0 and 100,
// and checks that the tag ends Succeeded once, with progress 100, an image ID and true
// counters, and that the image is on the node.
func pullThroughFault(t *testing.T, component string, backoffLimit int32) {
	t.Helper()
	requireCluster(t)
	began := time.Now()
	images := imageService(t)
	image := cluster.SlowWebserverImage(cluster.LargeFaultsWebserverTag)
	removeImage(t, images, image)
	secret := registrySecret(t, appsv1alpha1.DefaultImagePullSecretNamespace, "e2e-node-fault-"+component, cluster.PrivateRegistryPassword)
	name := nodeImage(t).Name
	history := watchNodeImageTag(t, name, slowWebserverName, cluster.LargeFaultsWebserverTag)

	requestPull(t, slowWebserverName, secret.Name, cluster.LargeFaultsWebserverTag, backoffLimit)
	var inFlight appsv1alpha1.ImageTagStatus
	waitFor(t, pullTimeout, "the pull of "+image+" to be under way", func(context.Context) (bool, error) {
		history.mu.Lock()
		defer history.mu.Unlock()
		for _, s := range history.statuses {
			if s.Phase == appsv1alpha1.ImagePhasePulling && s.Progress > 0 && s.Progress < 100 {
				inFlight = s
				return true, nil
			}
			if s.CompletionTime != nil {
				return false, fmt.Errorf("the pull finished before the fault: %+v", s)
			}
		}
		return false, nil
	})
	t.Logf("pull at %d%% when %s is killed", inFlight.Progress, component)
	restartComponent(t, component)

	final := waitForTag(t, slowWebserverName, cluster.LargeFaultsWebserverTag)
	if final.Phase != appsv1alpha1.ImagePhaseSucceeded || final.Progress != 100 || !strings.HasPrefix(final.ImageID, slowWebserverName+"@") || final.Message != "" {
		t.Fatalf("tag %s ended %+v; want Succeeded, progress 100, an image ID", cluster.LargeFaultsWebserverTag, final)
	}
	present, err := imagePresent(testContext(t), images, image)
	if err != nil || !present {
		t.Errorf("containerd does not have %s after the pull (%v)", image, err)
	}
	// The last status written is on the watch too; wait for it, then look at all of them.
	waitFor(t, time.Minute, "the watch to see the tag's completion", func(context.Context) (bool, error) {
		history.mu.Lock()
		defer history.mu.Unlock()
		return len(history.statuses) > 0 && history.statuses[len(history.statuses)-1].CompletionTime != nil, nil
	})
	history.mu.Lock()
	defer history.mu.Unlock()
	var completion *metav1.Time
	var steps []string
	for _, s := range history.statuses {
		step := fmt.Sprintf("%s %d%%", s.Phase, s.Progress)
		if len(steps) == 0 || steps[len(steps)-1] != step {
			steps = append(steps, step)
		}
		switch {
		case completion == nil && s.CompletionTime != nil:
			completion = s.CompletionTime.DeepCopy()
		case completion != nil && (s.CompletionTime == nil || !s.CompletionTime.Equal(completion) || s.Phase != appsv1alpha1.ImagePhaseSucceeded):
			t.Errorf("after completing at %v the tag showed %s, completion %v", completion, s.Phase, s.CompletionTime)
		}
	}
	for _, problem := range history.wrong {
		t.Errorf("NodeImage counters disagree with the tags: %s", problem)
	}
	t.Logf("tag %s went: %s; the case took %v", cluster.LargeFaultsWebserverTag, strings.Join(steps, ", "), time.Since(began).Round(100*time.Millisecond))
}

// bosun-daemon is killed while a NodeImage pull comes through the slow registry, and
// restarted at once: the restarted agent pulls the tag again (a kill is no failed attempt:
// the tag allows none), which ends Succeeded once, with true counters.
func TestNodeFaultDaemonKilledWhilePulling(t *testing.T) {
	pullThroughFault(t, "bosun-daemon", 0)
}

// containerd is killed while it pulls a NodeImage tag through the slow registry, and
// started again with the same configuration: the attempt the runtime dropped fails, the
// next one (backoffLimit 3, the default) pulls the image, and the tag ends Succeeded once.
// bosun-daemon is ready again, and so is the node.
func TestNodeFaultContainerdRestartedWhilePulling(t *testing.T) {
	pullThroughFault(t, "containerd", 3)
	c := requireCluster(t)
	if err := framework.WaitForHealthEndpoint(testContext(t), time.Minute, c.Component("bosun-daemon"), c.HealthPort("bosun-daemon"), "/readyz"); err != nil {
		t.Errorf("bosun-daemon after containerd's restart: %v", err)
	}
}
