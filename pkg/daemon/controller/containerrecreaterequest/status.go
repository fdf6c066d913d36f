package containerrecreaterequest

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/containerrecreaterequest/crrutil"
	"github.com/bosun-dev/bosun/pkg/daemon/cri"
)

// observeStates computes each target container's state from its recorded state, the
// pod's containers in the runtime called runtimeName, and the container statuses the
// manager copied from the pod, at now. A finished state stays. A new container is
// recognized by its ID or restart count only, never by comparing start times with the
// request's creation, which come from different clocks (OpenKruise issue #2483).
func observeStates(crr *appsv1beta1.ContainerRecreateRequest, containers map[string]cri.Container, runtimeName string,
	now time.Time) []appsv1beta1.ContainerRecreateRequestContainerRecreateState {
	strategy := ptr.Deref(crr.Spec.Strategy, appsv1beta1.ContainerRecreateRequestStrategy{})
	minStarted := time.Duration(strategy.MinStartedSeconds) * time.Second
	synced := syncedStatuses(crr)

	states := make([]appsv1beta1.ContainerRecreateRequestContainerRecreateState, 0, len(crr.Spec.Containers))
	for _, target := range crr.Spec.Containers {
		previous := previousState(crr, target.Name)
		if previous != nil && (previous.Phase == appsv1beta1.ContainerRecreateRequestSucceeded || previous.Phase == appsv1beta1.ContainerRecreateRequestFailed) {
			states = append(states, *previous)
			continue
		}
		admitted := ptr.Deref(target.StatusContext, appsv1beta1.ContainerRecreateRequestContainerContext{})
		state := appsv1beta1.ContainerRecreateRequestContainerRecreateState{Name: target.Name, Phase: appsv1beta1.ContainerRecreateRequestPending}
		if previous != nil {
			state.IsKilled = previous.IsKilled
		}
		container, found := containers[target.Name]
		currentID := cri.KubeContainerID(runtimeName, container.ID)
		switch {
		case !found:
			state.Message = "not found container on Node"
		case container.State == runtimeapi.ContainerState_CONTAINER_EXITED:
			state.Phase = appsv1beta1.ContainerRecreateRequestRecreating
		case strategy.ForceRecreate && !state.IsKilled:
			// Already restarting or not: it is stopped once more for this request.
		case currentID != admitted.ContainerID || container.RestartCount > admitted.RestartCount:
			state.Phase = appsv1beta1.ContainerRecreateRequestRecreating
			status, ok := synced[target.Name]
			if ok && status.ContainerID == currentID && status.Ready &&
				!container.StartedAt.IsZero() && now.Sub(container.StartedAt) >= minStarted {
				state.Phase = appsv1beta1.ContainerRecreateRequestSucceeded
			}
		}
		states = append(states, state)
	}
	return states
}

func previousState(crr *appsv1beta1.ContainerRecreateRequest, name string) *appsv1beta1.ContainerRecreateRequestContainerRecreateState {
	for i := range crr.Status.ContainerRecreateStates {
		if crr.Status.ContainerRecreateStates[i].Name == name {
			return &crr.Status.ContainerRecreateStates[i]
		}
	}
	return nil
}

// syncedStatuses returns, by container name, the pod-side container statuses the manager
// copies into the request (crrutil.ContainerStatusSnapshot: the status field, or the
// v1alpha1 annotation of a request that has only that). An annotation that does not parse
// counts as none yet: the manager writes the field on the pod's next change.
func syncedStatuses(crr *appsv1beta1.ContainerRecreateRequest) map[string]appsv1beta1.ContainerRecreateRequestSyncContainerStatus {
	snapshot := crrutil.ContainerStatusSnapshot(crr)
	if len(snapshot) == 0 {
		return nil
	}
	byName := make(map[string]appsv1beta1.ContainerRecreateRequestSyncContainerStatus, len(snapshot))
	for _, status := range snapshot {
		byName[status.Name] = status
	}
	return byName
}

// updatePhase writes phase into crr's status.
func (c *Controller) updatePhase(ctx context.Context, crr *appsv1beta1.ContainerRecreateRequest, phase appsv1beta1.ContainerRecreateRequestPhase) error {
	updated := crr.DeepCopy()
	updated.Status.Phase = phase
	written, err := c.client.AppsV1beta1().ContainerRecreateRequests(crr.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("setting the phase of ContainerRecreateRequest %s/%s to %s: %w", crr.Namespace, crr.Name, phase, err)
	}
	c.written.Expect(podKey(written), written)
	return nil
}

// complete finishes crr with message (empty when every container finished) and queues
// its pod again, whose next request can now start.
func (c *Controller) complete(ctx context.Context, key string, crr *appsv1beta1.ContainerRecreateRequest, message string) error {
	updated := crr.DeepCopy()
	updated.Status.Phase = appsv1beta1.ContainerRecreateRequestCompleted
	updated.Status.CompletionTime = ptr.To(metav1.NewTime(c.clock.Now()))
	updated.Status.Message = message
	written, err := c.client.AppsV1beta1().ContainerRecreateRequests(crr.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("completing ContainerRecreateRequest %s/%s: %w", crr.Namespace, crr.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Completed ContainerRecreateRequest", "message", message)
	c.written.Expect(podKey(written), written)
	c.queue.Add(key)
	return nil
}

// patchStates writes the container states into crr's status by a merge patch, which leaves
// the phase alone.
func (c *Controller) patchStates(ctx context.Context, crr *appsv1beta1.ContainerRecreateRequest, states []appsv1beta1.ContainerRecreateRequestContainerRecreateState) error {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"containerRecreateStates": states}})
	if err != nil {
		return fmt.Errorf("encoding the container states of ContainerRecreateRequest %s/%s: %w", crr.Namespace, crr.Name, err)
	}
	written, err := c.client.AppsV1beta1().ContainerRecreateRequests(crr.Namespace).Patch(ctx, crr.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("writing the container states of ContainerRecreateRequest %s/%s: %w", crr.Namespace, crr.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Updated container states", "states", states)
	c.written.Expect(podKey(written), written)
	return nil
}
