package podunavailablebudget

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	kruiseappsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	kruiseappsinformers "github.com/bosun-dev/client-go/informers/externalversions/apps/v1beta1"
	policyinformers "github.com/bosun-dev/client-go/informers/externalversions/policy/v1beta1"
	policylisters "github.com/bosun-dev/client-go/listers/policy/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/budget"
	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/pubutil"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/controller/workload"
	"github.com/bosun-dev/bosun/pkg/features"
)

const (
	// ControllerName is the controller's canonical name and the source component of the
	// events it records.
	ControllerName = "podunavailablebudget-controller"

	// PodTerminatingDelay is how long after a pod's deletion starts its budget is synced:
	// by then the pod has had time to report itself not ready, and the webhook's record of
	// the deletion is still in disruptedPods, so the budget is not handed back twice.
	PodTerminatingDelay = 5 * time.Second
)

// Event reasons, OpenKruise's.
const (
	// NoPodsReason (Normal, on the budget): the budget covers no pod.
	NoPodsReason = "NoPods"
	// CalculateExpectedPodCountFailedReason (Warning, on the budget): desiredAvailable
	// cannot be computed from the spec and the expected pod count.
	CalculateExpectedPodCountFailedReason = "CalculateExpectedPodCountFailed"
	// NotDeletedReason (Warning, on the pod): the webhook admitted the pod's deletion or
	// eviction, but the pod is still there after pubutil.DeletionTimeout.
	NotDeletedReason = "NotDeleted"
)

// budgetKind is the kind of the objects this controller manages.
var budgetKind = policyv1beta1.SchemeGroupVersion.WithKind("PodUnavailableBudget")

// The workload kinds whose changes the controller watches.
var (
	deploymentKind  = appsv1.SchemeGroupVersion.WithKind("Deployment").GroupKind()
	statefulSetKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet").GroupKind()
	daemonSetKind   = kruiseappsv1beta1.SchemeGroupVersion.WithKind("DaemonSet").GroupKind()
	replicaSetKind  = appsv1.SchemeGroupVersion.WithKind("ReplicaSet").GroupKind()
)

// Controller keeps the status of PodUnavailableBudgets current and tags the pods they
// cover.
type Controller struct {
	client      kubernetes.Interface
	bosunClient bosunclientset.Interface
	cache       *budget.Cache
	finder      *workload.Finder
	recorder    record.EventRecorder
	gates       featuregate.FeatureGate
	clock       clock.Clock

	// resyncPeriod is the longest a budget goes without a sync; 0 means only events sync it.
	resyncPeriod time.Duration

	budgets policylisters.PodUnavailableBudgetLister
	pods    corelisters.PodLister
	// podIndexer is the pod informer's store, with podutil.PodControllerIndex and
	// sharedOwnerIndex, so that a targetRef budget's pods are found by owner.
	podIndexer   cache.Indexer
	cachesSynced []cache.InformerSynced

	// noPodsMu guards noPods, which holds, by key, the UID of each budget a NoPods event
	// has been recorded for since it last covered pods.
	noPodsMu sync.Mutex
	noPods   map[string]types.UID

	queue workqueue.TypedRateLimitingInterface[string]
	// syncHandler is syncBudget; tests replace it to watch the worker loop.
	syncHandler queue.SyncFunc[string]

	// chains holds the controller chains the handlers could not read from the informer
	// caches; syncChain reads them live and queues the budgets they lead to.
	chains workqueue.TypedRateLimitingInterface[chainLookup]
}

// NewController builds the PodUnavailableBudget controller on the given informers, all of
// budgets and Advanced DaemonSets in v1beta1. daemonSets is optional: nil when the API
// server does not serve apps.kruise.io/v1beta1 DaemonSets, which are then neither watched
// nor waited for.
// finder resolves workloads (built with the owner-chain and DaemonSet-replicas gates);
// budgetCache is the process-wide write-through budget cache, shared with the pod webhook;
// client patches pods, bosunClient writes budget status (in v1beta1). Events are recorded
// through recorder, whose source should be ControllerName. Of the options it reads the clock
// (disruption expiry), the feature gate (PodUnavailableBudgetOwnerChain, to know which
// pods need their controller chain looked up), the resync period (0: none) and the queue
// wrapper (of the budget queue).
func NewController(ctx context.Context,
	budgets policyinformers.PodUnavailableBudgetInformer, pods coreinformers.PodInformer,
	deployments appsinformers.DeploymentInformer, replicaSets appsinformers.ReplicaSetInformer,
	statefulSets appsinformers.StatefulSetInformer,
	daemonSets kruiseappsinformers.DaemonSetInformer, finder *workload.Finder,
	client kubernetes.Interface, bosunClient bosunclientset.Interface, budgetCache *budget.Cache,
	recorder record.EventRecorder, opts ...options.Option) (*Controller, error) {
	settings := options.Apply(opts)
	c := &Controller{
		client:       client,
		bosunClient:  bosunClient,
		cache:        budgetCache,
		finder:       finder,
		recorder:     recorder,
		gates:        settings.FeatureGate,
		clock:        settings.Clock,
		resyncPeriod: settings.ResyncPeriod,
		budgets:      budgets.Lister(),
		pods:         pods.Lister(),
		podIndexer:   pods.Informer().GetIndexer(),
		cachesSynced: []cache.InformerSynced{
			budgets.Informer().HasSynced, pods.Informer().HasSynced,
			deployments.Informer().HasSynced, replicaSets.Informer().HasSynced, statefulSets.Informer().HasSynced,
		},
		noPods: map[string]types.UID{},
		queue:  settings.WrapQueue(queue.New[string](queue.NamePodUnavailableBudget)),
		chains: queue.New[chainLookup](queue.NamePodUnavailableBudgetChains),
	}
	c.syncHandler = c.syncBudget
	if err := addPodIndexes(pods.Informer()); err != nil {
		return nil, err
	}

	type registration struct {
		informer cache.SharedIndexInformer
		kind     string
		handlers informers.Handlers
	}
	workloadHandlers := informers.Handlers{Add: c.addWorkload, Update: c.updateWorkload, Delete: c.deleteWorkload}
	registrations := []registration{
		{budgets.Informer(), "PodUnavailableBudget", informers.Handlers{Add: c.addBudget, Update: c.updateBudget, Delete: c.deleteBudget}},
		// addPod needs to know whether a pod comes from the informer's initial list.
		{pods.Informer(), "pod", informers.Handlers{AddDetailed: c.addPod, Update: c.updatePod, Delete: c.deletePod}},
		{deployments.Informer(), "Deployment", workloadHandlers},
		{replicaSets.Informer(), "ReplicaSet", informers.Handlers{Update: c.updateReplicaSet, Delete: c.deleteReplicaSet}},
		{statefulSets.Informer(), "StatefulSet", workloadHandlers},
	}
	if daemonSets != nil {
		c.cachesSynced = append(c.cachesSynced, daemonSets.Informer().HasSynced)
		registrations = append(registrations, registration{daemonSets.Informer(), "DaemonSet", workloadHandlers})
	}
	for _, r := range registrations {
		if err := informers.AddHandlers(ctx, r.informer, r.kind, r.handlers); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run waits for the caches to sync, then processes budgets, and beside them the controller
// chains the handlers left to look up, with workers workers each until ctx ends. It returns
// after both queues are shut down and every worker has stopped.
func (c *Controller) Run(ctx context.Context, workers int) {
	var chainWorkers sync.WaitGroup
	chainWorkers.Go(func() {
		queue.RunController(ctx, ControllerName+" (controller chains)", c.chains, workers, c.cachesSynced, c.syncChain)
	})
	queue.RunController(ctx, ControllerName, c.queue, workers, c.cachesSynced, c.syncHandler)
	chainWorkers.Wait()
}

// enqueue adds the key of the budget namespace/name to the queue once delay has passed; at
// once when it is 0.
func (c *Controller) enqueue(namespace, name string, delay time.Duration) {
	key := queue.KeyForRef(namespace, name)
	if delay <= 0 {
		c.queue.Add(key)
		return
	}
	c.queue.AddAfter(key, delay)
}

func (c *Controller) addBudget(ctx context.Context, obj any) {
	pub, ok := obj.(*policyv1beta1.PodUnavailableBudget)
	if !ok {
		return
	}
	klog.FromContext(ctx).V(4).Info("PodUnavailableBudget added", "podUnavailableBudget", klog.KObj(pub))
	c.enqueue(pub.Namespace, pub.Name, 0)
}

// updateBudget queues the budget on every update, status-only ones included: a status
// written by the webhook may carry disruption entries whose expiry must be scheduled.
func (c *Controller) updateBudget(ctx context.Context, old, cur any) {
	oldPub, ok1 := old.(*policyv1beta1.PodUnavailableBudget)
	curPub, ok2 := cur.(*policyv1beta1.PodUnavailableBudget)
	if !ok1 || !ok2 {
		return
	}
	if oldPub.UID != curPub.UID {
		// A delete and a re-create under one name folded into one update: the write-through
		// copy of the old budget must not outlive it.
		c.cache.Forget(oldPub.Namespace, oldPub.Name)
	}
	klog.FromContext(ctx).V(5).Info("PodUnavailableBudget updated", "podUnavailableBudget", klog.KObj(curPub))
	c.enqueue(curPub.Namespace, curPub.Name, 0)
}

// deleteBudget queues the deleted budget's key, so that the sync sees it gone and drops it
// from the cache. obj may be a tombstone.
func (c *Controller) deleteBudget(ctx context.Context, obj any) {
	pub, ok := queue.FromTombstone[*policyv1beta1.PodUnavailableBudget](obj)
	if !ok {
		utilruntime.HandleErrorWithContext(ctx, nil, "PodUnavailableBudget event carries an unexpected object", "type", fmt.Sprintf("%T", obj))
		return
	}
	klog.FromContext(ctx).V(4).Info("PodUnavailableBudget deleted", "podUnavailableBudget", klog.KObj(pub))
	c.enqueue(pub.Namespace, pub.Name, 0)
}

// addPod queues the budget the new pod is tagged with and, for a pod created while the
// controller runs, every budget that covers it: the pod may be the first one of a budget
// that covered none, or one the mutating webhook did not tag (it fails open), and either
// way the budget's counts change now. Pods the informer lists at start-up skip the
// matching: their budgets are all queued by their own add events then, and looking up the
// controller chain of every pod would only delay those syncs.
func (c *Controller) addPod(ctx context.Context, obj any, isInInitialList bool) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	keys := map[string]bool{}
	if name := pubutil.RelatedBudget(pod); name != "" && c.budgetExists(pod.Namespace, name) {
		keys[name] = true
	}
	if !isInInitialList && pubutil.IsActive(pod) {
		for _, pub := range c.budgetsCovering(ctx, pod) {
			keys[pub.Name] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(keys)) {
		klog.FromContext(ctx).V(4).Info("Pod created", "pod", klog.KObj(pod), "podUnavailableBudget", klog.KRef(pod.Namespace, name))
		c.enqueue(pod.Namespace, name, 0)
	}
}

// updatePod queues the budgets a pod change concerns. A pod whose deletion just started
// queues its budget PodTerminatingDelay later; one already terminating queues nothing.
// Otherwise a change of availability or of the related-pub annotation queues the tagged
// budget(s) at once, and a change of labels or owner references queues every budget
// covering the pod before or after, since the covered set changed.
func (c *Controller) updatePod(ctx context.Context, old, cur any) {
	oldPod, ok1 := old.(*corev1.Pod)
	curPod, ok2 := cur.(*corev1.Pod)
	if !ok1 || !ok2 || oldPod.ResourceVersion == curPod.ResourceVersion {
		// Equal resource versions: a periodic resync, nothing changed.
		return
	}
	logger := klog.FromContext(ctx)
	if curPod.DeletionTimestamp != nil {
		if oldPod.DeletionTimestamp != nil {
			return
		}
		if name := pubutil.RelatedBudget(curPod); name != "" && c.budgetExists(curPod.Namespace, name) {
			logger.V(4).Info("Pod is being deleted; syncing its budget shortly", "pod", klog.KObj(curPod),
				"podUnavailableBudget", klog.KRef(curPod.Namespace, name), "after", PodTerminatingDelay)
			c.enqueue(curPod.Namespace, name, PodTerminatingDelay)
		}
		return
	}

	keys := map[string]string{}
	related := func(pod *corev1.Pod, why string) {
		if name := pubutil.RelatedBudget(pod); name != "" && c.budgetExists(pod.Namespace, name) {
			keys[name] = why
		}
	}
	if pubutil.IsAvailable(oldPod) != pubutil.IsAvailable(curPod) {
		related(curPod, "availability changed")
	}
	if pubutil.RelatedBudget(oldPod) != pubutil.RelatedBudget(curPod) {
		related(oldPod, "related budget changed")
		related(curPod, "related budget changed")
	}
	if !reflect.DeepEqual(oldPod.Labels, curPod.Labels) || !reflect.DeepEqual(oldPod.OwnerReferences, curPod.OwnerReferences) {
		for _, pod := range []*corev1.Pod{oldPod, curPod} {
			for _, pub := range c.budgetsCovering(ctx, pod) {
				keys[pub.Name] = "labels or owners changed"
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(keys)) {
		logger.V(4).Info("Pod changed", "pod", klog.KObj(curPod), "podUnavailableBudget", klog.KRef(curPod.Namespace, name), "change", keys[name])
		c.enqueue(curPod.Namespace, name, 0)
	}
}

// deletePod queues the budgets a pod still counted for when it was deleted: the one it is
// tagged with and every budget covering it. A pod removed at once (bound to no node, or
// deleted with no grace period) never shows a deletion timestamp, so no update announced
// its going, and until its budget is synced the budget counts it as available and holds
// the webhook's record of its deletion. A pod that was already terminating or finished
// counted for nothing; its budget was queued when its deletion started. obj may be a
// tombstone.
func (c *Controller) deletePod(ctx context.Context, obj any) {
	pod, ok := queue.FromTombstone[*corev1.Pod](obj)
	if !ok {
		utilruntime.HandleErrorWithContext(ctx, nil, "Pod event carries an unexpected object", "type", fmt.Sprintf("%T", obj))
		return
	}
	if !pubutil.IsActive(pod) {
		return
	}
	keys := map[string]bool{}
	if name := pubutil.RelatedBudget(pod); name != "" && c.budgetExists(pod.Namespace, name) {
		keys[name] = true
	}
	for _, pub := range c.budgetsCovering(ctx, pod) {
		keys[pub.Name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(keys)) {
		klog.FromContext(ctx).V(4).Info("Pod deleted", "pod", klog.KObj(pod), "podUnavailableBudget", klog.KRef(pod.Namespace, name))
		c.enqueue(pod.Namespace, name, 0)
	}
}

// budgetExists reports whether the informer knows the budget namespace/name.
func (c *Controller) budgetExists(namespace, name string) bool {
	_, err := c.budgets.PodUnavailableBudgets(namespace).Get(name)
	return err == nil
}

// budgetsCovering returns the budgets of pod's namespace whose selector matches the pod or
// whose targetRef names one of its owners or, through the controller chain (see
// followsChain), a workload above its controller.
func (c *Controller) budgetsCovering(ctx context.Context, pod *corev1.Pod) []*policyv1beta1.PodUnavailableBudget {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref != nil && !c.followsChain(ref) {
		ref = nil
	}
	return c.budgetsMatching(ctx, pod.Namespace, pod.Labels, pod.OwnerReferences, ref)
}

// budgetsMatching returns the budgets of namespace whose selector matches podLabels, or
// whose targetRef names one of owners or a workload of the controller chain starting at
// chainFrom (nil: none). It reads only the informer caches, as the handlers that call it
// must: a chain that leaves them (a workload of a kind bosun does not cache, with feature
// PodUnavailableBudgetOwnerChain) is matched up to the first such workload, whose
// reference counts as read, and the rest of it is left to syncChain, which looks it up live
// and queues the budgets it leads to. A chain that cannot be read is logged and leaves the
// budgets it would have decided unmatched: the periodic resync catches up with them.
func (c *Controller) budgetsMatching(ctx context.Context, namespace string, podLabels map[string]string,
	owners []metav1.OwnerReference, chainFrom *metav1.OwnerReference) []*policyv1beta1.PodUnavailableBudget {
	all, err := c.budgets.PodUnavailableBudgets(namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var matching, undecided []*policyv1beta1.PodUnavailableBudget
	for _, pub := range all {
		switch {
		case pub.Spec.TargetReference == nil:
			if selects(pub, podLabels) {
				matching = append(matching, pub)
			}
		case slices.ContainsFunc(owners, func(ref metav1.OwnerReference) bool {
			return targets(pub, groupKindOf(ref.APIVersion, ref.Kind), ref.Name)
		}):
			matching = append(matching, pub)
		default:
			undecided = append(undecided, pub)
		}
	}
	if len(undecided) == 0 || chainFrom == nil {
		return matching
	}
	chain, beyond, err := c.finder.CachedChain(ctx, namespace, chainFrom)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Cannot read a controller chain; the budgets it decides wait for their resync",
			"kind", chainFrom.Kind, "controller", klog.KRef(namespace, chainFrom.Name), "err", err)
		return matching
	}
	stillUndecided := false
	for _, pub := range undecided {
		switch {
		case slices.ContainsFunc(chain, func(w *workload.Workload) bool { return targets(pub, w.GroupKind(), w.Name) }):
			matching = append(matching, pub)
		case beyond != nil && targets(pub, groupKindOf(beyond.APIVersion, beyond.Kind), beyond.Name):
			matching = append(matching, pub)
		default:
			stillUndecided = true
		}
	}
	if beyond != nil && stillUndecided {
		c.enqueueChain(ctx, namespace, beyond)
	}
	return matching
}

// followsChain reports whether the workloads above ref (a pod's controller) can matter to
// a targetRef: always with feature PodUnavailableBudgetOwnerChain, otherwise only for a
// ReplicaSet, whose Deployment is the one controller OpenKruise looks through. Skipping the
// others saves a lookup that would find nothing above them.
func (c *Controller) followsChain(ref *metav1.OwnerReference) bool {
	return c.gates.Enabled(features.PodUnavailableBudgetOwnerChain) || groupKindOf(ref.APIVersion, ref.Kind) == replicaSetKind
}

// workloadChange is what the workload handlers read from a Deployment, StatefulSet or
// Advanced DaemonSet.
type workloadChange struct {
	kind schema.GroupKind
	obj  metav1.Object
	// templateLabels are the labels of the workload's pod template, which selector budgets
	// are matched against.
	templateLabels map[string]string
	// size is what the workload's expected pod count is read from: spec.replicas, or an
	// Advanced DaemonSet's status.desiredNumberScheduled.
	size int32
}

// workloadChangeOf reads obj, which may be a tombstone; ok is false for other types.
func workloadChangeOf(obj any) (workloadChange, bool) {
	if tombstone, isTombstone := obj.(cache.DeletedFinalStateUnknown); isTombstone {
		obj = tombstone.Obj
	}
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return workloadChange{deploymentKind, w, w.Spec.Template.Labels, ptr.Deref(w.Spec.Replicas, 1)}, true
	case *appsv1.StatefulSet:
		return workloadChange{statefulSetKind, w, w.Spec.Template.Labels, ptr.Deref(w.Spec.Replicas, 1)}, true
	case *kruiseappsv1beta1.DaemonSet:
		return workloadChange{daemonSetKind, w, w.Spec.Template.Labels, w.Status.DesiredNumberScheduled}, true
	}
	return workloadChange{}, false
}

// addWorkload queues the budgets of a new workload: a targetRef budget created before its
// workload has had nothing to count.
func (c *Controller) addWorkload(ctx context.Context, obj any) {
	if w, ok := workloadChangeOf(obj); ok {
		c.enqueueForWorkload(ctx, w, "created")
	}
}

// updateWorkload queues the budgets of a workload whose expected pod count changed (a
// scale-down must raise unavailableAllowed before the workload's controller deletes pods,
// or the webhook would refuse those deletions), whose deletion started, or which was
// re-created under its name.
func (c *Controller) updateWorkload(ctx context.Context, old, cur any) {
	before, ok1 := workloadChangeOf(old)
	after, ok2 := workloadChangeOf(cur)
	if !ok1 || !ok2 {
		return
	}
	switch {
	case before.obj.GetUID() != after.obj.GetUID():
		c.enqueueForWorkload(ctx, after, "re-created")
	case before.size != after.size:
		c.enqueueForWorkload(ctx, after, "resized")
	case (before.obj.GetDeletionTimestamp() == nil) != (after.obj.GetDeletionTimestamp() == nil):
		c.enqueueForWorkload(ctx, after, "being deleted")
	}
}

// deleteWorkload queues the budgets of a deleted workload. obj may be a tombstone.
func (c *Controller) deleteWorkload(ctx context.Context, obj any) {
	w, ok := workloadChangeOf(obj)
	if !ok {
		utilruntime.HandleErrorWithContext(ctx, nil, "Workload event carries an unexpected object", "type", fmt.Sprintf("%T", obj))
		return
	}
	c.enqueueForWorkload(ctx, w, "deleted")
}

// updateReplicaSet queues the budgets of a ReplicaSet, before and after, whose change moves
// the count or the coverage of its pods: its re-creation, a change of spec.replicas (the
// count of a ReplicaSet without a Deployment), the start of its deletion (its pods leave a
// Deployment's budget), and a change of its controller (orphaned or adopted: the garbage
// collector drops the reference to a deleted Deployment when it keeps the ReplicaSet).
func (c *Controller) updateReplicaSet(ctx context.Context, old, cur any) {
	oldRS, ok1 := old.(*appsv1.ReplicaSet)
	curRS, ok2 := cur.(*appsv1.ReplicaSet)
	if !ok1 || !ok2 || oldRS.ResourceVersion == curRS.ResourceVersion {
		return
	}
	var what string
	switch {
	case oldRS.UID != curRS.UID:
		what = "re-created"
	case ptr.Deref(oldRS.Spec.Replicas, 1) != ptr.Deref(curRS.Spec.Replicas, 1):
		what = "resized"
	case (oldRS.DeletionTimestamp == nil) != (curRS.DeletionTimestamp == nil):
		what = "being deleted"
	case !reflect.DeepEqual(metav1.GetControllerOfNoCopy(oldRS), metav1.GetControllerOfNoCopy(curRS)):
		what = "controller changed"
	default:
		return
	}
	c.enqueueForReplicaSets(ctx, what, oldRS, curRS)
}

// deleteReplicaSet queues the budgets of a deleted ReplicaSet: its pods no longer count
// towards anything, and until their budgets are synced the webhook keeps refusing the
// garbage collector's deletions of them. obj may be a tombstone.
func (c *Controller) deleteReplicaSet(ctx context.Context, obj any) {
	rs, ok := queue.FromTombstone[*appsv1.ReplicaSet](obj)
	if !ok {
		utilruntime.HandleErrorWithContext(ctx, nil, "ReplicaSet event carries an unexpected object", "type", fmt.Sprintf("%T", obj))
		return
	}
	c.enqueueForReplicaSets(ctx, "deleted", rs)
}

// enqueueForReplicaSets queues, once each, the budgets that may cover the pods of any of
// versions (of one ReplicaSet): those whose selector matches its pod template, and those
// whose targetRef names the ReplicaSet, one of its owners or, with feature
// PodUnavailableBudgetOwnerChain, a workload further up its controller chain.
func (c *Controller) enqueueForReplicaSets(ctx context.Context, what string, versions ...*appsv1.ReplicaSet) {
	keys := map[string]bool{}
	for _, rs := range versions {
		self := metav1.OwnerReference{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: replicaSetKind.Kind, Name: rs.Name, UID: rs.UID}
		owners := append([]metav1.OwnerReference{self}, rs.OwnerReferences...)
		// Without the gate the chain above a ReplicaSet ends at its Deployment, which is
		// among its owners already.
		var chainFrom *metav1.OwnerReference
		if c.gates.Enabled(features.PodUnavailableBudgetOwnerChain) {
			chainFrom = metav1.GetControllerOfNoCopy(rs)
		}
		for _, pub := range c.budgetsMatching(ctx, rs.Namespace, rs.Spec.Template.Labels, owners, chainFrom) {
			keys[pub.Name] = true
		}
	}
	rs := versions[len(versions)-1]
	for _, name := range slices.Sorted(maps.Keys(keys)) {
		klog.FromContext(ctx).V(4).Info("ReplicaSet "+what, "replicaSet", klog.KObj(rs),
			"replicas", ptr.Deref(rs.Spec.Replicas, 1), "podUnavailableBudget", klog.KRef(rs.Namespace, name))
		c.enqueue(rs.Namespace, name, 0)
	}
}

// enqueueForWorkload queues the budgets of w's namespace that target w or whose selector
// matches w's pod template.
func (c *Controller) enqueueForWorkload(ctx context.Context, w workloadChange, what string) {
	all, err := c.budgets.PodUnavailableBudgets(w.obj.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, pub := range all {
		if targets(pub, w.kind, w.obj.GetName()) || (pub.Spec.TargetReference == nil && selects(pub, w.templateLabels)) {
			klog.FromContext(ctx).V(4).Info("Workload "+what, "kind", w.kind, "workload", klog.KObj(w.obj),
				"size", w.size, "podUnavailableBudget", klog.KObj(pub))
			c.enqueue(pub.Namespace, pub.Name, 0)
		}
	}
}

// targets reports whether pub's targetRef names the workload of kind and name. The API
// version is ignored: any version of a kind names the same object.
func targets(pub *policyv1beta1.PodUnavailableBudget, kind schema.GroupKind, name string) bool {
	ref := pub.Spec.TargetReference
	return ref != nil && ref.Name == name && groupKindOf(ref.APIVersion, ref.Kind) == kind
}

// selects reports whether pub's selector matches set. A selector that does not parse or is
// empty matches nothing: the budget webhook refuses both, and a budget over every pod of a
// namespace is never what was meant.
func selects(pub *policyv1beta1.PodUnavailableBudget, set map[string]string) bool {
	selector, err := budgetSelector(pub)
	return err == nil && selector.Matches(labels.Set(set))
}

// budgetSelector returns pub's selector; an error when it has none, it does not parse, or
// it is empty.
func budgetSelector(pub *policyv1beta1.PodUnavailableBudget) (labels.Selector, error) {
	if pub.Spec.Selector == nil {
		return nil, fmt.Errorf("the budget has neither selector nor targetRef")
	}
	selector, err := metav1.LabelSelectorAsSelector(pub.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("parsing the budget's selector: %w", err)
	}
	if selector.Empty() {
		return nil, fmt.Errorf("the budget's selector is empty, which would select every pod of the namespace")
	}
	return selector, nil
}

// groupKindOf returns the group and kind apiVersion and kind name. An apiVersion that does
// not parse (which the API server and the budget webhook refuse) yields the empty kind,
// which matches no workload.
func groupKindOf(apiVersion, kind string) schema.GroupKind {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupKind{}
	}
	return schema.GroupKind{Group: gv.Group, Kind: kind}
}

// eventObject returns pub with its type set, so that events name it even where the
// recorder's scheme does not know policy.kruise.io.
func eventObject(pub *policyv1beta1.PodUnavailableBudget) *policyv1beta1.PodUnavailableBudget {
	if pub.Kind != "" {
		return pub
	}
	typed := *pub
	typed.APIVersion, typed.Kind = budgetKind.GroupVersion().String(), budgetKind.Kind
	return &typed
}
