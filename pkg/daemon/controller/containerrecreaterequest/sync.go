package containerrecreaterequest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/klog/v2"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/containerrecreaterequest/crrutil"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
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
var phaseWeight = map[appsv1beta1.ContainerRecreateRequestPhase]int{
	appsv1beta1.ContainerRecreateRequestCompleted:  1,
	appsv1beta1.ContainerRecreateRequestRecreating: 2,
	appsv1beta1.ContainerRecreateRequestPending:    3,
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
	// Read before the requests are listed: a write shown in between would meet its
	// expectation and leave the list with the copy from before it, which would run a step
	// a second time.
	if wait, pending := c.written.Pending(key); pending {
		// The update event normally arrives within moments and queues the pod; the delayed
		// requeue makes sure the pod is looked at again even if it never does.
		logger.V(4).Info("Waiting for the informer to show this agent's last write", "wait", wait)
		c.queue.AddAfter(key, wait)
		return nil
	}
	objs, err := c.requests.ByIndex(podIndex, key)
	if err != nil {
		return fmt.Errorf("listing the ContainerRecreateRequests of pod %s: %w", key, err)
	}
	requests := make([]*appsv1beta1.ContainerRecreateRequest, 0, len(objs))
	for _, obj := range objs {
		if crr, ok := obj.(*appsv1beta1.ContainerRecreateRequest); ok {
			requests = append(requests, crr)
		}
	}
	slices.SortFunc(requests, inRunOrder)

	var picked *appsv1beta1.ContainerRecreateRequest
	for _, crr := range requests {
		if finished(crr) {
			continue
		}
		if picked == nil {
			picked = crr
			continue
		}
		if crr.Status.Phase == "" {
			logger.V(2).Info("Queueing ContainerRecreateRequest behind another one of the same pod",
				"containerRecreateRequest", klog.KObj(crr), "running", klog.KObj(picked))
			if err := c.updatePhase(ctx, crr, appsv1beta1.ContainerRecreateRequestPending); err != nil {
				return err
			}
		}
	}
	if picked == nil {
		return nil
	}
	logger = logger.WithValues("containerRecreateRequest", klog.KObj(picked))
	ctx = klog.NewContext(ctx, logger)

	if picked.Status.Phase != appsv1beta1.ContainerRecreateRequestRecreating {
		// The event of this write brings the request back for the next step.
		logger.V(2).Info("Starting ContainerRecreateRequest")
		return c.updatePhase(ctx, picked, appsv1beta1.ContainerRecreateRequestRecreating)
	}

	if grace := unreadyGracePeriod(picked); grace != nil {
		acquired, recorded, err := crrutil.UnreadyAcquired(picked)
		if !recorded {
			// The manager makes the pod not ready and records when; its write of the
			// PreRecreateGrace condition brings the request back.
			logger.V(4).Info("Waiting for the manager to make the pod not ready")
			return nil
		}
		if err != nil {
			// Only a v1alpha1 annotation can hold a time that does not parse.
			value := picked.Annotations[appsv1beta1.ContainerRecreateRequestUnreadyAcquiredKey]
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
func inRunOrder(a, b *appsv1beta1.ContainerRecreateRequest) int {
	return cmp.Or(
		cmp.Compare(weightOf(a.Status.Phase), weightOf(b.Status.Phase)),
		a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time),
		cmp.Compare(a.Name, b.Name),
	)
}

func weightOf(phase appsv1beta1.ContainerRecreateRequestPhase) int {
	if w, ok := phaseWeight[phase]; ok {
		return w
	}
	return len(phaseWeight) + 1
}

// finished reports whether crr needs nothing more from the agent: completed or being
// deleted.
func finished(crr *appsv1beta1.ContainerRecreateRequest) bool {
	return crr.DeletionTimestamp != nil || crr.Status.CompletionTime != nil || crr.Status.Phase == appsv1beta1.ContainerRecreateRequestCompleted
}

func unreadyGracePeriod(crr *appsv1beta1.ContainerRecreateRequest) *int64 {
	if crr.Spec.Strategy == nil {
		return nil
	}
	return crr.Spec.Strategy.UnreadyGracePeriodSeconds
}

// recreate takes a Recreating request one step further: it reads the pod's containers from
// the runtime, plans the step (planRecreate) and carries out what the plan calls for.
func (c *Controller) recreate(ctx context.Context, key string, crr *appsv1beta1.ContainerRecreateRequest) error {
	rt := c.runtime.Runtime()
	if rt == nil {
		return fmt.Errorf("the container runtime is not available")
	}
	if err := sameRuntime(crr, rt.Name); err != nil {
		return c.complete(ctx, key, crr, fmt.Sprintf("failed to find runtime service: %v", err))
	}
	podUID := crr.Labels[appsv1beta1.ContainerRecreateRequestPodUIDKey]
	if podUID == "" {
		return c.complete(ctx, key, crr, fmt.Sprintf("missing label %s", appsv1beta1.ContainerRecreateRequestPodUIDKey))
	}
	readCtx, cancel := context.WithTimeout(ctx, runtimeCallTimeout)
	containers, err := rt.PodContainers(readCtx, podUID)
	cancel()
	if err != nil {
		return err
	}

	seen := observation{crr: crr, containers: containers, runtimeName: rt.Name, now: c.clock.Now(), stopped: map[string]error{}}
	next := planRecreate(seen)
	for next.action == actionStop {
		err := c.kill(ctx, crr, podUID, next.stop, containers[next.stop], rt)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Failed to stop container", "container", next.stop)
		}
		// What is recorded, and whether another container is stopped, depends on how the
		// stop went.
		seen.stopped[next.stop] = err
		next = planRecreate(seen)
	}
	klog.FromContext(ctx).V(5).Info("Planned the request's step", "action", next.action, "steps", next.steps)
	switch next.action {
	case actionWrite:
		return c.patchStates(ctx, crr, next.states)
	case actionComplete:
		return c.complete(ctx, key, crr, "")
	}
	if next.recheckAfter > 0 {
		c.queue.AddAfter(key, next.recheckAfter)
	}
	return nil
}

// sameRuntime checks that every target container runs in the runtime this agent talks to,
// going by the scheme of the container ID the request was admitted with.
func sameRuntime(crr *appsv1beta1.ContainerRecreateRequest, runtimeName string) error {
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
