package advanceddaemonset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/advanceddaemonset/daemonsetutil"
	"github.com/bosun-dev/bosun/pkg/controller/expectations"
	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/controller/refmanager"
)

// selectingAllMessage is the SelectingAll event's message, as OpenKruise words it.
const selectingAllMessage = "This daemon set is selecting all pods. A non-empty selector is required."

// view is what one sync knows about a DaemonSet's nodes and pods.
type view struct {
	ds *appsv1beta1.DaemonSet
	// hash is the current revision's hash; generation the DaemonSet's deprecated template
	// generation, empty when it has none.
	hash, generation string
	// nodes are all nodes, sorted by name, and eligible says what each means for ds.
	nodes      []*corev1.Node
	nodeByName map[string]*corev1.Node
	eligible   map[string]daemonsetutil.Eligibility
	// desired is the number of nodes that should run a pod.
	desired int
	// pods are the claimed pods; podsByNode maps them to their nodes, oldest first,
	// terminating ones included. Pods that cannot be mapped to a node are left out.
	pods       []*corev1.Pod
	podsByNode map[string][]*corev1.Pod
	now        metav1.Time
}

// newView builds the view of ds over nodes and its claimed pods.
func (c *Controller) newView(ds *appsv1beta1.DaemonSet, nodes []*corev1.Node, pods []*corev1.Pod, hash string) *view {
	v := &view{
		ds: ds, hash: hash,
		nodes:      slices.SortedFunc(slices.Values(nodes), func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) }),
		nodeByName: map[string]*corev1.Node{},
		eligible:   map[string]daemonsetutil.Eligibility{},
		pods:       pods,
		podsByNode: map[string][]*corev1.Pod{},
		now:        metav1.NewTime(c.clock.Now()),
	}
	v.generation, _ = daemonsetutil.TemplateGeneration(ds.Annotations, appsv1beta1.DeprecatedTemplateGenerationAnnotationKey)
	for _, node := range v.nodes {
		v.nodeByName[node.Name] = node
		v.eligible[node.Name] = c.eligibility(ds, node)
		if v.eligible[node.Name].ShouldRun {
			v.desired++
		}
	}
	for _, pod := range pods {
		if nodeName, ok := daemonsetutil.TargetNodeName(pod); ok {
			v.podsByNode[nodeName] = append(v.podsByNode[nodeName], pod)
		}
	}
	for _, nodePods := range v.podsByNode {
		daemonsetutil.SortOldestFirst(nodePods)
	}
	return v
}

// activePods returns the pods of node that are not being deleted.
func (v *view) activePods(node string) []*corev1.Pod {
	var active []*corev1.Pod
	for _, pod := range v.podsByNode[node] {
		if pod.DeletionTimestamp == nil {
			active = append(active, pod)
		}
	}
	return active
}

// updated reports whether pod runs the current revision.
func (v *view) updated(pod *corev1.Pod) bool {
	return daemonsetutil.IsUpdated(pod, v.hash, v.generation)
}

// available reports whether pod has been ready for minReadySeconds and is not in the
// middle of an in-place update.
func (v *view) available(pod *corev1.Pod) bool {
	if !podutil.IsPodAvailable(pod, v.ds.Spec.MinReadySeconds, v.now) {
		return false
	}
	if kruisepod.HasReadinessGate(pod, appsv1beta1.InPlaceUpdateReady) {
		if cond := kruisepod.PodCondition(pod, appsv1beta1.InPlaceUpdateReady); cond != nil && cond.Status != corev1.ConditionTrue {
			return false
		}
	}
	return true
}

// requeue collects the delays after which parts of a sync want the DaemonSet looked at
// again; the shortest wins.
type requeue struct {
	delay time.Duration
	set   bool
}

func (r *requeue) after(d time.Duration) {
	d = max(d, 0)
	if !r.set || d < r.delay {
		r.delay, r.set = d, true
	}
}

// syncDaemonSet brings the DaemonSet named by key one step closer to running its current
// revision on every node that wants it, and writes its status. It never runs concurrently
// for one key.
func (c *Controller) syncDaemonSet(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx).WithValues("daemonSet", key)
	ctx = klog.NewContext(ctx, logger)
	began := c.clock.Now()
	defer func() { logger.V(4).Info("DaemonSet sync done", "took", c.clock.Since(began)) }()

	namespace, name, err := queue.SplitKey(key)
	if err != nil {
		return err
	}
	cached, err := c.daemonSets.DaemonSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("DaemonSet is gone; forgetting it")
		c.forget(ctx, key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading DaemonSet %s from the cache: %w", key, err)
	}
	if cached.DeletionTimestamp != nil {
		// The garbage collector removes the pods and revisions.
		return nil
	}
	ds := cached.DeepCopy()
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		// A retry cannot mend a selector; the DaemonSet's next update queues it again.
		logger.Error(err, "DaemonSet has an invalid selector; leaving it alone")
		return nil
	}
	if selector.Empty() {
		c.recorder.Event(eventObject(ds), corev1.EventTypeWarning, SelectingAllReason, selectingAllMessage)
		return nil
	}
	c.gcFailedPodsBackoff()

	// Expectations are read before the pods are listed: a pod observed in between would
	// otherwise be neither in the list nor outstanding, and be created a second time.
	mayManage, expectationWait := c.expectationsSatisfied(ctx, key)

	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	pods, err := c.claimPods(ctx, ds, selector)
	if err != nil {
		return err
	}
	history, err := c.constructHistory(ctx, ds, selector, pods)
	if err != nil {
		return err
	}
	v := c.newView(ds, nodes, pods, history.hash())
	var again requeue
	if !mayManage {
		logger.V(4).Info("Waiting for earlier writes to show in the cache", "atMost", expectationWait)
		again.after(expectationWait)
		return c.finish(ctx, key, v, false, &again, nil)
	}

	// Pre-download comes before manage so that the jobs for a new revision exist before the
	// first pod is replaced. Its failures do not hold the rollout back.
	var errs []error
	if err := c.preDownloadImages(ctx, v, history); err != nil {
		errs = append(errs, fmt.Errorf("pre-downloading images: %w", err))
	}
	managed, err := c.manage(ctx, v, &again)
	if err != nil {
		errs = append(errs, fmt.Errorf("managing daemon pods: %w", err))
		return c.finish(ctx, key, v, false, &again, errors.Join(errs...))
	}
	if satisfied, wait := c.expectationsSatisfied(ctx, key); !satisfied {
		again.after(wait)
		return c.finish(ctx, key, v, false, &again, errors.Join(errs...))
	}
	if managed {
		// What manage wrote has shown in the cache already. The rollout decides on the pods
		// as they are now: on the view from before, it would delete again (a 404) the old
		// pods manage just deleted for their available replacements, and mark again those
		// it just marked PreparingDelete.
		if pods, err = c.claimPods(ctx, ds, selector); err != nil {
			return c.finish(ctx, key, v, false, &again, errors.Join(append(errs, err)...))
		}
		v = c.newView(ds, nodes, pods, history.hash())
	}
	if err := c.refreshPodConditions(ctx, v); err != nil {
		errs = append(errs, fmt.Errorf("refreshing pod conditions: %w", err))
	}
	if daemonsetutil.RollingUpdate(ds) != nil && !daemonsetutil.Paused(ds) {
		if err := c.rollingUpdate(ctx, v, history, &again); err != nil {
			errs = append(errs, fmt.Errorf("rolling update: %w", err))
		}
	}
	if err := c.cleanupHistory(ctx, ds, history.old, pods); err != nil {
		errs = append(errs, fmt.Errorf("cleaning up history: %w", err))
	}
	return c.finish(ctx, key, v, true, &again, errors.Join(errs...))
}

// finish writes status (with observedGeneration only after a full sync), schedules the
// next look at the DaemonSet, and returns syncErr, or the status error when there is none.
func (c *Controller) finish(ctx context.Context, key string, v *view, fullSync bool, again *requeue, syncErr error) error {
	statusErr := c.updateStatus(ctx, v, fullSync, again)
	if again.set && syncErr == nil && statusErr == nil {
		klog.FromContext(ctx).V(4).Info("Looking at the DaemonSet again later", "after", again.delay)
		c.queue.AddAfter(key, again.delay)
	}
	if syncErr != nil {
		return syncErr
	}
	return statusErr
}

// expectationsSatisfied reports whether everything earlier syncs wrote for key has shown
// in the cache (or timed out), and otherwise how long to wait at most.
func (c *Controller) expectationsSatisfied(ctx context.Context, key string) (bool, time.Duration) {
	if !c.expectations.Satisfied(ctx, key) {
		// The store does not say when the record was set; its timeout bounds the wait, and
		// the informer events that meet it queue the DaemonSet earlier.
		return false, expectations.ExpectationsTimeout
	}
	if wait, pending := c.podUpdates.Pending(key); pending {
		return false, wait
	}
	return true, 0
}

// claimPods claims ds's pods, adopting matching orphans and releasing owned pods that no
// longer match.
func (c *Controller) claimPods(ctx context.Context, ds *appsv1beta1.DaemonSet, selector labels.Selector) ([]*corev1.Pod, error) {
	candidates, err := podutil.PodsForOwner(c.podIndexer, ds, controllerKind.Kind, true)
	if err != nil {
		return nil, fmt.Errorf("listing pods of DaemonSet %s: %w", klog.KObj(ds), err)
	}
	claimer := refmanager.New(ds, controllerKind, selector, c.canAdopt(ds), refmanager.PodControlPatcher(c.podControl))
	pods, err := claimer.ClaimPods(ctx, candidates)
	if err != nil {
		return nil, fmt.Errorf("claiming pods for DaemonSet %s: %w", klog.KObj(ds), err)
	}
	return pods, nil
}

// canAdopt reads ds live before the first adoption of a sync: the cache may not show yet
// that it is being deleted, and adopting for it would hand the objects to the garbage
// collector.
func (c *Controller) canAdopt(ds *appsv1beta1.DaemonSet) refmanager.CanAdoptFunc {
	return refmanager.RecheckDeletionTimestamp(ds, controllerKind.Kind, func(ctx context.Context) (metav1.Object, error) {
		return c.bosunClient.AppsV1beta1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	})
}

// gcFailedPodsBackoff drops backoff entries of nodes that have not failed for a while,
// at most once per failedPodBackoffGCPeriod.
func (c *Controller) gcFailedPodsBackoff() {
	c.backoffGCMu.Lock()
	defer c.backoffGCMu.Unlock()
	if now := c.clock.Now(); now.Sub(c.lastBackoffGC) >= failedPodBackoffGCPeriod {
		c.lastBackoffGC = now
		c.failedPodsBackoff.GC()
	}
}

// eventObject returns ds with its type set, so that events name it even where the
// recorder's scheme does not know apps.kruise.io.
func eventObject(ds *appsv1beta1.DaemonSet) *appsv1beta1.DaemonSet {
	if ds.Kind != "" {
		return ds
	}
	typed := *ds
	typed.APIVersion, typed.Kind = controllerKind.GroupVersion().String(), controllerKind.Kind
	return &typed
}
