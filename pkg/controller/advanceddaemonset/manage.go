package advanceddaemonset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/advanceddaemonset/daemonsetutil"
	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/podcontrol"
	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/controller/slowstart"
)

// manage creates the pods missing on nodes that want one and deletes the pods that must
// go: failed ones (with backoff), surplus ones, ones on nodes that no longer tolerate them,
// and pending ones whose node is gone. It reports whether it had any pod to create or
// delete (or to hold for the preDelete hook): then v no longer shows the pods as they are.
func (c *Controller) manage(ctx context.Context, v *view, again *requeue) (bool, error) {
	var (
		creates []string
		deletes []*corev1.Pod
	)
	surge := daemonsetutil.SurgeEnabled(v.ds)
	for _, node := range v.nodes {
		eligible := v.eligible[node.Name]
		pods := v.activePods(node.Name)
		switch {
		case eligible.ShouldRun && len(pods) == 0:
			creates = append(creates, node.Name)
		case eligible.ShouldContinueRunning:
			create, surplus := c.podsOnEligibleNode(ctx, v, node.Name, pods, eligible.ShouldRun, surge, again)
			if create {
				creates = append(creates, node.Name)
			}
			deletes = append(deletes, surplus...)
		default:
			deletes = append(deletes, pods...)
		}
	}
	deletes = append(deletes, podsOfVanishedNodes(v)...)
	creates = progressiveCreates(v, creates)
	return len(deletes)+len(creates) > 0, c.syncNodes(ctx, v, deletes, creates)
}

// podsOnEligibleNode decides for a node that may keep its daemon pods (pods, oldest first,
// none terminating) whether a pod must be created there and which pods must go.
func (c *Controller) podsOnEligibleNode(ctx context.Context, v *view, nodeName string, pods []*corev1.Pod, shouldRun, surge bool, again *requeue) (create bool, surplus []*corev1.Pod) {
	var running []*corev1.Pod
	for _, pod := range pods {
		switch {
		case pod.Status.Phase == corev1.PodFailed:
			if c.failedPodMayGo(ctx, v, nodeName, pod, again) {
				surplus = append(surplus, pod)
			}
		case kruisepod.IsPreparingDelete(pod):
			// Held by the preDelete hook; syncNodes deletes it once the hook lets go.
			surplus = append(surplus, pod)
		default:
			running = append(running, pod)
		}
	}
	if !surge {
		if len(running) > 1 {
			surplus = append(surplus, running[1:]...)
		}
		return false, surplus
	}

	if len(running) == 0 {
		return shouldRun, surplus
	}
	var newest, oldest *corev1.Pod // the oldest current pod and the oldest old pod
	for _, pod := range running {
		switch {
		case v.updated(pod) && newest == nil:
			newest = pod
		case !v.updated(pod) && oldest == nil:
			oldest = pod
		default:
			surplus = append(surplus, pod)
		}
	}
	if newest == nil || oldest == nil {
		return false, surplus
	}
	// Both revisions run: the old pod goes once the new one can take over, or at once when
	// the old one serves nothing anyway.
	switch {
	case !podutil.IsPodReady(oldest) || v.available(newest):
		surplus = append(surplus, oldest)
	case podutil.IsPodReady(newest):
		if wait := podutil.NextAvailabilityCheck([]*corev1.Pod{newest}, v.ds.Spec.MinReadySeconds, v.now.Time, c.clock); wait != nil {
			again.after(*wait)
		}
	}
	return false, surplus
}

// failedPodMayGo reports whether a failed pod on nodeName may be deleted now. Deletions are
// spaced out per DaemonSet and node by a doubling backoff, so that a pod failing at once
// after every start is not replaced in a hot loop; while backing off, the DaemonSet is
// looked at again when the delay ends.
func (c *Controller) failedPodMayGo(ctx context.Context, v *view, nodeName string, pod *corev1.Pod, again *requeue) bool {
	backoffKey := fmt.Sprintf("%s/%d/%s", v.ds.UID, v.ds.Status.ObservedGeneration, nodeName)
	now := c.clock.Now()
	if c.failedPodsBackoff.IsInBackOffSinceUpdate(backoffKey, now) {
		delay := c.failedPodsBackoff.Get(backoffKey)
		klog.FromContext(ctx).V(4).Info("Deleting failed pod is backing off", "pod", klog.KObj(pod), "node", nodeName, "delay", delay)
		again.after(delay)
		return false
	}
	c.failedPodsBackoff.Next(backoffKey, now)
	message := fmt.Sprintf("Found failed daemon pod %s/%s on node %s, will try to kill it", pod.Namespace, pod.Name, nodeName)
	klog.FromContext(ctx).V(2).Info("Found failed daemon pod; deleting it", "pod", klog.KObj(pod), "node", nodeName)
	c.recorder.Event(eventObject(v.ds), corev1.EventTypeWarning, FailedDaemonPodReason, message)
	return true
}

// podsOfVanishedNodes returns the pods waiting for the scheduler to bind them to a node
// that no longer exists: nothing else would ever remove them. Bound pods of vanished
// nodes are left to the pod garbage collector.
func podsOfVanishedNodes(v *view) []*corev1.Pod {
	var orphaned []*corev1.Pod
	for nodeName := range v.podsByNode {
		if _, exists := v.nodeByName[nodeName]; exists {
			continue
		}
		for _, pod := range v.activePods(nodeName) {
			if pod.Spec.NodeName == "" {
				orphaned = append(orphaned, pod)
			}
		}
	}
	slices.SortFunc(orphaned, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return orphaned
}

// progressiveCreates limits creates (node names, sorted) when the DaemonSet asks for its
// partition to hold back creation too: only as many nodes get a pod as the partition
// leaves to the current revision, the lexicographically smallest first. Pods are always
// created at the current revision.
func progressiveCreates(v *view, creates []string) []string {
	if daemonsetutil.RollingUpdate(v.ds) == nil || !daemonsetutil.PartitionedScaling(v.ds) {
		return creates
	}
	partition, err := daemonsetutil.Partition(v.ds, v.desired)
	if err != nil || partition == 0 {
		return creates
	}
	withCurrent := 0
	for _, node := range v.nodes {
		if v.eligible[node.Name].ShouldRun && slices.ContainsFunc(v.activePods(node.Name), v.updated) {
			withCurrent++
		}
	}
	allowed := max(v.desired-withCurrent-min(partition, v.desired), 0)
	return creates[:min(allowed, len(creates))]
}

// syncNodes deletes and creates pods: pods a preDelete hook holds are marked
// PreparingDelete instead of deleted; the rest is capped at burstReplicas each way and
// expected before any request goes out.
func (c *Controller) syncNodes(ctx context.Context, v *view, deletes []*corev1.Pod, creates []string) error {
	key, err := queue.KeyFor(v.ds)
	if err != nil {
		return err
	}
	deletes, holdErr := c.holdHookedPods(ctx, v, key, deletes)
	burst := daemonsetutil.BurstReplicas(v.ds, v.desired, c.burstReplicas)
	deletes = deletes[:min(len(deletes), burst)]
	creates = creates[:min(len(creates), burst)]
	if len(deletes) == 0 && len(creates) == 0 {
		return holdErr
	}
	klog.FromContext(ctx).V(2).Info("Syncing daemon pods", "creating", len(creates), "deleting", len(deletes))
	// Deletes are tracked by pod key so that the graceful-delete update and the final
	// delete event of one pod count once; creates only by number.
	c.expectations.ExpectDeletions(ctx, key, podKeys(deletes))
	c.counters.Raise(ctx, key, len(creates), 0)

	createErr := c.createPods(ctx, v, key, creates)
	deleteErr := c.deletePods(ctx, v, key, deletes)
	return errors.Join(holdErr, createErr, deleteErr)
}

// podTemplate returns the template of the pods ds creates at revision hash: the
// DaemonSet's template with the revision labels, the default tolerations and the
// readiness gate the in-place update relies on. The KruisePodReady gate, which the
// preDelete hook's markPodNotReady relies on, comes from the mutating pod webhook, as in
// OpenKruise, with pod-readiness-controller, which sets its condition.
func podTemplate(v *view) *corev1.PodTemplateSpec {
	template := v.ds.Spec.Template.DeepCopy()
	if template.Labels == nil {
		template.Labels = map[string]string{}
	}
	template.Labels[appsv1beta1.ControllerRevisionHashLabelKey] = v.hash
	if v.generation != "" {
		template.Labels[appsv1beta1.DaemonSetTemplateGenerationLabelKey] = v.generation
	}
	daemonsetutil.AddDefaultTolerations(&template.Spec)
	if daemonsetutil.InPlaceIfPossible(v.ds) {
		kruisepod.AddReadinessGate(&template.Spec, appsv1beta1.InPlaceUpdateReady)
	}
	return template
}

// createPods creates one pod on each of nodes in slow-start batches, so that a create
// bound to fail (a quota, an admission webhook) fails a few times rather than for every
// node.
func (c *Controller) createPods(ctx context.Context, v *view, key string, nodes []string) error {
	if len(nodes) == 0 {
		return nil
	}
	template := podTemplate(v)
	owner := metav1.NewControllerRef(v.ds, controllerKind)
	var (
		mu   sync.Mutex
		next int
	)
	created, err := slowstart.Batch(len(nodes), slowstart.SlowStartInitialBatchSize, func() error {
		mu.Lock()
		nodeName := nodes[next]
		next++
		mu.Unlock()
		bound := template.DeepCopy()
		// The scheduler binds the pod; naming the node in its affinity keeps it there.
		daemonsetutil.BindToNode(&bound.Spec, nodeName)
		err := c.podControl.CreatePods(ctx, v.ds.Namespace, bound, eventObject(v.ds), owner)
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			// The namespace goes away with everything in it; retrying would only storm.
			return nil
		}
		return err
	})
	if skipped := len(nodes) - created; skipped > 0 {
		klog.FromContext(ctx).V(2).Info("Pod creation stopped at a failure; no longer expecting the rest", "skipped", skipped)
		for range skipped {
			c.expectations.CreationObserved(ctx, key)
		}
	}
	return err
}

// deletePods deletes pods in parallel. NotFound counts as done.
func (c *Controller) deletePods(ctx context.Context, v *view, key string, pods []*corev1.Pod) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, pod := range pods {
		wg.Go(func() {
			err := c.podControl.DeletePod(ctx, pod.Namespace, pod.Name, eventObject(v.ds))
			if err == nil {
				return
			}
			// A failed delete produces no event to wait for.
			c.expectations.DeletionObserved(ctx, key, queue.PodKey(pod))
			if apierrors.IsNotFound(err) {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			errs = append(errs, err)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// preDeleteHook returns ds's preDelete hook, or nil.
func preDeleteHook(ds *appsv1beta1.DaemonSet) *appsv1beta1.LifecycleHook {
	if ds.Spec.Lifecycle == nil {
		return nil
	}
	return ds.Spec.Lifecycle.PreDelete
}

// holdHookedPods returns the pods of deletes that may be deleted now. The others are held
// by the preDelete hook: they are labelled PreparingDelete (once), which tells whoever owns
// the hook to finish its work and release the pod, and with markPodNotReady they are
// taken out of service.
func (c *Controller) holdHookedPods(ctx context.Context, v *view, key string, deletes []*corev1.Pod) ([]*corev1.Pod, error) {
	hook := preDeleteHook(v.ds)
	if hook == nil {
		return deletes, nil
	}
	var (
		free []*corev1.Pod
		errs []error
	)
	for _, pod := range deletes {
		if !kruisepod.IsHooked(hook, pod) {
			free = append(free, pod)
			continue
		}
		if kruisepod.IsPreparingDelete(pod) {
			continue
		}
		if err := c.markPreparingDelete(ctx, v, key, pod, hook.MarkPodNotReady); err != nil {
			errs = append(errs, err)
		}
	}
	return free, errors.Join(errs...)
}

// markPreparingDelete labels pod PreparingDelete and, when markNotReady, marks it not
// ready; the resulting versions are expected before the DaemonSet is managed again.
func (c *Controller) markPreparingDelete(ctx context.Context, v *view, key string, pod *corev1.Pod, markNotReady bool) error {
	body := kruisepod.LifecycleStatePatch(appsv1beta1.LifecycleStatePreparingDelete, v.now.Time, nil)
	patched, err := c.kubeClient.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("marking pod %s PreparingDelete: %w", klog.KObj(pod), err)
	}
	klog.FromContext(ctx).V(2).Info("Pod is held by the preDelete hook", "pod", klog.KObj(pod))
	c.podUpdates.Expect(key, patched)
	if !markNotReady || !kruisepod.HasReadinessGate(patched, appsv1beta1.KruisePodReadyConditionType) {
		// Without the gate the kubelet would ignore the condition.
		return nil
	}
	marked, err := c.markNotReady(ctx, patched, v.now)
	if err != nil {
		return fmt.Errorf("marking pod %s not ready: %w", klog.KObj(pod), err)
	}
	if marked != nil {
		c.podUpdates.Expect(key, marked)
	}
	return nil
}

// markNotReady adds the preDelete mark to pod's KruisePodReady condition, turning it
// False, and recomputes Ready, retrying on conflicts with the live pod. It returns the
// written pod, or nil when the mark was there already.
func (c *Controller) markNotReady(ctx context.Context, pod *corev1.Pod, now metav1.Time) (*corev1.Pod, error) {
	return kruisepod.MarkPodNotReady(ctx, podcontrol.StatusUpdater{Client: c.kubeClient}, pod, kruisepod.PreDeleteMark, now)
}

// podKeys returns the "namespace/name" keys of pods.
func podKeys(pods []*corev1.Pod) []string {
	keys := make([]string, 0, len(pods))
	for _, pod := range pods {
		keys = append(keys, queue.PodKey(pod))
	}
	return keys
}
