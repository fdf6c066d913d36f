package containerrecreaterequest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/daemon/cri"
)

// parseStates reads container states written "name:phase[:killed[:message]]", killed
// being "killed" or empty.
func parseStates(t *testing.T, specs ...string) []appsv1beta1.ContainerRecreateRequestContainerRecreateState {
	t.Helper()
	var out []appsv1beta1.ContainerRecreateRequestContainerRecreateState
	for _, spec := range specs {
		parts := strings.SplitN(spec, ":", 4)
		if len(parts) < 2 {
			t.Fatalf("bad state %q", spec)
		}
		state := appsv1beta1.ContainerRecreateRequestContainerRecreateState{Name: parts[0], Phase: appsv1beta1.ContainerRecreateRequestPhase(parts[1])}
		if len(parts) > 2 {
			state.IsKilled = parts[2] == "killed"
		}
		if len(parts) > 3 {
			state.Message = parts[3]
		}
		out = append(out, state)
	}
	return out
}

func TestPlanRecreate(t *testing.T) {
	const runtimeName = "containerd"
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	// Every container was admitted as "<name>1", never restarted.
	running := func(name string) cri.Container {
		return cri.Container{ID: name + "1", Name: name, State: runtimeapi.ContainerState_CONTAINER_RUNNING, StartedAt: now.Add(-time.Hour)}
	}
	exited := func(name string) cri.Container {
		c := running(name)
		c.State = runtimeapi.ContainerState_CONTAINER_EXITED
		return c
	}
	// restarted is the kubelet's new container of name, started ago.
	restarted := func(name string, ago time.Duration) cri.Container {
		return cri.Container{ID: name + "2", Name: name, RestartCount: 1, State: runtimeapi.ContainerState_CONTAINER_RUNNING, StartedAt: now.Add(-ago)}
	}
	stopErr := errors.New("device busy")
	const stopFailed = "kill container error: device busy"
	const notFound = "not found container on Node"

	tests := []struct {
		name string
		// strategy changes the default strategy (failure policy Fail, nothing else).
		strategy func(*appsv1beta1.ContainerRecreateRequestStrategy)
		targets  []string
		recorded []string
		// ready names the containers whose current instance the manager copied as ready.
		ready      []string
		containers []cri.Container
		stopped    map[string]error

		wantAction action
		wantStop   string
		wantStates []string
		wantSteps  []step
		wantAfter  time.Duration
	}{
		{
			name:    "new request: the observed states are recorded before anything is stopped",
			targets: []string{"a", "b"}, containers: []cri.Container{running("a"), running("b")},
			wantAction: actionWrite, wantStates: []string{"a:Pending", "b:Pending"},
		},
		{
			name:    "the first container due is stopped",
			targets: []string{"a", "b"}, recorded: []string{"a:Pending", "b:Pending"}, containers: []cri.Container{running("a"), running("b")},
			wantAction: actionStop, wantStop: "a", wantSteps: []step{stepStop, stepWaiting},
		},
		{
			name:    "a stopped container is recorded killed, and ends the walk",
			targets: []string{"a", "b"}, recorded: []string{"a:Pending", "b:Pending"}, containers: []cri.Container{running("a"), running("b")},
			stopped:    map[string]error{"a": nil},
			wantAction: actionWrite, wantStates: []string{"a:Recreating:killed", "b:Pending"}, wantSteps: []step{stepRestarting, stepWaiting},
		},
		{
			name:    "a failed stop is recorded, and ends the walk under the Fail policy",
			targets: []string{"a", "b"}, recorded: []string{"a:Pending", "b:Pending"}, containers: []cri.Container{running("a"), running("b")},
			stopped:    map[string]error{"a": stopErr},
			wantAction: actionWrite, wantStates: []string{"a:Failed::" + stopFailed, "b:Pending"}, wantSteps: []step{stepFailed, stepWaiting},
		},
		{
			name:     "under the Ignore policy a failed stop moves on to the next container",
			strategy: ignoreFailures,
			targets:  []string{"a", "b"}, recorded: []string{"a:Pending", "b:Pending"}, containers: []cri.Container{running("a"), running("b")},
			stopped:    map[string]error{"a": stopErr},
			wantAction: actionStop, wantStop: "b", wantSteps: []step{stepFailed, stepStop},
		},
		{
			name:     "under the Ignore policy both outcomes are recorded together",
			strategy: ignoreFailures,
			targets:  []string{"a", "b"}, recorded: []string{"a:Pending", "b:Pending"}, containers: []cri.Container{running("a"), running("b")},
			stopped:    map[string]error{"a": stopErr, "b": nil},
			wantAction: actionWrite, wantStates: []string{"a:Failed::" + stopFailed, "b:Recreating:killed"}, wantSteps: []step{stepFailed, stepRestarting},
		},
		{
			name:     "ordered: a restarting container holds the next back",
			strategy: ordered,
			targets:  []string{"a", "b"}, recorded: []string{"a:Recreating:killed", "b:Pending"},
			containers: []cri.Container{restarted("a", time.Minute), running("b")},
			wantAction: actionWait, wantSteps: []step{stepRestarting, stepWaiting},
		},
		{
			name:    "unordered: the next container is stopped while one restarts",
			targets: []string{"a", "b"}, recorded: []string{"a:Recreating:killed", "b:Pending"},
			containers: []cri.Container{restarted("a", time.Minute), running("b")},
			wantAction: actionStop, wantStop: "b", wantSteps: []step{stepRestarting, stepStop},
		},
		{
			name:    "a container that exited on its own is recorded killed; a missing one holds the rest back",
			targets: []string{"a", "b", "c"}, recorded: []string{"a:Recreating", "b:Pending::" + notFound, "c:Pending"},
			containers: []cri.Container{exited("a"), running("c")},
			wantAction: actionWrite, wantStates: []string{"a:Recreating:killed", "b:Pending::" + notFound, "c:Pending"},
			wantSteps: []step{stepRestarting, stepMissing, stepWaiting},
		},
		{
			name:    "nothing to do while a container is missing",
			targets: []string{"a", "b"}, recorded: []string{"a:Pending::" + notFound, "b:Pending"}, containers: []cri.Container{running("b")},
			wantAction: actionWait, wantSteps: []step{stepMissing, stepWaiting},
		},
		{
			name:    "a failed container completes the request under the Fail policy",
			targets: []string{"a", "b", "c"}, recorded: []string{"a:Succeeded:killed", "b:Failed::" + stopFailed, "c:Pending"},
			containers: []cri.Container{restarted("a", time.Minute), running("b"), running("c")},
			wantAction: actionComplete, wantSteps: []step{stepDone, stepFailed, stepWaiting},
		},
		{
			name:     "ordered: a failed container behind a restarting one is not reached yet",
			strategy: ordered,
			targets:  []string{"a", "b"}, recorded: []string{"a:Recreating:killed", "b:Failed::" + stopFailed},
			containers: []cri.Container{restarted("a", time.Minute), running("b")},
			wantAction: actionWait, wantSteps: []step{stepRestarting, stepWaiting},
		},
		{
			name:     "under the Ignore policy the request completes once every container finished",
			strategy: ignoreFailures,
			targets:  []string{"a", "b"}, recorded: []string{"a:Failed::" + stopFailed, "b:Succeeded:killed"},
			containers: []cri.Container{running("a"), restarted("b", time.Minute)},
			wantAction: actionComplete, wantSteps: []step{stepFailed, stepDone},
		},
		{
			name:    "the new container ready is observed as Succeeded and recorded",
			targets: []string{"a"}, recorded: []string{"a:Recreating:killed"}, ready: []string{"a"},
			containers: []cri.Container{restarted("a", time.Minute)},
			wantAction: actionWrite, wantStates: []string{"a:Succeeded:killed"},
		},
		{
			name:    "a new container not ready yet keeps the request waiting",
			targets: []string{"a"}, recorded: []string{"a:Recreating:killed"},
			containers: []cri.Container{restarted("a", time.Minute)},
			wantAction: actionWait, wantSteps: []step{stepRestarting},
		},
		{
			name:     "a ready container that has not run minStartedSeconds yet is looked at again",
			strategy: func(s *appsv1beta1.ContainerRecreateRequestStrategy) { s.MinStartedSeconds = 10 },
			targets:  []string{"a"}, recorded: []string{"a:Recreating:killed"}, ready: []string{"a"},
			containers: []cri.Container{restarted("a", 5*time.Second)},
			wantAction: actionWait, wantSteps: []step{stepRestarting}, wantAfter: 10 * time.Second,
		},
		{
			name:    "every container Succeeded",
			targets: []string{"a", "b"}, recorded: []string{"a:Succeeded:killed", "b:Succeeded:killed"},
			containers: []cri.Container{restarted("a", time.Minute), restarted("b", time.Minute)},
			wantAction: actionComplete, wantSteps: []step{stepDone, stepDone},
		},
		{
			name:     "forceRecreate stops a container that already restarted once more",
			strategy: func(s *appsv1beta1.ContainerRecreateRequestStrategy) { s.ForceRecreate = true },
			targets:  []string{"a"}, recorded: []string{"a:Pending"},
			containers: []cri.Container{restarted("a", time.Minute)},
			wantAction: actionStop, wantStop: "a", wantSteps: []step{stepStop},
		},
		{
			name:       "a request without containers completes",
			wantAction: actionComplete, wantSteps: []step{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			crr := &appsv1beta1.ContainerRecreateRequest{Spec: appsv1beta1.ContainerRecreateRequestSpec{
				Strategy: &appsv1beta1.ContainerRecreateRequestStrategy{FailurePolicy: appsv1beta1.ContainerRecreateRequestFailurePolicyFail},
			}}
			if tc.strategy != nil {
				tc.strategy(crr.Spec.Strategy)
			}
			for _, name := range tc.targets {
				crr.Spec.Containers = append(crr.Spec.Containers, appsv1beta1.ContainerRecreateRequestContainer{
					Name: name, StatusContext: &appsv1beta1.ContainerRecreateRequestContainerContext{ContainerID: runtimeName + "://" + name + "1"},
				})
			}
			crr.Status.ContainerRecreateStates = parseStates(t, tc.recorded...)
			containers := map[string]cri.Container{}
			for _, c := range tc.containers {
				containers[c.Name] = c
			}
			var synced []appsv1beta1.ContainerRecreateRequestSyncContainerStatus
			for _, name := range tc.ready {
				synced = append(synced, appsv1beta1.ContainerRecreateRequestSyncContainerStatus{
					Name: name, Ready: true, ContainerID: runtimeName + "://" + containers[name].ID, RestartCount: containers[name].RestartCount,
				})
			}
			crr.Status.ContainerStatusSnapshot = synced
			recorded := slices.Clone(crr.Status.ContainerRecreateStates)

			got := planRecreate(observation{crr: crr, containers: containers, runtimeName: runtimeName, now: now, stopped: tc.stopped})
			if got.action != tc.wantAction || got.stop != tc.wantStop || got.recheckAfter != tc.wantAfter {
				t.Errorf("action %s (stop %q, recheck after %v), want %s (stop %q, recheck after %v)",
					got.action, got.stop, got.recheckAfter, tc.wantAction, tc.wantStop, tc.wantAfter)
			}
			if want := parseStates(t, tc.wantStates...); !slices.Equal(got.states, want) {
				t.Errorf("states %+v, want %+v", got.states, want)
			}
			if !slices.Equal(got.steps, tc.wantSteps) || (got.steps == nil) != (tc.wantSteps == nil) {
				t.Errorf("steps %q, want %q", got.steps, tc.wantSteps)
			}
			if !slices.Equal(crr.Status.ContainerRecreateStates, recorded) {
				t.Errorf("the plan changed the request's recorded states: %+v", crr.Status.ContainerRecreateStates)
			}
		})
	}
}

func ignoreFailures(s *appsv1beta1.ContainerRecreateRequestStrategy) {
	s.FailurePolicy = appsv1beta1.ContainerRecreateRequestFailurePolicyIgnore
}

func ordered(s *appsv1beta1.ContainerRecreateRequestStrategy) { s.OrderedRecreate = true }
