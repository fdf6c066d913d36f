package containerrecreaterequest

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/daemon/cri/crifake"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

const (
	phaseRecreating = appsv1alpha1.ContainerRecreateRequestRecreating
	phasePending    = appsv1alpha1.ContainerRecreateRequestPending
	stateSucceeded  = appsv1alpha1.ContainerRecreateRequestSucceeded
	stateFailed     = appsv1alpha1.ContainerRecreateRequestFailed
)

// TestAgentHappyPath: the agent stops the container once, and the request completes once
// the kubelet (the test) reports the new container ready.
func TestAgentHappyPath(t *testing.T) {
	a := setupAgent(t)
	pod := a.createRuntimePod(t, newPod("web", "", "app"))
	oldID := a.containerIDOfRuntime(pod, "app")
	a.requests().Create(t, newCRR("r1", "web", "app"))

	a.requests().WaitForEvenAbsent(t, "r1", "phase Recreating", hasPhase(phaseRecreating))
	stops := a.waitForStops(t, 1)
	if stops[0].ContainerID != oldID || stops[0].Timeout < 2 {
		t.Errorf("stop %+v, want container %s with a grace of at least 2 s", stops[0], oldID)
	}
	if stops[0].Timeout != 30 {
		t.Errorf("stop grace %d, want the pod's 30 s", stops[0].Timeout)
	}

	a.restart(t, pod, "app")
	r := a.waitForCompleted(t, "r1")
	newID := crifake.KubeContainerID(a.containerIDOfRuntime(pod, "app"))
	var synced []appsv1alpha1.ContainerRecreateRequestSyncContainerStatus
	if err := json.Unmarshal([]byte(r.Annotations[syncStatusesAnnotation]), &synced); err != nil || len(synced) != 1 ||
		synced[0].ContainerID != newID || !synced[0].Ready {
		t.Errorf("annotation %s = %q (%v), want the new container %s, ready", syncStatusesAnnotation, r.Annotations[syncStatusesAnnotation], err, newID)
	}
	// The controllers wrote the field; the v1alpha1 view above is its down-conversion.
	hub := a.getHub(t, "r1")
	if snap := hub.Status.ContainerStatusSnapshot; len(snap) != 1 || snap[0].ContainerID != newID || !snap[0].Ready {
		t.Errorf("v1beta1 status.containerStatusSnapshot = %+v, want the new container %s, ready", snap, newID)
	}
	expectNoCarriers(t, hub)
	if s := stateOf(r, "app"); s.Phase != stateSucceeded || !s.IsKilled || r.Status.Message != "" {
		t.Errorf("request: %s; want app Succeeded and killed, no message", describeCRR(r))
	}
	a.requests().WaitForEvenAbsent(t, "r1", "the active label removed", func(r *crr) bool { _, active := r.Labels[activeLabel]; return r != nil && !active })
	if got := len(a.runtime.StopCalls()); got != 1 {
		t.Errorf("%d StopContainer calls, want 1", got)
	}
	a.waitForPodEvent(t, "web", corev1.EventTypeNormal, "Killing", "Stopping container app by ContainerRecreateRequest r1")
}

// TestAgentPreStop: the exec preStop hook runs through ExecSync before StopContainer, and
// the stop grace is what the hook left of the grace period, at least 2 s.
func TestAgentPreStop(t *testing.T) {
	a := setupAgent(t)
	a.runtime.SetExecSyncHandler(func(call crifake.ExecCall) (*runtimeapi.ExecSyncResponse, error) {
		// The hook's duration is its argument, in seconds.
		seconds, _ := time.ParseDuration(call.Cmd[1] + "s")
		time.Sleep(seconds)
		return &runtimeapi.ExecSyncResponse{}, nil
	})
	tests := []struct {
		pod           string
		grace, sleeps int64
		// The stop grace must lie within [minStop, maxStop]: the hook's duration is
		// subtracted in whole seconds, and a slow machine may add one.
		minStop, maxStop int64
	}{
		{pod: "subtracted", grace: 10, sleeps: 3, minStop: 6, maxStop: 7},
		{pod: "floored", grace: 3, sleeps: 2, minStop: 2, maxStop: 2},
	}
	for i, tc := range tests {
		pod := newPod(tc.pod, "", "app")
		pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
			Exec: &corev1.ExecAction{Command: []string{"/drain", strconv.FormatInt(tc.sleeps, 10)}},
		}}
		pod = a.createRuntimePod(t, pod)
		id := a.containerIDOfRuntime(pod, "app")
		a.requests().Create(t, withCRR(newCRR("r-"+tc.pod, tc.pod, "app"),
			strategy(func(s *appsv1alpha1.ContainerRecreateRequestStrategy) {
				s.TerminationGracePeriodSeconds = ptr.To(tc.grace)
			})))
		a.waitForStops(t, i+1)

		var exec, stop *crifake.ContainerCall
		for _, call := range a.runtime.ContainerCalls() {
			if call.ContainerID != id {
				continue
			}
			switch {
			case call.Method == "ExecSync" && stop == nil:
				exec = &call
			case call.Method == "StopContainer":
				stop = &call
			}
		}
		if exec == nil || exec.Cmd[0] != "/drain" || exec.Timeout != tc.grace {
			t.Errorf("%s: ExecSync %+v, want /drain with timeout %d before StopContainer", tc.pod, exec, tc.grace)
		}
		if stop == nil || stop.Timeout < tc.minStop || stop.Timeout > tc.maxStop {
			t.Errorf("%s: StopContainer %+v, want a grace within [%d, %d]", tc.pod, stop, tc.minStop, tc.maxStop)
		}
		a.restart(t, pod, "app")
		a.waitForCompleted(t, "r-"+tc.pod)
	}
}

// TestAgentOrderedRecreate: with orderedRecreate the second container is stopped only once
// the first one is Succeeded; without it, both are stopped, one per sync, without waiting.
func TestAgentOrderedRecreate(t *testing.T) {
	a := setupAgent(t)

	t.Run("ordered", func(t *testing.T) {
		pod := a.createRuntimePod(t, newPod("ordered", "", "a", "b"))
		witness := a.witnessStops(t, "ordered", "r-ordered")
		a.requests().Create(t, withCRR(newCRR("r-ordered", "ordered", "a", "b"),
			strategy(func(s *appsv1alpha1.ContainerRecreateRequestStrategy) { s.OrderedRecreate = true })))
		a.waitForStops(t, 1)
		// a comes back, not ready yet: b must wait.
		a.runtime.RestartContainer(string(pod.UID), "a")
		a.writeRuntimeStatuses(t, pod, false, "a")
		a.requests().WaitForEvenAbsent(t, "r-ordered", "the copied status of a, not ready", func(r *crr) bool {
			return r != nil && strings.Contains(r.Annotations[syncStatusesAnnotation], `"ready":false`)
		})
		a.writeRuntimeStatuses(t, pod, true, "a")
		a.waitForStops(t, 2)
		a.restart(t, pod, "b")
		r := a.waitForCompleted(t, "r-ordered")
		if stateOf(r, "a").Phase != stateSucceeded || stateOf(r, "b").Phase != stateSucceeded {
			t.Errorf("request: %s", describeCRR(r))
		}
		moments := witness.moments()
		if len(moments) != 2 {
			t.Fatalf("%d stops, want 2", len(moments))
		}
		if s := stateOf(moments[0].requests["r-ordered"], "b"); s.IsKilled || s.Phase == phaseRecreating {
			t.Errorf("when a was stopped, b was %+v", s)
		}
		if s := stateOf(moments[1].requests["r-ordered"], "a"); s.Phase != stateSucceeded {
			t.Errorf("b was stopped while a was %+v, want Succeeded", s)
		}
	})

	t.Run("unordered", func(t *testing.T) {
		pod := a.createRuntimePod(t, newPod("unordered", "", "a", "b"))
		before := len(a.runtime.StopCalls())
		witness := a.witnessStops(t, "unordered", "r-unordered")
		a.requests().Create(t, newCRR("r-unordered", "unordered", "a", "b"))
		// Both are stopped with no pod status written in between.
		a.waitForStops(t, before+2)
		moments := witness.moments()
		if s := stateOf(moments[1].requests["r-unordered"], "a"); s.Phase != phaseRecreating || !s.IsKilled {
			t.Errorf("when b was stopped, a was %+v; want the stop of a recorded first", s)
		}
		a.restart(t, pod, "a")
		a.restart(t, pod, "b")
		r := a.waitForCompleted(t, "r-unordered")
		if stateOf(r, "a").Phase != stateSucceeded || stateOf(r, "b").Phase != stateSucceeded {
			t.Errorf("request: %s", describeCRR(r))
		}
	})
}

// TestAgentFailurePolicy: the runtime fails to stop the first container. With Fail the
// request completes with it Failed and the second untouched; with Ignore the second is
// still recreated.
func TestAgentFailurePolicy(t *testing.T) {
	a := setupAgent(t)
	for _, policy := range []appsv1alpha1.ContainerRecreateRequestFailurePolicyType{
		appsv1alpha1.ContainerRecreateRequestFailurePolicyFail, appsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore,
	} {
		name := strings.ToLower(string(policy))
		pod := a.createRuntimePod(t, newPod(name, "", "a", "b"))
		a.runtime.FailStopContainer(a.containerIDOfRuntime(pod, "a"), status.Error(codes.Internal, "device busy"))
		bID := a.containerIDOfRuntime(pod, "b")
		a.requests().Create(t, withCRR(newCRR("r-"+name, name, "a", "b"),
			strategy(func(s *appsv1alpha1.ContainerRecreateRequestStrategy) { s.FailurePolicy = policy })))

		if policy == appsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore {
			err := framework.WaitFor(a.Ctx, waitTimeout, "b stopped", func(context.Context) (bool, error) {
				for _, call := range a.runtime.StopCalls() {
					if call.ContainerID == bID {
						return true, nil
					}
				}
				return false, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			a.restart(t, pod, "b")
		}
		r := a.waitForCompleted(t, "r-"+name)
		sa, sb := stateOf(r, "a"), stateOf(r, "b")
		if sa.Phase != stateFailed || !strings.HasPrefix(sa.Message, "kill container error: ") || !strings.Contains(sa.Message, "device busy") {
			t.Errorf("%s: a is %+v, want Failed with the kill error", policy, sa)
		}
		switch policy {
		case appsv1alpha1.ContainerRecreateRequestFailurePolicyFail:
			if sb.Phase != phasePending || sb.IsKilled {
				t.Errorf("Fail: b is %+v, want Pending and untouched", sb)
			}
			for _, call := range a.runtime.StopCalls() {
				if call.ContainerID == bID {
					t.Errorf("Fail: b was stopped")
				}
			}
		default:
			if sb.Phase != stateSucceeded {
				t.Errorf("Ignore: b is %+v, want Succeeded", sb)
			}
		}
	}
}

// TestAgentMinStartedSeconds: the new container counts as Succeeded only once it has run
// for minStartedSeconds.
func TestAgentMinStartedSeconds(t *testing.T) {
	a := setupAgent(t)
	pod := a.createRuntimePod(t, newPod("web", "", "app"))
	a.requests().Create(t, withCRR(newCRR("r1", "web", "app"),
		strategy(func(s *appsv1alpha1.ContainerRecreateRequestStrategy) { s.MinStartedSeconds = 10 })))
	a.waitForStops(t, 1)
	a.restart(t, pod, "app")
	current, _ := a.runtime.Container(string(pod.UID), "app")
	early := a.requests().WaitForEvenAbsent(t, "r1", "the copied status of the new container", func(r *crr) bool {
		return r != nil && strings.Contains(r.Annotations[syncStatusesAnnotation], current.ID)
	})
	if time.Since(current.StartedAt) < 10*time.Second && stateOf(early, "app").Phase == stateSucceeded {
		t.Errorf("Succeeded %v after the restart, before minStartedSeconds", time.Since(current.StartedAt))
	}
	r := a.waitForCompleted(t, "r1")
	if stateOf(r, "app").Phase != stateSucceeded {
		t.Fatalf("request: %s", describeCRR(r))
	}
	// completionTime is stored in whole seconds.
	if earliest := current.StartedAt.Truncate(time.Second).Add(10 * time.Second); r.Status.CompletionTime.Time.Before(earliest) {
		t.Errorf("completed at %v, before %v (10 s after the restart at %v)", r.Status.CompletionTime.Time, earliest, current.StartedAt)
	}
}

// TestAgentUnreadyGrace: the pod is made not ready through KruisePodReady and no container
// is stopped for unreadyGracePeriodSeconds; afterwards the pod is ready again and the
// finalizer is gone.
func TestAgentUnreadyGrace(t *testing.T) {
	a := setupAgent(t)
	pod := newPod("web", "", "app")
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: kruisePodReady}}
	pod = a.createRuntimePod(t, pod)
	a.setKruisePodReady(t, pod.Name)
	witness := a.witnessStops(t, "web", "r1")
	a.requests().Create(t, withCRR(newCRR("r1", "web", "app"),
		strategy(func(s *appsv1alpha1.ContainerRecreateRequestStrategy) { s.UnreadyGracePeriodSeconds = ptr.To[int64](3) })))

	a.waitForStops(t, 1)
	m := witness.moments()[0]
	r := m.requests["r1"]
	acquired, err := time.Parse(time.RFC3339, r.Annotations[unreadyAcquiredKey])
	if err != nil {
		t.Fatalf("annotation %s at the stop: %v; request %s", unreadyAcquiredKey, err, describeCRR(r))
	}
	if !containsString(r.Finalizers, unreadyAcquiredKey) {
		t.Errorf("finalizers at the stop %v, want %s", r.Finalizers, unreadyAcquiredKey)
	}
	if c := podCondition(m.pod, kruisePodReady); c == nil || c.Status == corev1.ConditionTrue {
		t.Errorf("condition %s at the stop: %+v, want not True", kruisePodReady, c)
	}
	if m.at.Before(acquired.Add(3 * time.Second)) {
		t.Errorf("stopped at %v, within 3 s of the pod being made unready at %v", m.at, acquired)
	}

	a.restart(t, pod, "app")
	a.waitForCompleted(t, "r1")
	a.requests().WaitForEvenAbsent(t, "r1", "the finalizer removed", func(r *crr) bool { return r != nil && !containsString(r.Finalizers, unreadyAcquiredKey) })
	a.expectGraceCarriedBothWays(t, "r1", acquired)
	err = framework.WaitFor(a.Ctx, waitTimeout, kruisePodReady+" True again", func(ctx context.Context) (bool, error) {
		live, err := a.Client.CoreV1().Pods(a.Namespace).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		c := podCondition(live, kruisePodReady)
		return c != nil && c.Status == corev1.ConditionTrue, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// expectGraceCarriedBothWays checks a finished request with unreadyGracePeriodSeconds in
// both versions: in v1beta1 the controllers' status fields (the snapshot, PreRecreateGrace
// True since acquired) and no v1alpha1 annotation; in v1alpha1 both annotations, the time
// equal to the condition's. A v1alpha1 client's update of a label leaves the v1beta1 status
// as it was.
func (a *agentEnv) expectGraceCarriedBothWays(t *testing.T, name string, acquired time.Time) {
	t.Helper()
	a.requests().WaitForEvenAbsent(t, name, "the active label removed", func(r *crr) bool { _, active := r.Labels[activeLabel]; return r != nil && !active })
	hub := a.getHub(t, name)
	expectNoCarriers(t, hub)
	if len(hub.Status.ContainerStatusSnapshot) != 1 || !hub.Status.ContainerStatusSnapshot[0].Ready {
		t.Errorf("v1beta1 status.containerStatusSnapshot = %+v, want the recreated container, ready", hub.Status.ContainerStatusSnapshot)
	}
	var grace *metav1.Condition
	for i := range hub.Status.Conditions {
		if c := &hub.Status.Conditions[i]; c.Type == "PreRecreateGrace" {
			grace = c
		}
	}
	if grace == nil || grace.Status != metav1.ConditionTrue || grace.Reason != "PreRecreateGrace" || !grace.LastTransitionTime.Time.Equal(acquired) {
		t.Errorf("v1beta1 PreRecreateGrace condition = %+v, want True since %v with reason PreRecreateGrace", grace, acquired)
	}

	old := a.requests().Get(t, name)
	if got := old.Annotations[unreadyAcquiredKey]; grace != nil && got != grace.LastTransitionTime.UTC().Format(time.RFC3339) {
		t.Errorf("v1alpha1 annotation %s = %q, want the condition's time %s", unreadyAcquiredKey, got, grace.LastTransitionTime.UTC().Format(time.RFC3339))
	}
	var synced []appsv1alpha1.ContainerRecreateRequestSyncContainerStatus
	if err := json.Unmarshal([]byte(old.Annotations[syncStatusesAnnotation]), &synced); err != nil ||
		!reflect.DeepEqual(synced, toV1alpha1Snapshot(hub.Status.ContainerStatusSnapshot)) {
		t.Errorf("v1alpha1 annotation %s = %q (%v), want the v1beta1 snapshot %+v", syncStatusesAnnotation, old.Annotations[syncStatusesAnnotation], err, hub.Status.ContainerStatusSnapshot)
	}

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live, err := a.Bosun.AppsV1alpha1().ContainerRecreateRequests(a.Namespace).Get(a.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if live.Labels == nil {
			live.Labels = map[string]string{}
		}
		live.Labels["touched-by"] = "v1alpha1-client"
		_, err = a.Bosun.AppsV1alpha1().ContainerRecreateRequests(a.Namespace).Update(a.Ctx, live, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("changing a label of %s through v1alpha1: %v", name, err)
	}
	after := a.getHub(t, name)
	if after.Labels["touched-by"] != "v1alpha1-client" {
		t.Errorf("the v1alpha1 label change is missing in v1beta1: %v", after.Labels)
	}
	if !apiequality.Semantic.DeepEqual(after.Status, hub.Status) {
		t.Errorf("v1beta1 status after a v1alpha1 label change:\n%+v\nwant it unchanged:\n%+v", after.Status, hub.Status)
	}
	expectNoCarriers(t, after)
}

// toV1alpha1Snapshot is the snapshot as the v1alpha1 annotation lists it.
func toV1alpha1Snapshot(in []appsv1beta1.ContainerRecreateRequestSyncContainerStatus) []appsv1alpha1.ContainerRecreateRequestSyncContainerStatus {
	var out []appsv1alpha1.ContainerRecreateRequestSyncContainerStatus
	for _, s := range in {
		out = append(out, appsv1alpha1.ContainerRecreateRequestSyncContainerStatus{Name: s.Name, Ready: s.Ready, RestartCount: s.RestartCount, ContainerID: s.ContainerID})
	}
	return out
}

// TestAgentSerialization: of two requests for one pod one runs, the other is Pending until
// the first completes, and both complete in creation order. A request created right after
// the finished ones are deleted runs too (OpenKruise issue #2474).
func TestAgentSerialization(t *testing.T) {
	a := setupAgent(t)
	pod := a.createRuntimePod(t, newPod("web", "", "app"))
	witness := a.witnessStops(t, "web", "r1", "r2", "r3")
	a.requests().Create(t, newCRR("r1", "web", "app"))
	a.requests().Create(t, newCRR("r2", "web", "app"))

	a.requests().WaitForEvenAbsent(t, "r2", "phase Pending", hasPhase(phasePending))
	a.waitForStops(t, 1)
	m := witness.moments()[0]
	// r2 may not have reached the agent yet at that moment; it must not be running.
	if m.requests["r1"].Status.Phase != phaseRecreating || m.requests["r2"].Status.Phase == phaseRecreating {
		t.Errorf("at the first stop: r1 %s; r2 %s; want r1 Recreating, r2 waiting", describeCRR(m.requests["r1"]), describeCRR(m.requests["r2"]))
	}
	if r2 := a.requests().Get(t, "r2"); r2.Status.Phase != phasePending {
		t.Errorf("r2 before r1 completed: %s; want Pending", describeCRR(r2))
	}
	a.restart(t, pod, "app")
	r1 := a.waitForCompleted(t, "r1")
	r2 := a.waitForCompleted(t, "r2")
	if r2.Status.CompletionTime.Before(r1.Status.CompletionTime) {
		t.Errorf("r2 completed at %v, before r1 at %v", r2.Status.CompletionTime, r1.Status.CompletionTime)
	}
	// The container r2 asked for was recreated after r2 was created: r2 is satisfied by it.
	if stateOf(r1, "app").Phase != stateSucceeded || stateOf(r2, "app").Phase != stateSucceeded {
		t.Errorf("r1: %s; r2: %s", describeCRR(r1), describeCRR(r2))
	}
	for _, moment := range witness.moments() {
		if r := moment.requests["r2"]; r != nil && r.Status.Phase == phaseRecreating && !completed(moment.requests["r1"]) {
			t.Errorf("a container was stopped for r2 while r1 was %s", describeCRR(moment.requests["r1"]))
		}
	}

	for _, name := range []string{"r1", "r2"} {
		if err := a.Bosun.AppsV1alpha1().ContainerRecreateRequests(a.Namespace).Delete(a.Ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	stops := len(a.runtime.StopCalls())
	a.requests().Create(t, newCRR("r3", "web", "app"))
	a.waitForStops(t, stops+1)
	a.restart(t, pod, "app")
	if r3 := a.waitForCompleted(t, "r3"); stateOf(r3, "app").Phase != stateSucceeded {
		t.Errorf("r3: %s", describeCRR(r3))
	}
}
