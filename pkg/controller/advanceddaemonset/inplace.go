package advanceddaemonset

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/advanceddaemonset/daemonsetutil"
	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/podcontrol"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

// inPlaceUpdate is one pod to update in place and what to change on it.
type inPlaceUpdate struct {
	pod    *corev1.Pod
	update *kruisepod.InPlaceUpdate
}

// updateInPlace updates in place those of pods whose revision differs from the current one
// only in images and template metadata, at most burstReplicas of them per sync, and
// returns the pods that need to be recreated instead. Pods that qualify but exceed the
// burst wait for the next sync.
func (c *Controller) updateInPlace(ctx context.Context, v *view, h history, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	key, err := queue.KeyFor(v.ds)
	if err != nil {
		return nil, err
	}
	var (
		recreate []*corev1.Pod
		updates  []inPlaceUpdate
	)
	burst := daemonsetutil.BurstReplicas(v.ds, v.desired, c.burstReplicas)
	for _, pod := range pods {
		update := c.planInPlace(ctx, h, pod)
		switch {
		case update == nil:
			recreate = append(recreate, pod)
		case len(updates) < burst:
			updates = append(updates, inPlaceUpdate{pod: pod, update: update})
		}
	}

	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, u := range updates {
		wg.Go(func() {
			if err := c.updatePodInPlace(ctx, v, key, u); err != nil {
				mu.Lock()
				defer mu.Unlock()
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	return recreate, errors.Join(errs...)
}

// planInPlace returns the in-place update that brings pod to the current revision, or nil
// when the pod must be recreated: it lacks the InPlaceUpdateReady gate (nothing would keep
// it out of service while its containers restart), its revision is unknown, or the
// revisions differ in more than images and metadata.
func (c *Controller) planInPlace(ctx context.Context, h history, pod *corev1.Pod) *kruisepod.InPlaceUpdate {
	if !kruisepod.HasReadinessGate(pod, appsv1beta1.InPlaceUpdateReady) {
		return nil
	}
	revision := h.byHash(pod.Labels[appsv1beta1.ControllerRevisionHashLabelKey])
	if revision == nil || revision == h.current {
		return nil
	}
	// Labels and annotations the env reads are set like any other metadata here: the
	// Advanced DaemonSet does not restart containers for them.
	update, err := kruisepod.PlanInPlaceUpdate(revision.Data.Raw, h.current.Data.Raw, false)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Cannot compare revisions; recreating the pod", "pod", klog.KObj(pod), "err", err)
		return nil
	}
	return update
}

// updatePodInPlace takes the pod out of service through its InPlaceUpdateReady condition,
// then writes the new images, metadata, hash and in-place update state. Both writes retry
// on conflict against the live pod.
func (c *Controller) updatePodInPlace(ctx context.Context, v *view, key string, u inPlaceUpdate) error {
	logger := klog.FromContext(ctx)
	failed := func(err error) error {
		c.recorder.Eventf(eventObject(v.ds), corev1.EventTypeWarning, FailedUpdatePodInPlaceReason,
			"failed to update pod %s in-place(revision %v): %v", u.pod.Name, v.hash, err)
		return fmt.Errorf("updating pod %s in place: %w", klog.KObj(u.pod), err)
	}
	pods := podcontrol.StatusUpdater{Client: c.kubeClient}
	pod, err := pods.Rewrite(ctx, u.pod, func(pod *corev1.Pod) (*corev1.Pod, error) {
		kruisepod.MarkInPlaceUpdateStarted(pod, v.now)
		return pods.UpdatePodStatus(ctx, pod)
	})
	if err != nil {
		return failed(err)
	}
	pod, err = pods.Rewrite(ctx, pod, func(pod *corev1.Pod) (*corev1.Pod, error) {
		if pod.Labels[appsv1beta1.ControllerRevisionHashLabelKey] == v.hash {
			// Someone, or an earlier attempt, got there first.
			return nil, nil
		}
		if !kruisepod.ApplyInPlaceUpdate(pod, u.update, v.hash, v.now) {
			return nil, fmt.Errorf("pod lacks a container the new revision updates")
		}
		return pods.UpdatePod(ctx, pod)
	})
	if err != nil {
		return failed(err)
	}
	c.podUpdates.Expect(key, pod)
	logger.V(2).Info("Updated pod in place", "pod", klog.KObj(pod), "revision", v.hash)
	c.recorder.Eventf(eventObject(v.ds), corev1.EventTypeNormal, SuccessfulUpdatePodInPlaceReason,
		"successfully update pod %s in-place(revision %v)", pod.Name, v.hash)
	return nil
}

// refreshPodConditions turns True the readiness-gate condition this controller owns once
// nothing holds it: InPlaceUpdateReady when the pod's in-place update has taken effect (or
// never happened). The first KruisePodReady condition is pod-readiness-controller's to
// set, for the pods of every workload alike. These writes are not retried on conflict; the
// next sync tries again. A pod whose in-place update has its next batch of containers due
// gets that batch instead.
func (c *Controller) refreshPodConditions(ctx context.Context, v *view) error {
	var errs []error
	for _, pod := range v.pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		// The next batch of containers of an in-place update by launch priority (batches.go).
		if state := dueBatchState(pod); state != nil {
			if err := c.updateNextBatch(ctx, v, pod, state); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		// Decided on the cached pod: copying every pod of the DaemonSet on every sync only
		// to find, for almost all of them, nothing to change cost about 6% of the
		// controller's CPU while rolling 1,000 nodes.
		if !inPlaceUpdateDone(pod) {
			continue
		}
		refreshed := pod.DeepCopy()
		kruisepod.MarkInPlaceUpdateReady(refreshed, v.now)
		if _, err := c.kubeClient.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, refreshed, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("updating conditions of pod %s: %w", klog.KObj(pod), err))
		}
	}
	return errors.Join(errs...)
}

// inPlaceUpdateDone reports whether pod's InPlaceUpdateReady condition should turn True:
// the pod has the gate, the condition is not True yet, and its last in-place update (if
// any) has taken effect.
func inPlaceUpdateDone(pod *corev1.Pod) bool {
	if !kruisepod.AwaitsInPlaceUpdateReady(pod) {
		return false
	}
	state, err := kruisepod.ReadInPlaceUpdateState(pod)
	if err != nil {
		// An unreadable state cannot be completed; OpenKruise leaves such pods alone too.
		return false
	}
	return state == nil || kruisepod.InPlaceUpdateCompleted(pod, state)
}
