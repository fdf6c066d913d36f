package containerrecreaterequest

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
	"github.com/bosun-dev/bosun/pkg/daemon/cri/crifake"
)

const (
	pending    = appsv1beta1.ContainerRecreateRequestPending
	recreating = appsv1beta1.ContainerRecreateRequestRecreating
	completed  = appsv1beta1.ContainerRecreateRequestCompleted
)

// TestHappyPath follows one request from pick-up to completion: the phase, the states, one
// stop with the request's grace period, the Killing event, and Succeeded once the manager
// copied the new container's ready status.
func TestHappyPath(t *testing.T) {
	f := newFixture(t, "app")
	f.addPod()
	f.create(f.newRequest("r1", "app"))

	f.sync()
	f.expectPhase("r1", recreating)
	f.expectStates("r1")
	f.sync()
	f.expectStates("r1", "app:Pending")
	if len(f.stops()) != 0 {
		t.Fatal("the states must be written before any container is stopped")
	}
	f.sync()
	f.expectStates("r1", "app:Recreating:killed")
	if got, want := f.stops(), []string{f.ids["app"] + "/30s"}; !slices.Equal(got, want) {
		t.Errorf("stops %v, want %v", got, want)
	}
	events := f.events()
	if len(events) != 1 || events[0] != "Normal Killing Stopping container app by ContainerRecreateRequest r1" {
		t.Errorf("events %q", events)
	}

	// Stopped, not restarted yet; then restarted, but the pod status not yet copied.
	f.sync()
	newID := f.runtime.RestartContainer(testPodUID, "app")
	f.sync()
	f.expectStates("r1", "app:Recreating:killed")
	f.expectPhase("r1", recreating)
	// The copied status of the new container, not ready yet, then ready.
	f.syncStatuses("r1", false, "app")
	f.sync()
	f.expectStates("r1", "app:Recreating:killed")
	f.syncStatuses("r1", true, "app")
	f.sync()
	f.expectStates("r1", "app:Succeeded:killed")
	f.queue.Reset()
	f.sync()
	crr := f.get("r1")
	if crr.Status.Phase != completed || crr.Status.CompletionTime == nil || !crr.Status.CompletionTime.Time.Equal(t0) || crr.Status.Message != "" {
		t.Errorf("status %+v, want Completed at t0 without message", crr.Status)
	}
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{podQueueKey}) {
		t.Errorf("completing must queue the pod again for its next request; queued %v", got)
	}
	if got := len(f.stops()); got != 1 {
		t.Errorf("%d stops, want 1", got)
	}
	if c, _ := f.runtime.Container(testPodUID, "app"); c.ID != newID {
		t.Errorf("current container %s, want %s", c.ID, newID)
	}
	// Finished: nothing more happens.
	before := f.writes()
	f.sync()
	if f.writes() != before {
		t.Error("a completed request must not be written again")
	}
}

// Only one request of a pod runs at a time; the others are Pending, and run in creation
// order, each as soon as the previous one completed.
func TestSerialization(t *testing.T) {
	f := newFixture(t, "app")
	first := f.newRequest("r1", "app")
	f.clock.Step(time.Second)
	second := f.newRequest("r0-created-later", "app")
	f.create(second)
	f.create(first)

	f.sync()
	f.expectPhase("r1", recreating)
	f.expectPhase("r0-created-later", pending)
	// r1 runs to completion; r0 stays Pending meanwhile.
	f.sync()
	f.sync()
	f.runtime.RestartContainer(testPodUID, "app")
	f.syncStatuses("r1", true, "app")
	f.sync()
	f.expectPhase("r0-created-later", pending)
	f.sync()
	f.expectPhase("r1", completed)
	f.expectPhase("r0-created-later", pending)
	// The next sync starts the second one, which recreates the new container.
	f.sync()
	f.expectPhase("r0-created-later", recreating)
	if got := len(f.stops()); got != 1 {
		t.Errorf("%d stops before the second request ran, want 1", got)
	}
}

// Requests of the same second run in name order; a Recreating one comes before older
// Pending ones.
func TestRunOrder(t *testing.T) {
	mk := func(name string, second int, phase appsv1beta1.ContainerRecreateRequestPhase) *appsv1beta1.ContainerRecreateRequest {
		return &appsv1beta1.ContainerRecreateRequest{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(second) * time.Second))},
			Status:     appsv1beta1.ContainerRecreateRequestStatus{Phase: phase},
		}
	}
	requests := []*appsv1beta1.ContainerRecreateRequest{
		mk("new-b", 1, ""), mk("new-a", 1, ""), mk("old-new", 0, ""), mk("queued", 0, pending),
		mk("running", 5, recreating), mk("done", 9, completed),
	}
	slices.SortFunc(requests, inRunOrder)
	var got []string
	for _, crr := range requests {
		got = append(got, crr.Name)
	}
	if want := []string{"done", "running", "queued", "old-new", "new-a", "new-b"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

// A cached request older than this agent's write to it holds the pod back, and the pod is
// looked at again when the wait ends instead of being dropped.
func TestWaitsForOwnWrites(t *testing.T) {
	f := newFixture(t, "app")
	crr := f.create(f.newRequest("r1", "app"))
	stale := crr.DeepCopy()
	stale.ResourceVersion = "10"
	if err := f.requests.Update(stale); err != nil {
		t.Fatal(err)
	}
	written := crr.DeepCopy()
	written.ResourceVersion = "11"
	f.c.written.Expect(podKey(written), written)
	f.clock.Step(3 * time.Second)

	before := f.writes()
	if err := f.c.syncPod(f.ctx, podQueueKey); err != nil {
		t.Fatal(err)
	}
	if f.writes() != before {
		t.Error("nothing may be written while the cache is stale")
	}
	if got, want := f.queue.Delayed(), []queuetest.Delayed{{Key: podQueueKey, Delay: 7 * time.Second}}; !slices.Equal(got, want) {
		t.Errorf("delayed %v, want %v", got, want)
	}
	f.clock.Step(7 * time.Second)
	if err := f.c.syncPod(f.ctx, podQueueKey); err != nil {
		t.Fatal(err)
	}
	if f.writes() == before {
		t.Error("after the wait the request must be worked on")
	}
}

func TestUnreadyGrace(t *testing.T) {
	f := newFixture(t, "app")
	crr := f.newRequest("r1", "app")
	crr.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To[int64](3)
	crr.Status.Phase = recreating
	f.create(crr)

	// No PreRecreateGrace condition yet: wait for the manager.
	before := f.writes()
	f.sync()
	if f.writes() != before || len(f.queue.Delayed()) != 0 {
		t.Error("without the condition the agent waits for the manager's write")
	}
	// One that is not True is no acquisition either.
	f.setConditions("r1", metav1.Condition{Type: "PreRecreateGrace", Status: metav1.ConditionFalse, Reason: "NotYet",
		LastTransitionTime: metav1.NewTime(f.clock.Now().Add(-time.Hour))})
	before = f.writes()
	f.sync()
	if f.writes() != before || len(f.queue.Delayed()) != 0 {
		t.Error("with the condition not True the agent waits for the manager's write")
	}
	// Acquired one second ago: two seconds left. A stale v1alpha1 annotation beside the
	// condition does not count.
	crr = f.get("r1")
	crr.Annotations = map[string]string{appsv1beta1.ContainerRecreateRequestUnreadyAcquiredKey: f.clock.Now().Add(-time.Hour).Format(time.RFC3339)}
	f.update(crr)
	f.setConditions("r1", metav1.Condition{Type: "PreRecreateGrace", Status: metav1.ConditionTrue, Reason: "PreRecreateGrace",
		LastTransitionTime: metav1.NewTime(f.clock.Now().Add(-time.Second))})
	f.sync()
	if got, want := f.queue.Delayed(), []queuetest.Delayed{{Key: podQueueKey, Delay: 2*time.Second + unreadyGraceSlack}}; !slices.Equal(got, want) {
		t.Errorf("delayed %v, want %v", got, want)
	}
	f.expectStates("r1")
	f.clock.Step(2 * time.Second)
	f.sync()
	f.expectStates("r1", "app:Pending")
}

// A request whose only record of the acquisition is the v1alpha1 annotation (a v1alpha1
// manager's write, or OpenKruise's) waits on it as before; one that does not parse
// completes the request.
func TestUnreadyGraceFromTheAnnotation(t *testing.T) {
	f := newFixture(t, "app")
	crr := f.newRequest("r1", "app")
	crr.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To[int64](3)
	crr.Status.Phase = recreating
	crr.Annotations = map[string]string{appsv1beta1.ContainerRecreateRequestUnreadyAcquiredKey: f.clock.Now().Add(-time.Second).Format(time.RFC3339)}
	f.create(crr)
	f.sync()
	if got, want := f.queue.Delayed(), []queuetest.Delayed{{Key: podQueueKey, Delay: 2*time.Second + unreadyGraceSlack}}; !slices.Equal(got, want) {
		t.Errorf("delayed %v, want %v", got, want)
	}
	f.expectStates("r1")
	f.clock.Step(2 * time.Second)
	f.sync()
	f.expectStates("r1", "app:Pending")

	// An annotation that does not parse completes the request.
	g := newFixture(t, "app")
	bad := g.newRequest("r2", "app")
	bad.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To[int64](3)
	bad.Status.Phase = recreating
	bad.Annotations = map[string]string{appsv1beta1.ContainerRecreateRequestUnreadyAcquiredKey: "yesterday"}
	g.create(bad)
	g.sync()
	got := g.get("r2").Status
	if got.Phase != completed || !strings.Contains(got.Message, `failed to parse unready acquired time "yesterday"`) {
		t.Errorf("status %+v", got)
	}
}

// The pod status a v1alpha1 manager copied into the annotation, with no status field,
// lets the container count as Succeeded as the field does.
func TestSucceededFromTheAnnotation(t *testing.T) {
	f := newFixture(t, "app")
	crr := f.newRequest("r1", "app")
	crr.Status.Phase = recreating
	f.create(crr)
	f.sync()
	f.sync()
	f.expectStates("r1", "app:Recreating:killed")
	f.runtime.RestartContainer(testPodUID, "app")
	f.syncStatusesAnnotation("r1", false, "app")
	f.sync()
	f.expectStates("r1", "app:Recreating:killed")
	f.syncStatusesAnnotation("r1", true, "app")
	f.sync()
	f.expectStates("r1", "app:Succeeded:killed")
	f.sync()
	f.expectPhase("r1", completed)
}

func TestOtherRuntimeCompletes(t *testing.T) {
	f := newFixture(t, "app")
	crr := f.newRequest("r1", "app")
	crr.Status.Phase = recreating
	crr.Spec.Containers[0].StatusContext.ContainerID = "docker://abc"
	f.create(crr)
	f.sync()
	got := f.get("r1").Status
	if got.Phase != completed || got.Message != `failed to find runtime service: container app runs in runtime "docker", but this node's runtime is "`+crifake.RuntimeName+`"` {
		t.Errorf("status %+v", got)
	}
}

func TestRuntimeUnavailableRetries(t *testing.T) {
	f := newFixtureWithRuntime(t, noRuntime{}, "app")
	crr := f.newRequest("r1", "app")
	crr.Status.Phase = recreating
	f.create(crr)
	if err := f.syncErr(); err == nil || !strings.Contains(err.Error(), "not available") {
		t.Errorf("sync = %v, want an error to retry with backoff", err)
	}
	f.expectPhase("r1", recreating)
}

type noRuntime struct{}

func (noRuntime) Runtime() *criRuntime { return nil }

func TestOrderedRecreate(t *testing.T) {
	f := newFixture(t, "a", "b")
	crr := f.newRequest("r1", "a", "b")
	crr.Spec.Strategy.OrderedRecreate = true
	crr.Status.Phase = recreating
	f.create(crr)
	f.sync()
	f.sync()
	f.expectStates("r1", "a:Recreating:killed", "b:Pending")
	f.runtime.RestartContainer(testPodUID, "a")
	f.sync()
	f.sync()
	if got := len(f.stops()); got != 1 {
		t.Fatalf("b was stopped before a succeeded: %v", f.stops())
	}
	f.syncStatuses("r1", true, "a")
	f.sync()
	f.expectStates("r1", "a:Succeeded:killed", "b:Pending")
	f.sync()
	f.expectStates("r1", "a:Succeeded:killed", "b:Recreating:killed")
	if got, want := f.stops(), []string{f.ids["a"] + "/30s", f.ids["b"] + "/30s"}; !slices.Equal(got, want) {
		t.Errorf("stops %v, want %v", got, want)
	}
}

func TestUnorderedRecreateStopsOnePerSync(t *testing.T) {
	f := newFixture(t, "a", "b")
	crr := f.newRequest("r1", "a", "b")
	crr.Status.Phase = recreating
	f.create(crr)
	f.sync()
	f.sync()
	f.expectStates("r1", "a:Recreating:killed", "b:Pending")
	if got := len(f.stops()); got != 1 {
		t.Fatalf("stops %v, want one per sync", f.stops())
	}
	f.sync()
	f.expectStates("r1", "a:Recreating:killed", "b:Recreating:killed")
	f.runtime.RestartContainer(testPodUID, "a")
	f.runtime.RestartContainer(testPodUID, "b")
	f.syncStatuses("r1", true, "a", "b")
	f.sync()
	f.expectStates("r1", "a:Succeeded:killed", "b:Succeeded:killed")
	f.sync()
	f.expectPhase("r1", completed)
}

func TestFailurePolicy(t *testing.T) {
	for _, policy := range []appsv1beta1.ContainerRecreateRequestFailurePolicyType{
		appsv1beta1.ContainerRecreateRequestFailurePolicyFail, appsv1beta1.ContainerRecreateRequestFailurePolicyIgnore,
	} {
		t.Run(string(policy), func(t *testing.T) {
			f := newFixture(t, "a", "b")
			f.runtime.FailStopContainer(f.ids["a"], errBusy)
			crr := f.newRequest("r1", "a", "b")
			crr.Spec.Strategy.FailurePolicy = policy
			crr.Status.Phase = recreating
			f.create(crr)
			f.sync()
			f.sync()
			states := f.get("r1").Status.ContainerRecreateStates
			if states[0].Phase != appsv1beta1.ContainerRecreateRequestFailed || !strings.HasPrefix(states[0].Message, "kill container error: ") ||
				!strings.Contains(states[0].Message, "device busy") {
				t.Errorf("state of a = %+v", states[0])
			}
			if policy == appsv1beta1.ContainerRecreateRequestFailurePolicyFail {
				f.expectStates("r1", "a:Failed:"+states[0].Message, "b:Pending")
				f.sync()
				f.expectPhase("r1", completed)
				if got := f.stops(); len(got) != 1 {
					t.Errorf("stops %v: b must be left alone", got)
				}
				return
			}
			f.expectStates("r1", "a:Failed:"+states[0].Message, "b:Recreating:killed")
			f.runtime.RestartContainer(testPodUID, "b")
			f.syncStatuses("r1", true, "b")
			f.sync()
			f.sync()
			got := f.get("r1").Status
			if got.Phase != completed || got.Message != "" {
				t.Errorf("status %+v", got)
			}
		})
	}
}

func TestMinStartedSeconds(t *testing.T) {
	f := newFixture(t, "app")
	crr := f.newRequest("r1", "app")
	crr.Spec.Strategy.MinStartedSeconds = 10
	crr.Status.Phase = recreating
	f.create(crr)
	f.sync()
	f.sync()
	f.runtime.RestartContainer(testPodUID, "app")
	f.syncStatuses("r1", true, "app")
	f.clock.Step(5 * time.Second)
	f.sync()
	f.expectStates("r1", "app:Recreating:killed")
	f.queue.Reset()
	f.sync()
	if got, want := f.queue.Delayed(), []queuetest.Delayed{{Key: podQueueKey, Delay: 10 * time.Second}}; !slices.Equal(got, want) {
		t.Errorf("delayed %v, want %v", got, want)
	}
	f.clock.Step(5 * time.Second)
	f.sync()
	f.expectStates("r1", "app:Succeeded:killed")
}

// With forceRecreate a container that already restarted since admission is stopped once
// more; without it, it counts as recreated.
func TestForceRecreate(t *testing.T) {
	for _, force := range []bool{false, true} {
		f := newFixture(t, "app")
		crr := f.newRequest("r1", "app")
		crr.Spec.Strategy.ForceRecreate = force
		crr.Status.Phase = recreating
		f.create(crr)
		restarted := f.runtime.RestartContainer(testPodUID, "app")
		f.sync()
		if !force {
			f.expectStates("r1", "app:Recreating")
			f.sync()
			f.expectStates("r1", "app:Recreating:killed")
			if len(f.stops()) != 0 {
				t.Error("without forceRecreate a restarted container is not stopped")
			}
			continue
		}
		f.expectStates("r1", "app:Pending")
		f.sync()
		f.expectStates("r1", "app:Recreating:killed")
		if got := f.stops(); !slices.Equal(got, []string{restarted + "/30s"}) {
			t.Errorf("stops %v", got)
		}
		// Once stopped by the request, the new container counts as recreated.
		f.runtime.RestartContainer(testPodUID, "app")
		f.syncStatuses("r1", true, "app")
		f.sync()
		f.expectStates("r1", "app:Succeeded:killed")
	}
}

func TestMissingAndExitedContainers(t *testing.T) {
	f := newFixture(t, "a", "b")
	crr := f.newRequest("r1", "a", "b")
	crr.Spec.Containers = append(crr.Spec.Containers, appsv1beta1.ContainerRecreateRequestContainer{
		Name: "c", StatusContext: &appsv1beta1.ContainerRecreateRequestContainerContext{ContainerID: crifake.KubeContainerID("gone")},
	})
	crr.Spec.Strategy.OrderedRecreate = false
	crr.Status.Phase = recreating
	f.create(crr)
	f.runtime.ExitContainer(testPodUID, "a")
	f.sync()
	f.expectStates("r1", "a:Recreating", "b:Pending", "c:Pending:not found container on Node")
	f.sync()
	f.expectStates("r1", "a:Recreating:killed", "b:Recreating:killed", "c:Pending:not found container on Node")
	if got := f.stops(); !slices.Equal(got, []string{f.ids["b"] + "/30s"}) {
		t.Errorf("stops %v: only b, which was running, is stopped", got)
	}
	f.sync()
	f.expectStates("r1", "a:Recreating:killed", "b:Recreating:killed", "c:Pending:not found container on Node")
	f.expectPhase("r1", recreating)
}

func TestSameRuntime(t *testing.T) {
	withIDs := func(ids ...string) *appsv1beta1.ContainerRecreateRequest {
		crr := &appsv1beta1.ContainerRecreateRequest{}
		for i, id := range ids {
			c := appsv1beta1.ContainerRecreateRequestContainer{Name: string(rune('a' + i))}
			if id != "-" {
				c.StatusContext = &appsv1beta1.ContainerRecreateRequestContainerContext{ContainerID: id}
			}
			crr.Spec.Containers = append(crr.Spec.Containers, c)
		}
		return crr
	}
	tests := []struct {
		ids  []string
		want string
	}{
		{ids: []string{"containerd://1", "containerd://2"}},
		{ids: []string{"containerd://1", "cri-o://2"}, want: `container b runs in runtime "cri-o", but this node's runtime is "containerd"`},
		{ids: []string{"-"}, want: "container a has no container ID in its status context"},
		{ids: []string{"abc"}, want: `container a has the malformed container ID "abc"`},
	}
	for _, tc := range tests {
		err := sameRuntime(withIDs(tc.ids...), "containerd")
		if (err == nil) != (tc.want == "") || err != nil && err.Error() != tc.want {
			t.Errorf("sameRuntime(%v) = %v, want %q", tc.ids, err, tc.want)
		}
	}
}
