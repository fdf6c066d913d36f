package cloneset

import (
	"bytes"
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/cloneset/clonesetutil"
	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/podcontrol"
	"github.com/bosun-dev/bosun/pkg/features"
)

// refreshPod brings pod's own state up to date, and reports whether it changed the pod's
// lifecycle state (the only change that ends the update step):
//   - an in-place update whose grace period is over is carried out (finishGracePeriod);
//   - the next batch of an in-place update by launch priority is made once the containers
//     of the last one run their new images and are ready (updateNextBatch);
//   - a pod with the InPlaceUpdateReady readiness gate whose in-place update (if any) has
//     taken effect gets the condition True, which lets it become ready again;
//   - the pod moves on in its lifecycle when nothing holds it (NextLifecycleState).
//
// The last two usually fall due together (a new pod once a node took it, an updated pod once
// its new images run), and then go in one pods/status write: a pod costs the CloneSet one
// write fewer on creation and on every in-place update.
func (c *Controller) refreshPod(ctx context.Context, v *view, pod *corev1.Pod, again *requeue) (bool, error) {
	if err := c.finishGracePeriod(ctx, v, pod, again); err != nil {
		return false, err
	}
	state, err := kruisepod.ReadInPlaceUpdateState(pod)
	if err != nil {
		// An unreadable state cannot be completed; OpenKruise leaves such pods alone too.
		klog.FromContext(ctx).V(2).Info("Pod has an unreadable in-place update state", "pod", klog.KObj(pod), "err", err)
		return false, nil
	}
	if state != nil && kruisepod.NextBatchDue(pod, state) {
		return false, c.updateNextBatch(ctx, v, pod, state)
	}
	completed := state != nil && kruisepod.InPlaceUpdateCompleted(pod, state)
	next := clonesetutil.NextLifecycleState(v.updateSet, pod, clonesetutil.AtRevision(pod, v.update.Name), completed)
	hook := clonesetutil.InPlaceUpdateHook(v.updateSet)
	markNotReady := hook != nil && hook.MarkPodNotReady
	if inPlaceUpdateReadyDue(pod, state, completed) {
		carried := next
		if markNotReady && next != appsv1beta1.LifecycleStateNormal {
			// The hook's not-ready mark has to follow the state first (setLifecycleState).
			carried = ""
		}
		moved, err := c.markInPlaceUpdateReady(ctx, v, pod, carried)
		if err != nil || moved {
			return moved, err
		}
	}
	if next == "" {
		return false, nil
	}
	return c.setLifecycleState(ctx, v, pod, next, markNotReady, nil)
}

// inPlaceUpdateReadyDue reports whether pod's InPlaceUpdateReady condition is to be turned
// True now: the pod has the readiness gate, the condition is not True, and either its
// in-place update has taken effect or it has none and is not waiting out a grace period. A
// new pod waits until a node has taken it: no kubelet reads the condition before, and the
// write then goes together with the move to Normal.
func inPlaceUpdateReadyDue(pod *corev1.Pod, state *kruisepod.InPlaceUpdateState, completed bool) bool {
	if !kruisepod.AwaitsInPlaceUpdateReady(pod) {
		return false
	}
	if state == nil {
		return !inGracePeriod(pod) && pod.Spec.NodeName != ""
	}
	return completed
}

// updateNextBatch makes the next batch of pod's in-place update, which is due by the cached
// pod and its state, and expects the pod it wrote.
func (c *Controller) updateNextBatch(ctx context.Context, v *view, pod *corev1.Pod, state *kruisepod.InPlaceUpdateState) error {
	written, err := kruisepod.UpdateNextBatch(ctx, podcontrol.StatusUpdater{Client: c.kubeClient}, pod, len(state.ContainerBatchesRecord), v.now)
	if written != nil {
		klog.FromContext(ctx).V(2).Info("Updated the next batch of containers in place", "pod", klog.KObj(pod), "batch", len(state.ContainerBatchesRecord)+1)
		c.podUpdates.Expect(v.key, written)
	}
	return err
}

// markInPlaceUpdateReady turns pod's InPlaceUpdateReady condition True and, unless next is
// empty, moves the pod to lifecycle state next in the same write; it reports whether the
// pod's lifecycle state is no longer the cached one: moved by this write, or found moved
// already when a conflict was retried against the live pod. Such a pod is left alone: the
// cached copy the decision came from is stale (a moved pod would otherwise get its state
// written a second time from that copy), and the event of the newer version queues the
// CloneSet again.
func (c *Controller) markInPlaceUpdateReady(ctx context.Context, v *view, pod *corev1.Pod, next appsv1beta1.LifecycleStateType) (bool, error) {
	from := clonesetutil.LifecycleState(pod)
	updater := podcontrol.StatusUpdater{Client: c.kubeClient}
	var written *corev1.Pod
	moved, movedAlready := false, false
	_, err := updater.Rewrite(ctx, pod, func(p *corev1.Pod) (*corev1.Pod, error) {
		written, moved, movedAlready = nil, false, false
		if clonesetutil.LifecycleState(p) != from {
			movedAlready = true
			return nil, nil
		}
		changed := kruisepod.MarkInPlaceUpdateReady(p, v.now)
		if next != "" {
			kruisepod.SetLifecycleState(p, next, v.now.Time)
			changed, moved = true, true
		}
		if !changed {
			return nil, nil
		}
		stored, err := updater.UpdatePodStatus(ctx, p)
		if err != nil {
			return nil, err
		}
		written = stored
		return stored, nil
	})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("setting the InPlaceUpdateReady condition of pod %s: %w", klog.KObj(pod), err)
	}
	if movedAlready {
		klog.FromContext(ctx).V(4).Info("Pod left its lifecycle state since the cache showed it; looking at it again later", "pod", klog.KObj(pod), "cachedState", from)
		return true, nil
	}
	if written == nil {
		return false, nil
	}
	if moved {
		klog.FromContext(ctx).V(3).Info("Moved pod to a lifecycle state", "pod", klog.KObj(pod), "state", next)
	}
	c.podUpdates.Expect(v.key, written)
	return moved, nil
}

// planInPlace returns the in-place update that moves pod to target, or nil when it has to
// be recreated: its own revision is unknown, or the move from it cannot be made in place
// (planRevisionChange).
func (c *Controller) planInPlace(v *view, pod *corev1.Pod, target *appsv1.ControllerRevision, policy appsv1beta1.CloneSetPodUpdateStrategyType) *kruisepod.InPlaceUpdate {
	for _, revision := range v.revisions {
		if clonesetutil.AtRevision(pod, revision.Name) {
			return c.planRevisionChange(revision, target, policy)
		}
	}
	return nil
}

// planRevisionChange returns the in-place update that moves a pod from revision old to
// target, or nil when such a pod has to be recreated: the two revisions differ in more
// than container images and template labels and annotations, or (gate
// RecreatePodWhenChangeVCTInCloneSetGate, not for InPlaceOnly) their volume claim templates
// differ. Two revisions with the same data need no change but the pod's revision labels.
func (c *Controller) planRevisionChange(old, target *appsv1.ControllerRevision, policy appsv1beta1.CloneSetPodUpdateStrategyType) *kruisepod.InPlaceUpdate {
	if c.gates.Enabled(features.RecreatePodWhenChangeVCTInCloneSetGate) && policy != appsv1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType {
		const key = appsv1beta1.CloneSetVolumeClaimTemplateHashAnnotationKey
		oldHash, oldOK := old.Annotations[key]
		newHash, newOK := target.Annotations[key]
		// A revision written before the hash was recorded gives no reason to recreate.
		if oldOK && newOK && oldHash != newHash {
			return nil
		}
	}
	if bytes.Equal(old.Data.Raw, target.Data.Raw) {
		return &kruisepod.InPlaceUpdate{}
	}
	// Env from metadata needs the node agent, which OpenKruise's KruiseDaemon gate stands for.
	envFromMetadata := c.gates.Enabled(features.InPlaceUpdateEnvFromMetadata) && c.gates.Enabled(features.KruiseDaemon)
	plan, err := kruisepod.PlanInPlaceUpdate(old.Data.Raw, target.Data.Raw, envFromMetadata)
	if err != nil {
		return nil
	}
	return plan
}

// updateInPlace updates pod in place to target with plan, after the inPlaceUpdate hook
// (if any) let it go:
//   - a pod in Normal or PreparingNormal (or without a state) that the hook holds moves to
//     PreparingUpdate first (marked not ready with markPodNotReady), and waits there while
//     the hook holds it;
//   - a pod that already went through an in-place update (Updated) moves to
//     PreparingUpdate with the hook's labels and finalizers put back;
//   - otherwise the InPlaceUpdateReady condition turns False (taking the pod out of
//     service), then the pod gets its revision labels, the lifecycle state Updating, the
//     in-place update state that says when it is done and the new images and metadata, or,
//     with a gracePeriodSeconds, the update to carry out once the period is over.
func (c *Controller) updateInPlace(ctx context.Context, v *view, pod *corev1.Pod, target *appsv1.ControllerRevision, plan *kruisepod.InPlaceUpdate, again *requeue) error {
	hook := clonesetutil.InPlaceUpdateHook(v.updateSet)
	switch state := clonesetutil.LifecycleState(pod); state {
	case "", appsv1beta1.LifecycleStatePreparingNormal, appsv1beta1.LifecycleStateNormal:
		if kruisepod.IsHooked(hook, pod) {
			_, err := c.setLifecycleState(ctx, v, pod, appsv1beta1.LifecycleStatePreparingUpdate, hook.MarkPodNotReady, nil)
			return err
		}
	case appsv1beta1.LifecycleStateUpdated:
		if hook == nil {
			return nil
		}
		_, err := c.setLifecycleState(ctx, v, pod, appsv1beta1.LifecycleStatePreparingUpdate, hook.MarkPodNotReady, hook)
		return err
	case appsv1beta1.LifecycleStatePreparingUpdate:
		if kruisepod.IsHooked(hook, pod) {
			return nil
		}
	case appsv1beta1.LifecycleStateUpdating:
	default:
		return fmt.Errorf("not allowed to in-place update pod %s in state %s", pod.Name, state)
	}

	written, err := c.writeInPlaceUpdate(ctx, v, pod, target, plan)
	if err != nil {
		c.recorder.Eventf(eventObject(v.cs), corev1.EventTypeWarning, FailedUpdatePodInPlaceReason,
			"failed to update pod %s in-place(revision %v): %v", pod.Name, target.Name, err)
		return fmt.Errorf("updating pod %s in place: %w", klog.KObj(pod), err)
	}
	c.podUpdates.Expect(v.key, written)
	if grace := gracePeriod(v.updateSet); grace > 0 {
		again.after(grace)
	}
	klog.FromContext(ctx).V(2).Info("Updated pod in place", "pod", klog.KObj(pod), "revision", target.Name)
	c.recorder.Eventf(eventObject(v.cs), corev1.EventTypeNormal, SuccessfulUpdatePodInPlaceReason,
		"successfully update pod %s in-place(revision %v)", pod.Name, target.Name)
	return nil
}

// writeInPlaceUpdate takes pod out of service through its InPlaceUpdateReady condition
// (when it has the gate) and writes the update. Both writes retry on conflict against the
// live pod. It returns the pod as last written.
func (c *Controller) writeInPlaceUpdate(ctx context.Context, v *view, pod *corev1.Pod, target *appsv1.ControllerRevision, plan *kruisepod.InPlaceUpdate) (*corev1.Pod, error) {
	pods := podcontrol.StatusUpdater{Client: c.kubeClient}
	current := pod
	if kruisepod.HasReadinessGate(current, appsv1beta1.InPlaceUpdateReady) {
		var err error
		current, err = pods.Rewrite(ctx, current, func(pod *corev1.Pod) (*corev1.Pod, error) {
			kruisepod.MarkInPlaceUpdateStarted(pod, v.now)
			return pods.UpdatePodStatus(ctx, pod)
		})
		if err != nil {
			return nil, err
		}
	}
	shortHash := c.gates.Enabled(features.CloneSetShortHash)
	var deferred *kruisepod.InPlaceUpdateSpec
	if grace := gracePeriod(v.updateSet); grace > 0 {
		var err error
		if deferred, err = plan.GraceSpec(target.Name, int32(grace/time.Second)); err != nil {
			return nil, err
		}
	}
	return pods.Rewrite(ctx, current, func(pod *corev1.Pod) (*corev1.Pod, error) {
		if deferred != nil {
			if err := kruisepod.DeferInPlaceUpdate(pod, deferred, v.now); err != nil {
				return nil, err
			}
		} else if !kruisepod.ApplyInPlaceUpdate(pod, plan, target.Name, v.now) {
			return nil, fmt.Errorf("pod lacks a container the new revision updates")
		} else {
			kruisepod.RemoveInPlaceUpdateGrace(pod)
		}
		clonesetutil.WriteRevisionLabels(pod.Labels, target.Name, shortHash)
		kruisepod.SetLifecycleState(pod, appsv1beta1.LifecycleStateUpdating, v.now.Time)
		return pods.UpdatePod(ctx, pod)
	})
}

// gracePeriod returns the CloneSet's in-place update grace period: how long a pod stays out
// of service before its containers are updated.
func gracePeriod(cs *appsv1beta1.CloneSet) time.Duration {
	rolling := cs.Spec.UpdateStrategy.RollingUpdate
	if rolling == nil || rolling.InPlaceUpdateStrategy == nil {
		return 0
	}
	return time.Duration(rolling.InPlaceUpdateStrategy.GracePeriodSeconds) * time.Second
}

// finishGracePeriod carries out the in-place update pod waits to make once its grace
// period is over (asking for another look when it will be), and drops one for a revision
// the pod has left since (a rollback during the grace period). The write retries on
// conflict against the live pod.
func (c *Controller) finishGracePeriod(ctx context.Context, v *view, pod *corev1.Pod, again *requeue) error {
	spec, err := kruisepod.ReadInPlaceUpdateGrace(pod)
	if err != nil || spec == nil {
		return err
	}
	pods := podcontrol.StatusUpdater{Client: c.kubeClient}
	var written *corev1.Pod
	_, err = pods.Rewrite(ctx, pod, func(current *corev1.Pod) (*corev1.Pod, error) {
		spec, err := kruisepod.ReadInPlaceUpdateGrace(current)
		if err != nil || spec == nil {
			return nil, err
		}
		state, err := kruisepod.ReadInPlaceUpdateState(current)
		if err != nil {
			return nil, err
		}
		if state == nil {
			return nil, fmt.Errorf("pod has an in-place update grace but no in-place update state")
		}
		updated := current
		if !clonesetutil.AtRevision(current, spec.Revision) {
			kruisepod.RemoveInPlaceUpdateGrace(updated)
		} else if left := kruisepod.GraceRemaining(spec, state, v.now.Time); left > 0 {
			again.after(roundUpToSeconds(left))
			return nil, nil
		} else if updated, err = kruisepod.FinishInPlaceUpdate(current, spec, state, v.now); err != nil {
			return nil, err
		}
		stored, err := pods.UpdatePod(ctx, updated)
		if err == nil {
			written = stored
		}
		return stored, err
	})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("finishing the in-place update grace of pod %s: %w", klog.KObj(pod), err)
	}
	if written != nil {
		klog.FromContext(ctx).V(2).Info("Grace period over; updated the pod's containers", "pod", klog.KObj(pod), "revision", spec.Revision)
		c.podUpdates.Expect(v.key, written)
	}
	return nil
}

// roundUpToSeconds rounds d up to whole seconds.
func roundUpToSeconds(d time.Duration) time.Duration {
	if rest := d % time.Second; rest != 0 {
		return d - rest + time.Second
	}
	return d
}
