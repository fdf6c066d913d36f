package containerrecreaterequest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/conditions"
	"github.com/bosun-dev/bosun/pkg/controller/containerrecreaterequest/crrutil"
	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/podcontrol"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

type crr = appsv1beta1.ContainerRecreateRequest

// syncRequest brings one request a step further; see the package documentation. Each
// write it makes comes back as an update event, which syncs the request again.
func (c *Controller) syncRequest(ctx context.Context, key string) error {
	namespace, name, err := queue.SplitKey(key)
	if err != nil {
		return err
	}
	cached, err := c.requests.ContainerRecreateRequests(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading ContainerRecreateRequest %s from the cache: %w", key, err)
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("containerRecreateRequest", klog.KObj(cached)))
	pod, err := c.pods.Pods(namespace).Get(cached.Spec.PodName)
	if apierrors.IsNotFound(err) {
		pod = nil
	} else if err != nil {
		return fmt.Errorf("reading pod %s from the cache: %w", klog.KRef(namespace, cached.Spec.PodName), err)
	}
	now := c.clock.Now()

	if cached.Status.CompletionTime != nil || cached.DeletionTimestamp != nil {
		return c.finish(ctx, cached, pod, now)
	}
	message, next := completion(cached, pod, now)
	if message != "" {
		return c.complete(ctx, cached, message, now)
	}
	if cached.Status.Phase != appsv1beta1.ContainerRecreateRequestRecreating {
		c.requeueAt(key, next, now)
		return nil
	}

	current, err := c.syncContainerStatuses(ctx, cached, pod)
	if err != nil {
		return err
	}
	if err := c.acquireUnready(ctx, current, pod, now); err != nil {
		return err
	}
	// Being Recreating, the request has been picked up: next is its deadline, if any.
	c.requeueAt(key, next, now)
	return nil
}

// requeueAt syncs the request again at when; never when it is zero.
func (c *Controller) requeueAt(key string, when, now time.Time) {
	if when.IsZero() {
		return
	}
	c.queue.AddAfter(key, max(when.Sub(now), time.Second))
}

// finish cleans up after a finished or deleted request: its not-ready mark and finalizer,
// then (finished only) the active label, then, after its TTL, the request itself.
func (c *Controller) finish(ctx context.Context, cached *crr, pod *corev1.Pod, now time.Time) error {
	if slices.Contains(cached.Finalizers, appsv1beta1.ContainerRecreateRequestUnreadyAcquiredKey) {
		return c.releaseUnready(ctx, cached, pod, now)
	}
	if cached.DeletionTimestamp != nil {
		return nil
	}
	requests := c.bosunClient.AppsV1beta1().ContainerRecreateRequests(cached.Namespace)
	if _, active := cached.Labels[appsv1beta1.ContainerRecreateRequestActiveKey]; active {
		patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:null}}}`, appsv1beta1.ContainerRecreateRequestActiveKey)
		if _, err := requests.Patch(ctx, cached.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing the active label of ContainerRecreateRequest %s: %w", klog.KObj(cached), err)
		}
		klog.FromContext(ctx).V(2).Info("ContainerRecreateRequest is no longer active")
		return nil
	}
	ttl := cached.Spec.TTLSecondsAfterFinished
	if ttl == nil || cached.Status.CompletionTime == nil {
		return nil
	}
	expiry := cached.Status.CompletionTime.Add(time.Duration(*ttl) * time.Second)
	if now.Before(expiry) {
		c.requeueAt(queue.KeyForRef(cached.Namespace, cached.Name), expiry, now)
		return nil
	}
	uid := cached.UID
	err := requests.Delete(ctx, cached.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting ContainerRecreateRequest %s after its ttlSecondsAfterFinished: %w", klog.KObj(cached), err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted ContainerRecreateRequest after its ttlSecondsAfterFinished", "ttlSecondsAfterFinished", *ttl)
	return nil
}

// syncContainerStatuses writes status.containerStatusSnapshot when it changed and returns
// the request as it now is.
//
// A target container is listed when it runs, started at or after the request's
// creationTimestamp, and is not the container that was there at admission (its
// statusContext). The last condition is what makes the start time safe to compare: the
// kubelet stamps it with the node's clock and the API server the creationTimestamp with
// its own, so on a node whose clock runs ahead a container that was never stopped could
// look as if it started after the request; its container ID gives it away.
//
// The list is compared with the snapshot the agent reads (crrutil), so a request whose
// v1alpha1 annotation already holds it is not written. The write is a merge patch of the
// status subresource that names only this field: the agent writes the phase and the
// container states, and neither writer may undo the other's.
func (c *Controller) syncContainerStatuses(ctx context.Context, cached *crr, pod *corev1.Pod) (*crr, error) {
	statuses := restartedContainerStatuses(cached, pod)
	if slices.Equal(statuses, crrutil.ContainerStatusSnapshot(cached)) {
		return cached, nil
	}
	if len(statuses) == 0 && len(cached.Status.ContainerStatusSnapshot) == 0 {
		// Only the v1alpha1 annotation lists containers, and controllers never write it:
		// there is no field to clear.
		return cached, nil
	}
	var snapshot any
	if len(statuses) > 0 {
		snapshot = statuses
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"containerStatusSnapshot": snapshot}})
	if err != nil {
		return nil, fmt.Errorf("encoding the container statuses of ContainerRecreateRequest %s: %w", klog.KObj(cached), err)
	}
	patched, err := c.bosunClient.AppsV1beta1().ContainerRecreateRequests(cached.Namespace).Patch(ctx, cached.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return nil, fmt.Errorf("writing the container statuses of ContainerRecreateRequest %s: %w", klog.KObj(cached), err)
	}
	klog.FromContext(ctx).V(4).Info("Synced the container statuses of ContainerRecreateRequest", "statuses", statuses)
	return patched, nil
}

// restartedContainerStatuses returns, in spec order, the pod-side status of the target
// containers that started again since the request was created (see syncContainerStatuses);
// nil when there is none.
func restartedContainerStatuses(cached *crr, pod *corev1.Pod) []appsv1beta1.ContainerRecreateRequestSyncContainerStatus {
	var out []appsv1beta1.ContainerRecreateRequestSyncContainerStatus
	for _, target := range cached.Spec.Containers {
		i := slices.IndexFunc(pod.Status.ContainerStatuses, func(s corev1.ContainerStatus) bool { return s.Name == target.Name })
		if i < 0 {
			continue
		}
		status := &pod.Status.ContainerStatuses[i]
		running := status.State.Running
		if running == nil || running.StartedAt.Before(&cached.CreationTimestamp) {
			continue
		}
		if target.StatusContext != nil && status.ContainerID == target.StatusContext.ContainerID {
			continue
		}
		out = append(out, appsv1beta1.ContainerRecreateRequestSyncContainerStatus{
			Name: status.Name, Ready: status.Ready, RestartCount: status.RestartCount, ContainerID: status.ContainerID,
		})
	}
	return out
}

// notReadyMark is the request's entry in the pod's KruisePodReady condition.
func notReadyMark(cached *crr) kruisepod.NotReadyMark {
	return kruisepod.NotReadyMark{
		UserAgent: appsv1beta1.KruisePodReadyUserAgentContainerRecreateRequest,
		Key:       cached.Namespace + "/" + cached.Name,
	}
}

// acquireUnready starts the unready grace period of a request that has one and has not
// started it: when the pod has the KruisePodReady gate, it takes the finalizer (so that
// the mark cannot outlive the request) and then marks the pod not ready; in any case it
// then records the time in the PreRecreateGrace condition, which the node agent waits on.
// A request whose v1alpha1 annotation records the time (valid or not) has started it.
func (c *Controller) acquireUnready(ctx context.Context, current *crr, pod *corev1.Pod, now time.Time) error {
	if current.Spec.Strategy == nil || current.Spec.Strategy.UnreadyGracePeriodSeconds == nil {
		return nil
	}
	if _, recorded, _ := crrutil.UnreadyAcquired(current); recorded {
		return nil
	}
	if kruisepod.HasReadinessGate(pod, appsv1beta1.KruisePodReadyConditionType) {
		if !slices.Contains(current.Finalizers, appsv1beta1.ContainerRecreateRequestUnreadyAcquiredKey) {
			patched, err := c.patchFinalizers(ctx, current, append(slices.Clone(current.Finalizers), appsv1beta1.ContainerRecreateRequestUnreadyAcquiredKey))
			if err != nil {
				return fmt.Errorf("adding finalizer %s to ContainerRecreateRequest %s: %w",
					appsv1beta1.ContainerRecreateRequestUnreadyAcquiredKey, klog.KObj(current), err)
			}
			current = patched
		}
		if _, err := kruisepod.MarkPodNotReady(ctx, podcontrol.StatusUpdater{Client: c.client}, pod, notReadyMark(current), metav1.NewTime(now)); err != nil {
			return fmt.Errorf("marking pod %s not ready for ContainerRecreateRequest %s: %w", klog.KObj(pod), klog.KObj(current), err)
		}
		klog.FromContext(ctx).V(2).Info("Marked pod not ready for its unready grace period", "pod", klog.KObj(pod))
	}
	// A merge patch replaces the whole condition list: the resourceVersion makes a write
	// from a stale copy fail instead of dropping a condition written meanwhile or moving a
	// time that is already set.
	grace := conditions.Meta.Set(current.Status.Conditions, crrutil.PreRecreateGraceCondition(now))
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": current.ResourceVersion},
		"status":   map[string]any{"conditions": grace},
	})
	if err != nil {
		return err
	}
	requests := c.bosunClient.AppsV1beta1().ContainerRecreateRequests(current.Namespace)
	if _, err := requests.Patch(ctx, current.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("recording the unready acquisition of ContainerRecreateRequest %s: %w", klog.KObj(current), err)
	}
	return nil
}

// releaseUnready removes the request's not-ready mark from its pod, when the pod is still
// this request's, is not being deleted and has the KruisePodReady gate, then the finalizer.
func (c *Controller) releaseUnready(ctx context.Context, cached *crr, pod *corev1.Pod, now time.Time) error {
	if pod != nil && pod.DeletionTimestamp == nil && string(pod.UID) == cached.Labels[appsv1beta1.ContainerRecreateRequestPodUIDKey] &&
		kruisepod.HasReadinessGate(pod, appsv1beta1.KruisePodReadyConditionType) {
		_, err := kruisepod.UnmarkPodNotReady(ctx, podcontrol.StatusUpdater{Client: c.client}, pod, notReadyMark(cached), metav1.NewTime(now))
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing the not-ready mark of ContainerRecreateRequest %s from pod %s: %w", klog.KObj(cached), klog.KObj(pod), err)
		}
		klog.FromContext(ctx).V(2).Info("Released the pod's not-ready mark", "pod", klog.KObj(pod))
	}
	kept := slices.DeleteFunc(slices.Clone(cached.Finalizers), func(f string) bool {
		return f == appsv1beta1.ContainerRecreateRequestUnreadyAcquiredKey
	})
	if _, err := c.patchFinalizers(ctx, cached, kept); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing finalizer %s from ContainerRecreateRequest %s: %w",
			appsv1beta1.ContainerRecreateRequestUnreadyAcquiredKey, klog.KObj(cached), err)
	}
	return nil
}

// patchFinalizers sets the request's finalizers to finalizers. The resourceVersion of the
// copy they were computed from makes the write fail on a conflict rather than drop a
// finalizer someone else added meanwhile.
func (c *Controller) patchFinalizers(ctx context.Context, current *crr, finalizers []string) (*crr, error) {
	if finalizers == nil {
		finalizers = []string{}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": current.ResourceVersion,
		"finalizers":      finalizers,
	}})
	if err != nil {
		return nil, err
	}
	return c.bosunClient.AppsV1beta1().ContainerRecreateRequests(current.Namespace).Patch(ctx, current.Name, types.MergePatchType, patch, metav1.PatchOptions{})
}
