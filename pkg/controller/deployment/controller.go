package deployment

import (
	"context"
	"fmt"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/controller/refmanager"
	"github.com/bosun-dev/bosun/pkg/features"
)

// maxRetries is how many times a Deployment is retried with backoff before it is dropped from
// the queue; it comes back with the next event or resync. With the default rate limiter the
// 15 retries span about 160 s (5 ms × 2^15).
const maxRetries = 15

// controllerKind is the kind of the objects this controller owns ReplicaSets for.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("Deployment")

// Controller rolls Deployments out through ReplicaSets.
type Controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	gates    featuregate.FeatureGate
	// clock stamps conditions and drives the progress-deadline arithmetic; tests replace it.
	clock clock.Clock

	dLister  appslisters.DeploymentLister
	rsLister appslisters.ReplicaSetLister
	// podIndexer carries podutil.PodControllerIndex, so a ReplicaSet's pods are one lookup.
	podIndexer cache.Indexer

	dListerSynced   cache.InformerSynced
	rsListerSynced  cache.InformerSynced
	podListerSynced cache.InformerSynced

	queue workqueue.TypedRateLimitingInterface[string]

	// syncHandler is syncDeployment; tests replace it to observe the worker loop.
	syncHandler func(ctx context.Context, key string) error
}

// NewController returns a Deployment controller fed by the given informers. It registers its
// event handlers and the pod index; the caller starts the informers and then calls Run.
func NewController(ctx context.Context, dInformer appsinformers.DeploymentInformer, rsInformer appsinformers.ReplicaSetInformer,
	podInformer coreinformers.PodInformer, client kubernetes.Interface, recorder record.EventRecorder, gates featuregate.FeatureGate) (*Controller, error) {
	logger := klog.FromContext(ctx)
	if gates == nil {
		gates = features.DefaultFeatureGate
	}
	c := &Controller{
		client:          client,
		recorder:        recorder,
		gates:           gates,
		clock:           clock.RealClock{},
		dLister:         dInformer.Lister(),
		rsLister:        rsInformer.Lister(),
		podIndexer:      podInformer.Informer().GetIndexer(),
		dListerSynced:   dInformer.Informer().HasSynced,
		rsListerSynced:  rsInformer.Informer().HasSynced,
		podListerSynced: podInformer.Informer().HasSynced,
		queue:           queue.New[string](queue.NameDeployment),
	}
	c.syncHandler = c.syncDeployment

	if err := podutil.AddPodControllerIndex(podInformer.Informer()); err != nil {
		return nil, fmt.Errorf("adding the %s index to the pod informer: %w", podutil.PodControllerIndex, err)
	}
	if _, err := dInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.addDeployment(logger, obj) },
		UpdateFunc: func(old, cur any) { c.updateDeployment(logger, old, cur) },
		DeleteFunc: func(obj any) { c.deleteDeployment(logger, obj) },
	}); err != nil {
		return nil, fmt.Errorf("adding the Deployment event handler: %w", err)
	}
	if _, err := rsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.addReplicaSet(logger, obj) },
		UpdateFunc: func(old, cur any) { c.updateReplicaSet(logger, old, cur) },
		DeleteFunc: func(obj any) { c.deleteReplicaSet(logger, obj) },
	}); err != nil {
		return nil, fmt.Errorf("adding the ReplicaSet event handler: %w", err)
	}
	// Pods matter only when they disappear: a Recreate rollout waits for the old pods to be
	// gone. Everything else about pods reaches us through ReplicaSet status updates.
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) { c.deletePod(logger, obj) },
	}); err != nil {
		return nil, fmt.Errorf("adding the pod event handler: %w", err)
	}
	return c, nil
}

// Run waits for the informer caches and runs workers until ctx is cancelled.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx)
	logger.Info("Starting controller", "controller", "deployment", "workers", workers)
	defer logger.Info("Shutting down controller", "controller", "deployment")

	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.dListerSynced, c.rsListerSynced, c.podListerSynced) {
		c.queue.ShutDown()
		return
	}
	queue.RunWorkers(ctx, c.queue, workers, c.processKey)
}

// processKey syncs one key and decides how the worker loop treats the result: returning nil
// makes it Forget the key, returning the error makes it requeue the key with backoff.
func (c *Controller) processKey(ctx context.Context, key string) error {
	err := c.syncHandler(ctx, key)
	if err == nil {
		return nil
	}
	logger := klog.FromContext(ctx)
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		// Every further write into the namespace would fail the same way; its deletion
		// removes the Deployment soon enough.
		logger.V(4).Info("Namespace is terminating; not retrying", "deployment", key, "err", err)
		return nil
	}
	if c.queue.NumRequeues(key) < maxRetries {
		logger.V(2).Info("Error syncing deployment", "deployment", key, "err", err)
		return err
	}
	utilruntime.HandleErrorWithContext(ctx, err, "Dropping deployment out of the queue after too many retries", "deployment", key)
	return nil
}

// enqueue adds d's key to the queue.
func (c *Controller) enqueue(logger klog.Logger, d *appsv1.Deployment) {
	key, err := queue.KeyFor(d)
	if err != nil {
		utilruntime.HandleErrorWithLogger(logger, err, "Couldn't get key for deployment", "deployment", klog.KObj(d))
		return
	}
	c.queue.Add(key)
}

// enqueueRateLimited adds d's key with the key's current backoff.
func (c *Controller) enqueueRateLimited(logger klog.Logger, d *appsv1.Deployment) {
	key, err := queue.KeyFor(d)
	if err != nil {
		utilruntime.HandleErrorWithLogger(logger, err, "Couldn't get key for deployment", "deployment", klog.KObj(d))
		return
	}
	c.queue.AddRateLimited(key)
}

// enqueueAfter adds d's key once after has passed.
func (c *Controller) enqueueAfter(logger klog.Logger, d *appsv1.Deployment, after time.Duration) {
	key, err := queue.KeyFor(d)
	if err != nil {
		utilruntime.HandleErrorWithLogger(logger, err, "Couldn't get key for deployment", "deployment", klog.KObj(d))
		return
	}
	c.queue.AddAfter(key, after)
}

func (c *Controller) addDeployment(logger klog.Logger, obj any) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return
	}
	logger.V(4).Info("Adding deployment", "deployment", klog.KObj(d))
	c.enqueue(logger, d)
}

func (c *Controller) updateDeployment(logger klog.Logger, _, cur any) {
	curD, ok := cur.(*appsv1.Deployment)
	if !ok {
		return
	}
	logger.V(4).Info("Updating deployment", "deployment", klog.KObj(curD))
	c.enqueue(logger, curD)
}

func (c *Controller) deleteDeployment(logger klog.Logger, obj any) {
	d, ok := queue.FromTombstone[*appsv1.Deployment](obj)
	if !ok {
		utilruntime.HandleErrorWithLogger(logger, nil, "Deleted object is not a Deployment", "type", fmt.Sprintf("%T", obj))
		return
	}
	logger.V(4).Info("Deleting deployment", "deployment", klog.KObj(d))
	c.enqueue(logger, d)
}

// addReplicaSet wakes the Deployment that owns a new ReplicaSet, or every Deployment that
// could adopt it when it is an orphan.
func (c *Controller) addReplicaSet(logger klog.Logger, obj any) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	if rs.DeletionTimestamp != nil {
		// A restarted controller can see an RS that is already on its way out; nobody may
		// adopt it, so it only matters to its owner.
		c.deleteReplicaSet(logger, rs)
		return
	}
	if ref := metav1.GetControllerOf(rs); ref != nil {
		if d := c.resolveControllerRef(rs.Namespace, ref); d != nil {
			logger.V(4).Info("ReplicaSet added", "replicaSet", klog.KObj(rs), "deployment", klog.KObj(d))
			c.enqueue(logger, d)
		}
		return
	}
	ds := c.deploymentsForOrphan(logger, rs)
	if len(ds) == 0 {
		return
	}
	logger.V(4).Info("Orphan ReplicaSet added", "replicaSet", klog.KObj(rs))
	for _, d := range ds {
		c.enqueue(logger, d)
	}
}

// updateReplicaSet wakes the Deployments an RS change concerns: its former owner when the
// controller reference changed, its current owner, or the Deployments that may adopt it.
func (c *Controller) updateReplicaSet(logger klog.Logger, old, cur any) {
	oldRS, ok1 := old.(*appsv1.ReplicaSet)
	curRS, ok2 := cur.(*appsv1.ReplicaSet)
	if !ok1 || !ok2 {
		return
	}
	if curRS.ResourceVersion == oldRS.ResourceVersion {
		// A periodic resync sends every object again; nothing changed.
		return
	}
	curRef := metav1.GetControllerOf(curRS)
	oldRef := metav1.GetControllerOf(oldRS)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		// The former owner lost an RS and must notice.
		if d := c.resolveControllerRef(oldRS.Namespace, oldRef); d != nil {
			c.enqueue(logger, d)
		}
	}
	if curRef != nil {
		if d := c.resolveControllerRef(curRS.Namespace, curRef); d != nil {
			logger.V(4).Info("ReplicaSet updated", "replicaSet", klog.KObj(curRS), "deployment", klog.KObj(d))
			c.enqueue(logger, d)
		}
		return
	}
	// An orphan: only a change of labels or of ownership can make it adoptable.
	if refChanged || !reflect.DeepEqual(curRS.Labels, oldRS.Labels) {
		for _, d := range c.deploymentsForOrphan(logger, curRS) {
			c.enqueue(logger, d)
		}
	}
}

// deleteReplicaSet wakes the owner of a deleted RS. Orphans are ignored: a Deployment only
// cares about RSes it owns, and adoption of a deleted RS is impossible.
func (c *Controller) deleteReplicaSet(logger klog.Logger, obj any) {
	rs, ok := queue.FromTombstone[*appsv1.ReplicaSet](obj)
	if !ok {
		utilruntime.HandleErrorWithLogger(logger, nil, "Deleted object is not a ReplicaSet", "type", fmt.Sprintf("%T", obj))
		return
	}
	ref := metav1.GetControllerOf(rs)
	if ref == nil {
		return
	}
	if d := c.resolveControllerRef(rs.Namespace, ref); d != nil {
		logger.V(4).Info("ReplicaSet deleted", "replicaSet", klog.KObj(rs), "deployment", klog.KObj(d))
		c.enqueue(logger, d)
	}
}

// deletePod wakes a Recreate Deployment once the last pod of its ReplicaSets is gone, so that
// the new ReplicaSet is created without waiting for the ReplicaSet status to catch up.
func (c *Controller) deletePod(logger klog.Logger, obj any) {
	pod, ok := queue.FromTombstone[*corev1.Pod](obj)
	if !ok {
		utilruntime.HandleErrorWithLogger(logger, nil, "Deleted object is not a Pod", "type", fmt.Sprintf("%T", obj))
		return
	}
	d := c.deploymentForPod(pod)
	if d == nil || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		return
	}
	remaining, err := c.countPodsOfOwnedReplicaSets(d)
	if err != nil {
		utilruntime.HandleErrorWithLogger(logger, err, "Couldn't count the pods of deployment", "deployment", klog.KObj(d))
		return
	}
	if remaining == 0 {
		logger.V(4).Info("Last pod of Recreate deployment deleted", "pod", klog.KObj(pod), "deployment", klog.KObj(d))
		c.enqueue(logger, d)
	}
}

// resolveControllerRef returns the Deployment ref points to, or nil when ref is not a
// Deployment reference or points to a Deployment that no longer exists.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1.Deployment {
	d, _ := refmanager.ResolveControllerRef(ref, controllerKind.Kind, c.dLister.Deployments(namespace).Get)
	return d
}

// deploymentsForOrphan returns the Deployments of rs's namespace whose non-empty selector
// matches rs's labels: the candidates for adopting it.
func (c *Controller) deploymentsForOrphan(logger klog.Logger, rs *appsv1.ReplicaSet) []*appsv1.Deployment {
	all, err := c.dLister.Deployments(rs.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	matching := refmanager.SelectingOwners(all, rs.Labels, func(d *appsv1.Deployment) *metav1.LabelSelector { return d.Spec.Selector })
	if len(matching) > 1 {
		// Overlapping selectors are a user error; the first to claim the RS wins.
		logger.Info("User error: more than one deployment selects replica set",
			"replicaSet", klog.KObj(rs), "labels", rs.Labels, "deployment", klog.KObj(matching[0]))
	}
	return matching
}

// deploymentForPod follows pod → controlling ReplicaSet → controlling Deployment through the
// listers, checking UIDs at each step.
func (c *Controller) deploymentForPod(pod *corev1.Pod) *appsv1.Deployment {
	rs, ok := refmanager.ResolveControllerRef(metav1.GetControllerOf(pod), "ReplicaSet", c.rsLister.ReplicaSets(pod.Namespace).Get)
	if !ok {
		return nil
	}
	return c.resolveControllerRef(rs.Namespace, metav1.GetControllerOf(rs))
}

// countPodsOfOwnedReplicaSets counts the pods, in any phase, of the ReplicaSets d selects and
// controls.
func (c *Controller) countPodsOfOwnedReplicaSets(d *appsv1.Deployment) (int, error) {
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return 0, fmt.Errorf("parsing the selector of deployment %s: %w", klog.KObj(d), err)
	}
	rsList, err := c.rsLister.ReplicaSets(d.Namespace).List(selector)
	if err != nil {
		return 0, fmt.Errorf("listing replica sets of deployment %s: %w", klog.KObj(d), err)
	}
	count := 0
	for _, rs := range rsList {
		if !metav1.IsControlledBy(rs, d) {
			continue
		}
		pods, err := podutil.PodsForOwner(c.podIndexer, rs, "ReplicaSet", false)
		if err != nil {
			return 0, fmt.Errorf("listing pods of replica set %s: %w", klog.KObj(rs), err)
		}
		count += len(pods)
	}
	return count, nil
}
