package cloneset

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/cloneset/clonesetutil"
	"github.com/bosun-dev/bosun/pkg/controller/expectations"
	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/slowstart"
	"github.com/bosun-dev/bosun/pkg/features"
)

// Event reasons of scaling, besides the create and delete ones. They are OpenKruise's.
const (
	ScaleUpLimitedReason   = "ScaleUpLimited"
	SuccessfulCreateReason = "SuccessfulCreate"
	FailedCreateReason     = "FailedCreate"
	SuccessfulDeleteReason = "SuccessfulDelete"
	FailedDeleteReason     = "FailedDelete"
	FailedUpdateReason     = "FailedUpdate"
)

// randomInstanceID draws a fresh instance ID.
func randomInstanceID() string {
	return utilrand.String(clonesetutil.InstanceIDLength)
}

// scale brings the number of the CloneSet's pods to its replicas (plus surge) and deletes
// the pods that are to go, one kind of step per sync, and reports whether it wrote
// anything. In order:
//  1. a scale-up cancels the deletion of pods a preDelete hook holds (unless a hook marks
//     pods not ready), as far as pods are missing;
//  2. missing pods are created, the partition's share at the current revision;
//  3. pods held in PreparingDelete that no hook holds any more are deleted;
//  4. pods to delete (specified-delete label, podsToDelete) are deleted, not-ready ones
//     first and ready ones within the budget;
//  5. once none of those is left, surplus pods are deleted, chosen by rank, ready ones
//     within the same budget unless WithScalingSurplusIgnoreMaxUnavailable: the pods
//     above replicas and the surge in use are not needed, however long minReadySeconds
//     keeps the others from counting as available (OpenKruise issue #1478).
func (c *Controller) scale(ctx context.Context, v *view) (bool, error) {
	cs := v.updateSet
	specified, preDeleting, pendingDeletes := plannedDeletions(cs, v.pods)
	if modified, err := c.cancelDeletions(ctx, v, preDeleting, pendingDeletes); err != nil || modified {
		return modified, err
	}
	isUpdated := c.isUpdatedForScaling(v)
	diffs := c.diffs(ctx, v, isUpdated)
	logger := klog.FromContext(ctx)

	if diffs.ScaleUp > diffs.ScaleUpLimit {
		c.recorder.Event(eventObject(v.cs), corev1.EventTypeWarning, ScaleUpLimitedReason,
			fmt.Sprintf("scaleUp is limited because of scaleStrategy.maxUnavailable, limit: %d", diffs.ScaleUpLimit))
	}
	if diffs.ScaleUp > 0 {
		logger.V(3).Info("Scaling out", "creating", diffs.ScaleUpLimit, "atCurrentRevision", diffs.ScaleUpOld)
		return c.createPods(ctx, v, diffs.ScaleUpLimit, diffs.ScaleUpOld)
	}

	if len(preDeleting) > 0 {
		logger.V(3).Info("Deleting pods held in PreparingDelete", "pods", podNames(preDeleting))
		if modified, err := c.deletePods(ctx, v, preDeleting); err != nil || modified {
			return modified, err
		}
	}

	readyLimit := diffs.DeleteReadyLimit
	if toDelete := withoutPods(specified, preDeleting); len(toDelete) > 0 {
		logger.V(3).Info("Deleting specified pods", "pods", podNames(toDelete), "deleteReadyLimit", readyLimit)
		if modified, err := c.deletePods(ctx, v, c.withinReadyLimit(v, toDelete, &readyLimit)); err != nil || modified {
			return modified, err
		}
	}

	if diffs.ScaleDown > 0 {
		if pendingDeletes > 0 {
			logger.V(3).Info("Scale-in waits for pods being deleted", "scaleDown", diffs.ScaleDown, "pendingDeletes", pendingDeletes)
			return false, nil
		}
		var updated, old []*corev1.Pod
		for _, pod := range v.pods {
			if isUpdated(pod) {
				updated = append(updated, pod)
			} else {
				old = append(old, pod)
			}
		}
		logger.V(3).Info("Scaling in", "scaleDown", diffs.ScaleDown, "atCurrentRevision", diffs.ScaleDownOld, "deleteReadyLimit", readyLimit,
			"surplusIgnoresMaxUnavailable", c.surplusIgnoresMaxUnavailable)
		victims := c.choosePodsToDelete(v, diffs.ScaleDown, diffs.ScaleDownOld, old, updated)
		if !c.surplusIgnoresMaxUnavailable {
			victims = c.withinReadyLimit(v, victims, &readyLimit)
		}
		return c.deletePods(ctx, v, victims)
	}
	return false, nil
}

// plannedDeletions returns the pods to delete (specified), the pods a preDelete hook
// holds, and how many pods are either.
func plannedDeletions(cs *appsv1beta1.CloneSet, pods []*corev1.Pod) (specified, preDeleting []*corev1.Pod, count int) {
	names := sets.New[string]()
	for _, pod := range pods {
		if clonesetutil.IsSpecifiedDelete(cs, pod) {
			names.Insert(pod.Name)
			specified = append(specified, pod)
		}
		if clonesetutil.LifecycleState(pod) == appsv1beta1.LifecycleStatePreparingDelete {
			names.Insert(pod.Name)
			preDeleting = append(preDeleting, pod)
		}
	}
	return specified, preDeleting, names.Len()
}

// cancelDeletions moves pods a preDelete hook holds back to PreparingNormal while pods are
// missing, so that a scale-up reuses them instead of creating new ones. Specified pods stay
// held, and nothing moves back while a hook marks pods not ready: its mark would have to be
// withdrawn first.
func (c *Controller) cancelDeletions(ctx context.Context, v *view, preDeleting []*corev1.Pod, pendingDeletes int) (bool, error) {
	cs := v.updateSet
	if clonesetutil.MarksPodNotReady(cs) {
		return false, nil
	}
	missing := int(ptr.Deref(cs.Spec.Replicas, 1)) - len(v.pods) + pendingDeletes
	modified := false
	for _, pod := range preDeleting {
		if missing <= 0 {
			break
		}
		if clonesetutil.IsSpecifiedDelete(cs, pod) {
			continue
		}
		klog.FromContext(ctx).V(3).Info("Scale-up cancels the deletion of a pod", "pod", klog.KObj(pod))
		updated, err := c.setLifecycleState(ctx, v, pod, appsv1beta1.LifecycleStatePreparingNormal, false, nil)
		if err != nil {
			return modified, err
		}
		modified = modified || updated
		missing--
	}
	return modified, nil
}

// withinReadyLimit returns the pods of candidates that may be deleted now: every one that
// is not ready, and ready ones while *limit lasts, which it uses up.
func (c *Controller) withinReadyLimit(v *view, candidates []*corev1.Pod, limit *int) []*corev1.Pod {
	var allowed []*corev1.Pod
	for _, pod := range candidates {
		switch {
		case !clonesetutil.IsAvailable(pod, 0, v.now):
			allowed = append(allowed, pod)
		case *limit > 0:
			allowed = append(allowed, pod)
			*limit--
		}
	}
	return allowed
}

// createPods creates n pods, the first min(n, nOld) at the current revision and the rest at
// the update revision, in slow-start batches, each after its missing claims. It reports
// whether any pod was created, or whether a pod waits for the name of a pod being deleted
// (see pickInstanceIDs), which it looks at again then: either way the update waits.
func (c *Controller) createPods(ctx context.Context, v *view, n, nOld int) (bool, error) {
	if n <= 0 {
		return false, nil
	}
	ids, wait := c.pickInstanceIDs(v, n)
	waiting := len(ids) < n
	if waiting {
		klog.FromContext(ctx).V(3).Info("Waiting for pods being deleted to free the names of their reusable claims",
			"pods", n-len(ids), "atMost", wait)
		c.queue.AddAfter(v.key, wait)
	}
	shortHash := c.gates.Enabled(features.CloneSetShortHash)
	type newPod struct {
		pod *corev1.Pod
		cs  *appsv1beta1.CloneSet
	}
	pods := make([]newPod, 0, n)
	for i, id := range ids {
		set, revision := v.updateSet, v.update.Name
		if i < nOld {
			set, revision = v.currentSet, v.current.Name
		}
		pod, err := clonesetutil.NewPod(set, revision, id, shortHash, v.now.Time)
		if err != nil {
			return false, err
		}
		pods = append(pods, newPod{pod: pod, cs: set})
	}
	existingClaims := sets.New[string]()
	for _, claim := range v.claims {
		existingClaims.Insert(claim.Name)
	}
	// Expected before the first request: the informer may show a new pod before its
	// create call returns.
	for _, p := range pods {
		c.scaleExpectations.Expect(v.key, expectations.Create, podsResource, p.pod.Name)
	}

	var (
		mu   sync.Mutex
		next int
		// tried are the pods whose create was sent; createPod settles their expectations
		// when the create fails.
		tried, created = sets.New[string](), sets.New[string]()
	)
	_, err := slowstart.Batch(len(pods), slowstart.SlowStartInitialBatchSize, func() error {
		mu.Lock()
		p := pods[next]
		next++
		tried.Insert(p.pod.Name)
		mu.Unlock()
		if err := c.createPod(ctx, v, p.cs, p.pod, existingClaims); err != nil {
			return err
		}
		mu.Lock()
		created.Insert(p.pod.Name)
		mu.Unlock()
		return nil
	})
	// No informer event will come for the pods whose create was never sent.
	for _, p := range pods {
		if !tried.Has(p.pod.Name) {
			c.scaleExpectations.Observe(v.key, expectations.Create, podsResource, p.pod.Name)
		}
	}
	return created.Len() > 0 || waiting, err
}

// createFailed settles the expectation of a create of resource/name that failed with err:
// a refused create will never show, one that got no answer may have been carried out and
// waits, marked, until the next sync reads it live (see checkUnansweredLive). Taking it as
// failed would create the CloneSet's pod a second time under a new name when the informer,
// reconnecting after a kube-apiserver crash, is slower than the next sync.
func (c *Controller) createFailed(key, resource, name string, err error) {
	if expectations.AnswerLost(err) {
		c.scaleExpectations.Unanswered(key, expectations.Create, resource, name)
		return
	}
	c.scaleExpectations.Observe(key, expectations.Create, resource, name)
}

// terminatingNameWait is how long past its deletion deadline a pod being deleted is waited
// for, so that its reusable claims keep their pod, before its instance ID is given up.
const terminatingNameWait = 30 * time.Second

// pickInstanceIDs returns the instance IDs of up to n new pods: those of claims no active
// pod uses first, then fresh ones; when it returns fewer than n, the rest wait for pods
// being deleted, to be looked at again after the duration it returns. An ID whose pod name
// is still taken is never used: the create would fail for as long as that pod exists. A pod
// being deleted gives its name back soon, as OpenKruise's retried creates find: the claims
// of its ID are waited for, no pod being created in their stead, until terminatingNameWait
// past the pod's deletion deadline. A pod that stays (finished, one of another owner, or
// still terminating then, as on a lost node) has its ID given up for a fresh one (OpenKruise
// issue #1099). Fresh IDs also avoid the IDs of existing claims.
func (c *Controller) pickInstanceIDs(v *view, n int) ([]string, time.Duration) {
	inUse := sets.New[string]()
	for _, pod := range v.pods {
		inUse.Insert(clonesetutil.InstanceID(pod))
	}
	claimIDs := sets.New[string]()
	for _, claim := range v.claims {
		claimIDs.Insert(clonesetutil.InstanceID(claim))
	}
	var reusable []string
	var going int
	var wait time.Duration
	for _, id := range sets.List(claimIDs.Difference(inUse)) {
		pod, err := c.pods.Pods(v.cs.Namespace).Get(clonesetutil.PodName(v.cs.Name, id))
		if err != nil {
			reusable = append(reusable, id)
			continue
		}
		if pod.DeletionTimestamp == nil {
			continue
		}
		if left := pod.DeletionTimestamp.Add(terminatingNameWait).Sub(v.now.Time); left > 0 {
			if going == 0 || left < wait {
				wait = left
			}
			going++
		}
	}
	// Only as many as free claims leave without a pod wait.
	going = min(going, max(n-len(reusable), 0))
	taken := func(id string) bool {
		if inUse.Has(id) {
			return true
		}
		_, err := c.pods.Pods(v.cs.Namespace).Get(clonesetutil.PodName(v.cs.Name, id))
		return err == nil
	}
	random := func() string {
		for {
			if id := c.randomID(); !claimIDs.Has(id) {
				return id
			}
		}
	}
	return clonesetutil.PickInstanceIDs(n-going, reusable, taken, random), wait
}

// createPod creates pod, of CloneSet cs (with the template of the pod's revision), after
// the claims of its volume claim templates that do not exist yet.
func (c *Controller) createPod(ctx context.Context, v *view, cs *appsv1beta1.CloneSet, pod *corev1.Pod, existingClaims sets.Set[string]) error {
	for _, claim := range clonesetutil.NewClaims(cs, clonesetutil.InstanceID(pod)) {
		if existingClaims.Has(claim.Name) {
			continue
		}
		c.scaleExpectations.Expect(v.key, expectations.Create, claimsResource, claim.Name)
		if _, err := c.kubeClient.CoreV1().PersistentVolumeClaims(claim.Namespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
			c.createFailed(v.key, claimsResource, claim.Name, err)
			// The pod's create is not sent.
			c.scaleExpectations.Observe(v.key, expectations.Create, podsResource, pod.Name)
			c.recorder.Eventf(eventObject(v.cs), corev1.EventTypeWarning, FailedCreateReason, "failed to create pvc: %v, pvc: %v", err, dumpJSON(claim))
			return fmt.Errorf("creating claim %s: %w", klog.KObj(claim), err)
		}
	}
	if _, err := c.kubeClient.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		c.createFailed(v.key, podsResource, pod.Name, err)
		c.recorder.Eventf(eventObject(v.cs), corev1.EventTypeWarning, FailedCreateReason, "failed to create pod: %v, pod: %v", err, dumpJSON(pod))
		return fmt.Errorf("creating pod %s: %w", klog.KObj(pod), err)
	}
	klog.FromContext(ctx).V(4).Info("Created pod", "pod", klog.KObj(pod))
	c.recorder.Eventf(eventObject(v.cs), corev1.EventTypeNormal, SuccessfulCreateReason, "succeed to create pod %s", pod.Name)
	return nil
}

// deletePods deletes pods one after the other, with the claims of their instance IDs, and
// reports whether it wrote anything. A pod a preDelete hook holds is not deleted but moved
// to PreparingDelete (and, with markPodNotReady, marked not ready): whoever owns the hook
// releases it when done, and a later sync deletes it.
func (c *Controller) deletePods(ctx context.Context, v *view, pods []*corev1.Pod) (bool, error) {
	hook := clonesetutil.PreDeleteHook(v.updateSet)
	modified := false
	for _, pod := range pods {
		if kruisepod.IsHooked(hook, pod) {
			updated, err := c.setLifecycleState(ctx, v, pod, appsv1beta1.LifecycleStatePreparingDelete, hook.MarkPodNotReady, nil)
			if err != nil {
				return false, err
			}
			if updated {
				klog.FromContext(ctx).V(3).Info("Pod is held by the preDelete hook", "pod", klog.KObj(pod))
				modified = true
			}
			continue
		}
		deleted, err := c.deletePodAndClaims(ctx, v, pod)
		modified = modified || deleted
		if err != nil {
			return modified, err
		}
	}
	return modified, nil
}

// deletePodAndClaims deletes pod and then the claims of its instance ID, and reports whether the
// pod was deleted by this call.
func (c *Controller) deletePodAndClaims(ctx context.Context, v *view, pod *corev1.Pod) (bool, error) {
	c.scaleExpectations.Expect(v.key, expectations.Delete, podsResource, pod.Name)
	err := c.kubeClient.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil {
		c.scaleExpectations.Observe(v.key, expectations.Delete, podsResource, pod.Name)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		c.recorder.Eventf(eventObject(v.cs), corev1.EventTypeWarning, FailedDeleteReason, "failed to delete pod %s: %v", pod.Name, err)
		return false, fmt.Errorf("deleting pod %s: %w", klog.KObj(pod), err)
	}
	klog.FromContext(ctx).V(4).Info("Deleted pod", "pod", klog.KObj(pod))
	c.recorder.Event(eventObject(v.cs), corev1.EventTypeNormal, SuccessfulDeleteReason, fmt.Sprintf("succeed to delete pod %s", pod.Name))
	id := clonesetutil.InstanceID(pod)
	for _, claim := range v.claims {
		if clonesetutil.InstanceID(claim) != id {
			continue
		}
		c.scaleExpectations.Expect(v.key, expectations.Delete, claimsResource, claim.Name)
		err := c.kubeClient.CoreV1().PersistentVolumeClaims(claim.Namespace).Delete(ctx, claim.Name, metav1.DeleteOptions{})
		if err != nil {
			c.scaleExpectations.Observe(v.key, expectations.Delete, claimsResource, claim.Name)
			if apierrors.IsNotFound(err) {
				continue
			}
			c.recorder.Eventf(eventObject(v.cs), corev1.EventTypeWarning, FailedDeleteReason, "failed to delete pvc %s: %v", claim.Name, err)
			return true, fmt.Errorf("deleting claim %s: %w", klog.KObj(claim), err)
		}
	}
	return true, nil
}

// choosePodsToDelete picks n pods for scale-in: nOld among old (pods not at the update
// revision) and the rest among updated, each by clonesetutil.DeletionOrder.
func (c *Controller) choosePodsToDelete(v *view, n, nOld int, old, updated []*corev1.Pod) []*corev1.Pod {
	switch {
	case nOld >= n:
		return c.rankedFirst(v, old, n)
	case nOld > 0:
		return append(c.rankedFirst(v, old, nOld), c.rankedFirst(v, updated, n-nOld)...)
	}
	return c.rankedFirst(v, updated, n)
}

// rankedFirst returns the first n of pods in deletion order; all of them when n is not
// smaller.
func (c *Controller) rankedFirst(v *view, pods []*corev1.Pod, n int) []*corev1.Pod {
	if n >= len(pods) {
		return pods
	}
	sorted := slices.Clone(pods)
	var ranks map[types.UID]float64
	if keys := topologyKeys(v.updateSet); len(keys) > 0 {
		ranks = clonesetutil.SpreadRanks(sorted, keys, c.nodeLabels)
	} else {
		ranks = clonesetutil.SameNodeRanks(sorted)
	}
	sort.Sort(clonesetutil.DeletionOrder{
		Pods:      sorted,
		Rank:      func(pod *corev1.Pod) float64 { return ranks[pod.UID] },
		Available: func(pod *corev1.Pod) bool { return c.available(v, pod) },
	})
	return sorted[:n]
}

// topologyKeys returns the topology keys of the spread constraints of cs's template.
func topologyKeys(cs *appsv1beta1.CloneSet) []string {
	var keys []string
	for _, constraint := range cs.Spec.Template.Spec.TopologySpreadConstraints {
		keys = append(keys, constraint.TopologyKey)
	}
	return keys
}

// nodeLabels returns the labels of the node named name, from the cache.
func (c *Controller) nodeLabels(name string) (map[string]string, bool) {
	node, err := c.nodes.Get(name)
	if err != nil {
		return nil, false
	}
	return node.Labels, true
}

// withoutPods returns the pods of pods not in remove.
func withoutPods(pods, remove []*corev1.Pod) []*corev1.Pod {
	removed := sets.New[types.UID]()
	for _, pod := range remove {
		removed.Insert(pod.UID)
	}
	var kept []*corev1.Pod
	for _, pod := range pods {
		if !removed.Has(pod.UID) {
			kept = append(kept, pod)
		}
	}
	return kept
}

// podNames returns the names of pods, sorted, for log lines.
func podNames(pods []*corev1.Pod) []string {
	names := make([]string, 0, len(pods))
	for _, pod := range pods {
		names = append(names, pod.Name)
	}
	slices.Sort(names)
	return names
}

// dumpJSON renders obj as JSON for an event message, as OpenKruise's failure events show
// the object that could not be created.
func dumpJSON(obj any) string {
	encoded, _ := json.Marshal(obj)
	return string(encoded)
}
