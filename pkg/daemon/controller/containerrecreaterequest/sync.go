package containerrecreaterequest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"

	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/daemon/cri"
)

const (
	// unreadyGraceSlack is added to the end of the unready grace period before the pod is
	// looked at again, so that the grace has surely passed then.
	unreadyGraceSlack = 100 * time.Millisecond
	// runtimeCallTimeout bounds the CRI calls that read containers.
	runtimeCallTimeout = time.Minute
)

// The phases in the order a pod's requests are looked at: a request in progress before
// those queued, queued ones before new ones. Completed ones come first but are skipped.
var phaseWeight = map[appsv1alpha1.ContainerRecreateRequestPhase]int{
	appsv1alpha1.ContainerRecreateRequestCompleted:  1,
	appsv1alpha1.ContainerRecreateRequestRecreating: 2,
	appsv1alpha1.ContainerRecreateRequestPending:    3,
	"": 4,
}

// syncPod works on the active requests of the pod key ("<namespace>/<pod name>"): it picks
// the one to run, queues the others and takes the picked one one step further.
func (c *Controller) syncPod(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx).WithValues("pod", key)
	ctx = klog.NewContext(ctx, logger)
	if _, _, err := queue.SplitKey(key); err != nil {
		return err
	}
	objs, err := c.requests.ByIndex(podIndex, key)
	if err != nil {
		return fmt.Errorf("listing the ContainerRecreateRequests of pod %s: %w", key, err)
	}
	requests := make([]*appsv1alpha1.ContainerRecreateRequest, 0, len(objs))
	for _, obj := range objs {
		if crr, ok := obj.(*appsv1alpha1.ContainerRecreateRequest); ok {
			requests = append(requests, crr)
		}
	}
	slices.SortFunc(requests, inRunOrder)

	var picked *appsv1alpha1.ContainerRecreateRequest
	for _, crr := range requests {
		if finished(crr) {
			continue
		}
		if wait, pending := c.written.Pending(requestKey(crr)); pending {
			// The cache does not show this agent's last write yet. The update event normally
			// arrives within moments and queues the pod; the delayed requeue makes sure the
			// pod is looked at again even if it never does.
			logger.V(4).Info("Waiting for the informer to show this agent's last write", "containerRecreateRequest", klog.KObj(crr), "wait", wait)
			c.queue.AddAfter(key, wait)
			return nil
		}
		if picked == nil {
			picked = crr
			continue
		}
		if crr.Status.Phase == "" {
			logger.V(2).Info("Queueing ContainerRecreateRequest behind another one of the same pod",
				"containerRecreateRequest", klog.KObj(crr), "running", klog.KObj(picked))
			if err := c.updatePhase(ctx, crr, appsv1alpha1.ContainerRecreateRequestPending); err != nil {
				return err
			}
		}
	}
	if picked == nil {
		return nil
	}
	logger = logger.WithValues("containerRecreateRequest", klog.KObj(picked))
	ctx = klog.NewContext(ctx, logger)

	if picked.Status.Phase != appsv1alpha1.ContainerRecreateRequestRecreating {
		// The event of this write brings the request back for the next step.
		logger.V(2).Info("Starting ContainerRecreateRequest")
		return c.updatePhase(ctx, picked, appsv1alpha1.ContainerRecreateRequestRecreating)
	}

	if grace := unreadyGracePeriod(picked); grace != nil {
		value := picked.Annotations[appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey]
		if value == "" {
			// The manager makes the pod not ready and records when; its write of the
			// annotation brings the request back.
			logger.V(4).Info("Waiting for the manager to make the pod not ready")
			return nil
		}
		acquired, err := time.Parse(time.RFC3339, value)
		if err != nil {
			return c.complete(ctx, key, picked, fmt.Sprintf("failed to parse unready acquired time %q: %v", value, err))
		}
		if left := acquired.Add(time.Duration(*grace) * time.Second).Sub(c.clock.Now()); left > 0 {
			logger.V(4).Info("Waiting for the unready grace period to pass", "left", left)
			c.queue.AddAfter(key, left+unreadyGraceSlack)
			return nil
		}
	}
	return c.recreate(ctx, key, picked)
}

// inRunOrder orders requests by phase weight, then by creation. Requests created within
// the same second fall back to their names, which is all that is left to tell them apart.
func inRunOrder(a, b *appsv1alpha1.ContainerRecreateRequest) int {
	return cmp.Or(
		cmp.Compare(weightOf(a.Status.Phase), weightOf(b.Status.Phase)),
		a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time),
		cmp.Compare(a.Name, b.Name),
	)
}

func weightOf(phase appsv1alpha1.ContainerRecreateRequestPhase) int {
	if w, ok := phaseWeight[phase]; ok {
		return w
	}
	return len(phaseWeight) + 1
}

// finished reports whether crr needs nothing more from the agent: completed or being
// deleted.
func finished(crr *appsv1alpha1.ContainerRecreateRequest) bool {
	return crr.DeletionTimestamp != nil || crr.Status.CompletionTime != nil || crr.Status.Phase == appsv1alpha1.ContainerRecreateRequestCompleted
}

func unreadyGracePeriod(crr *appsv1alpha1.ContainerRecreateRequest) *int64 {
	if crr.Spec.Strategy == nil {
		return nil
	}
	return crr.Spec.Strategy.UnreadyGracePeriodSeconds
}

// recreate reads the pod's containers from the runtime, brings the container states up to
// date and, when they already are, stops the next container due.
func (c *Controller) recreate(ctx context.Context, key string, crr *appsv1alpha1.ContainerRecreateRequest) error {
	rt := c.runtime.Runtime()
	if rt == nil {
		return fmt.Errorf("the container runtime is not available")
	}
	if err := sameRuntime(crr, rt.Name); err != nil {
		return c.complete(ctx, key, crr, fmt.Sprintf("failed to find runtime service: %v", err))
	}
	podUID := crr.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey]
	if podUID == "" {
		return c.complete(ctx, key, crr, fmt.Sprintf("missing label %s", appsv1alpha1.ContainerRecreateRequestPodUIDKey))
	}
	readCtx, cancel := context.WithTimeout(ctx, runtimeCallTimeout)
	containers, err := rt.PodContainers(readCtx, podUID)
	cancel()
	if err != nil {
		return err
	}

	states := c.currentStates(crr, containers, rt)
	if !slices.Equal(states, crr.Status.ContainerRecreateStates) {
		return c.patchStates(ctx, crr, states)
	}

	strategy := ptr.Deref(crr.Spec.Strategy, appsv1alpha1.ContainerRecreateRequestStrategy{})
	ignoreFailures := strategy.FailurePolicy == appsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore
	done := 0
walk:
	for i := range states {
		state := &states[i]
		switch state.Phase {
		case appsv1alpha1.ContainerRecreateRequestSucceeded:
			done++
		case appsv1alpha1.ContainerRecreateRequestFailed:
			done++
			if !ignoreFailures {
				return c.complete(ctx, key, crr, "")
			}
		case appsv1alpha1.ContainerRecreateRequestRecreating:
			// Stopped by this request, or exited on its own: either way the kubelet is
			// bringing it back, which is what the request asked for.
			state.IsKilled = true
			if strategy.OrderedRecreate {
				break walk
			}
		case appsv1alpha1.ContainerRecreateRequestPending:
			container, found := containers[state.Name]
			if !found {
				break walk
			}
			if err := c.kill(ctx, crr, podUID, state.Name, container, rt); err != nil {
				klog.FromContext(ctx).Error(err, "Failed to stop container", "container", state.Name)
				state.Phase, state.Message = appsv1alpha1.ContainerRecreateRequestFailed, fmt.Sprintf("kill container error: %v", err)
				if !ignoreFailures {
					break walk
				}
				continue
			}
			state.Phase, state.IsKilled = appsv1alpha1.ContainerRecreateRequestRecreating, true
			// One container per sync: the state must be recorded before the next is stopped.
			break walk
		}
	}
	if !slices.Equal(states, crr.Status.ContainerRecreateStates) {
		return c.patchStates(ctx, crr, states)
	}
	if done == len(states) {
		return c.complete(ctx, key, crr, "")
	}
	if strategy.MinStartedSeconds > 0 {
		// Nothing announces that a container has now run long enough.
		c.queue.AddAfter(key, time.Duration(strategy.MinStartedSeconds)*time.Second)
	}
	return nil
}

// sameRuntime checks that every target container runs in the runtime this agent talks to,
// going by the scheme of the container ID the request was admitted with.
func sameRuntime(crr *appsv1alpha1.ContainerRecreateRequest, runtimeName string) error {
	for _, container := range crr.Spec.Containers {
		if container.StatusContext == nil || container.StatusContext.ContainerID == "" {
			return fmt.Errorf("container %s has no container ID in its status context", container.Name)
		}
		id := container.StatusContext.ContainerID
		scheme, _, ok := strings.Cut(id, "://")
		if !ok {
			return fmt.Errorf("container %s has the malformed container ID %q", container.Name, id)
		}
		if scheme != runtimeName {
			return fmt.Errorf("container %s runs in runtime %q, but this node's runtime is %q", container.Name, scheme, runtimeName)
		}
	}
	return nil
}

// currentStates computes each target container's state from its previous state, the
// runtime and the container statuses the manager copied from the pod. A new container is
// recognized by its ID or restart count only, never by comparing start times with the
// request's creation, which come from different clocks (OpenKruise issue #2483).
func (c *Controller) currentStates(crr *appsv1alpha1.ContainerRecreateRequest, containers map[string]cri.Container, rt *cri.Runtime) []appsv1alpha1.ContainerRecreateRequestContainerRecreateState {
	strategy := ptr.Deref(crr.Spec.Strategy, appsv1alpha1.ContainerRecreateRequestStrategy{})
	minStarted := time.Duration(strategy.MinStartedSeconds) * time.Second
	synced := syncedStatuses(crr)
	now := c.clock.Now()

	states := make([]appsv1alpha1.ContainerRecreateRequestContainerRecreateState, 0, len(crr.Spec.Containers))
	for _, target := range crr.Spec.Containers {
		previous := previousState(crr, target.Name)
		if previous != nil && (previous.Phase == appsv1alpha1.ContainerRecreateRequestSucceeded || previous.Phase == appsv1alpha1.ContainerRecreateRequestFailed) {
			states = append(states, *previous)
			continue
		}
		admitted := ptr.Deref(target.StatusContext, appsv1alpha1.ContainerRecreateRequestContainerContext{})
		state := appsv1alpha1.ContainerRecreateRequestContainerRecreateState{Name: target.Name, Phase: appsv1alpha1.ContainerRecreateRequestPending}
		if previous != nil {
			state.IsKilled = previous.IsKilled
		}
		container, found := containers[target.Name]
		switch {
		case !found:
			state.Message = "not found container on Node"
		case container.State == runtimeapi.ContainerState_CONTAINER_EXITED:
			state.Phase = appsv1alpha1.ContainerRecreateRequestRecreating
		case strategy.ForceRecreate && !state.IsKilled:
			// Already restarting or not: it is stopped once more for this request.
		case rt.KubeContainerID(container.ID) != admitted.ContainerID || container.RestartCount > admitted.RestartCount:
			state.Phase = appsv1alpha1.ContainerRecreateRequestRecreating
			status, ok := synced[target.Name]
			if ok && status.ContainerID == rt.KubeContainerID(container.ID) && status.Ready &&
				!container.StartedAt.IsZero() && now.Sub(container.StartedAt) >= minStarted {
				state.Phase = appsv1alpha1.ContainerRecreateRequestSucceeded
			}
		}
		states = append(states, state)
	}
	return states
}

func previousState(crr *appsv1alpha1.ContainerRecreateRequest, name string) *appsv1alpha1.ContainerRecreateRequestContainerRecreateState {
	for i := range crr.Status.ContainerRecreateStates {
		if crr.Status.ContainerRecreateStates[i].Name == name {
			return &crr.Status.ContainerRecreateStates[i]
		}
	}
	return nil
}

// syncedStatuses reads the pod-side container statuses the manager copies into the
// request's annotation. One that does not parse counts as none yet: the manager rewrites
// it on the pod's next change.
func syncedStatuses(crr *appsv1alpha1.ContainerRecreateRequest) map[string]appsv1alpha1.ContainerRecreateRequestSyncContainerStatus {
	value := crr.Annotations[appsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey]
	if value == "" {
		return nil
	}
	var list []appsv1alpha1.ContainerRecreateRequestSyncContainerStatus
	if err := json.Unmarshal([]byte(value), &list); err != nil {
		return nil
	}
	byName := make(map[string]appsv1alpha1.ContainerRecreateRequestSyncContainerStatus, len(list))
	for _, status := range list {
		byName[status.Name] = status
	}
	return byName
}

// updatePhase writes phase into crr's status.
func (c *Controller) updatePhase(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, phase appsv1alpha1.ContainerRecreateRequestPhase) error {
	updated := crr.DeepCopy()
	updated.Status.Phase = phase
	written, err := c.client.AppsV1alpha1().ContainerRecreateRequests(crr.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("setting the phase of ContainerRecreateRequest %s/%s to %s: %w", crr.Namespace, crr.Name, phase, err)
	}
	c.written.Expect(requestKey(written), written)
	return nil
}

// complete finishes crr with message (empty when every container finished) and queues
// its pod again, whose next request can now start.
func (c *Controller) complete(ctx context.Context, key string, crr *appsv1alpha1.ContainerRecreateRequest, message string) error {
	updated := crr.DeepCopy()
	updated.Status.Phase = appsv1alpha1.ContainerRecreateRequestCompleted
	updated.Status.CompletionTime = ptr.To(metav1.NewTime(c.clock.Now()))
	updated.Status.Message = message
	written, err := c.client.AppsV1alpha1().ContainerRecreateRequests(crr.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("completing ContainerRecreateRequest %s/%s: %w", crr.Namespace, crr.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Completed ContainerRecreateRequest", "message", message)
	c.written.Expect(requestKey(written), written)
	c.queue.Add(key)
	return nil
}

// patchStates writes the container states into crr's status by a merge patch, which leaves
// the phase alone.
func (c *Controller) patchStates(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, states []appsv1alpha1.ContainerRecreateRequestContainerRecreateState) error {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"containerRecreateStates": states}})
	if err != nil {
		return fmt.Errorf("encoding the container states of ContainerRecreateRequest %s/%s: %w", crr.Namespace, crr.Name, err)
	}
	written, err := c.client.AppsV1alpha1().ContainerRecreateRequests(crr.Namespace).Patch(ctx, crr.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("writing the container states of ContainerRecreateRequest %s/%s: %w", crr.Namespace, crr.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Updated container states", "states", states)
	c.written.Expect(requestKey(written), written)
	return nil
}
