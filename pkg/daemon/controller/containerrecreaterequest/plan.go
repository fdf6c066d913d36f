package containerrecreaterequest

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/daemon/cri"
)

// step is where one container of the request being worked on stands in a sync.
type step string

const (
	// stepDone: its new container is ready (Succeeded).
	stepDone step = "Done"
	// stepFailed: stopping it failed, in an earlier sync or in this one (Failed).
	stepFailed step = "Failed"
	// stepRestarting: stopped, by this request or on its own; the kubelet is bringing it
	// back and its new container is not ready yet (Recreating).
	stepRestarting step = "Restarting"
	// stepStop: running and due; this sync stops it (Pending).
	stepStop step = "Stop"
	// stepMissing: due, but the runtime has no container of its name to stop (Pending).
	stepMissing step = "Missing"
	// stepWaiting: not reached in this sync. An earlier container holds it back (one
	// restarting under orderedRecreate, one missing, one stopped in this sync), or the
	// request completes before it.
	stepWaiting step = "Waiting"
)

// action is the one thing a sync does to the request it works on.
type action string

const (
	// actionWrite records the plan's container states.
	actionWrite action = "Write"
	// actionStop stops the container the plan names.
	actionStop action = "Stop"
	// actionComplete finishes the request.
	actionComplete action = "Complete"
	// actionWait leaves the request as it is until the kubelet, the manager or the runtime
	// moves, or until recheckAfter when set.
	actionWait action = "Wait"
)

// observation is what a plan is made from. Nothing in it changes while one sync runs,
// except stopped, so planning again after a stop sees the same request and containers.
type observation struct {
	crr *appsv1beta1.ContainerRecreateRequest
	// containers are the pod's current containers in the runtime, by name.
	containers map[string]cri.Container
	// runtimeName names the runtime; it is the scheme of the pod status's container IDs.
	runtimeName string
	now         time.Time
	// stopped holds the outcome of each stop this sync made, by container name: nil when
	// the container was stopped, the error when it could not be.
	stopped map[string]error
}

// plan is what a sync does to the request it works on.
type plan struct {
	action action
	// stop names the container to stop (actionStop).
	stop string
	// states are the container states to record (actionWrite).
	states []appsv1beta1.ContainerRecreateRequestContainerRecreateState
	// steps are where each container stands, in spec order; nil when the plan records
	// states observed anew, before looking at what to do with them.
	steps []step
	// recheckAfter is when a waiting request is looked at again; 0 when only an event
	// brings it back.
	recheckAfter time.Duration
}

// planRecreate decides the one thing to do for a Recreating request from what the sync
// observed, and nothing else. The states observed anew are recorded first, so that no
// container is stopped on grounds the request does not show. Then the containers are
// walked in order, as far as the request's strategy lets the walk go:
//
//   - one that Succeeded is done;
//   - one that Failed completes the request, unless failures are ignored;
//   - one Recreating is restarting, which the states record as killed (stopped by this
//     request or exited on its own, the kubelet is bringing it back, which is all the
//     request asked); under orderedRecreate the ones after it wait for it;
//   - one Pending that the runtime does not show holds the ones after it back;
//   - the first one Pending and running is stopped. Once it is, its new state ends the
//     walk: one container per sync, so that each stop is recorded before the next. When the
//     stop failed, the container is Failed, and the walk goes on only if failures are
//     ignored.
//
// What the walk changed is recorded; a request whose containers all Succeeded or Failed is
// complete; otherwise it waits, and with minStartedSeconds it is looked at again after
// that long, since nothing announces that a container has now run long enough.
func planRecreate(in observation) plan {
	observed := observeStates(in.crr, in.containers, in.runtimeName, in.now)
	recorded := in.crr.Status.ContainerRecreateStates
	if !slices.Equal(observed, recorded) {
		return plan{action: actionWrite, states: observed}
	}

	strategy := ptr.Deref(in.crr.Spec.Strategy, appsv1beta1.ContainerRecreateRequestStrategy{})
	ignoreFailures := strategy.FailurePolicy == appsv1beta1.ContainerRecreateRequestFailurePolicyIgnore
	states := observed
	steps := make([]step, len(states))
	for i := range steps {
		steps[i] = stepWaiting
	}
walk:
	for i := range states {
		state := &states[i]
		if err, stopped := in.stopped[state.Name]; stopped {
			if err == nil {
				state.Phase, state.IsKilled = appsv1beta1.ContainerRecreateRequestRecreating, true
				steps[i] = stepRestarting
				break walk
			}
			state.Phase, state.Message = appsv1beta1.ContainerRecreateRequestFailed, fmt.Sprintf("kill container error: %v", err)
			steps[i] = stepFailed
			if !ignoreFailures {
				// Recorded first; the next sync completes the request.
				break walk
			}
			continue
		}
		switch state.Phase {
		case appsv1beta1.ContainerRecreateRequestSucceeded:
			steps[i] = stepDone
		case appsv1beta1.ContainerRecreateRequestFailed:
			steps[i] = stepFailed
			if !ignoreFailures {
				return plan{action: actionComplete, steps: steps}
			}
		case appsv1beta1.ContainerRecreateRequestRecreating:
			state.IsKilled = true
			steps[i] = stepRestarting
			if strategy.OrderedRecreate {
				break walk
			}
		case appsv1beta1.ContainerRecreateRequestPending:
			if _, found := in.containers[state.Name]; !found {
				steps[i] = stepMissing
				break walk
			}
			steps[i] = stepStop
			return plan{action: actionStop, stop: state.Name, steps: steps}
		}
	}

	switch {
	case !slices.Equal(states, recorded):
		return plan{action: actionWrite, states: states, steps: steps}
	case allFinished(states):
		return plan{action: actionComplete, steps: steps}
	}
	return plan{action: actionWait, steps: steps, recheckAfter: time.Duration(strategy.MinStartedSeconds) * time.Second}
}

// allFinished reports whether every container Succeeded or Failed.
func allFinished(states []appsv1beta1.ContainerRecreateRequestContainerRecreateState) bool {
	for _, state := range states {
		if state.Phase != appsv1beta1.ContainerRecreateRequestSucceeded && state.Phase != appsv1beta1.ContainerRecreateRequestFailed {
			return false
		}
	}
	return true
}
