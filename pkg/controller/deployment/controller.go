package deployment

import (
	"context"
	"fmt"

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

	"github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/controller/refmanager"
)

const (
	// ControllerName is the controller's canonical name and the source component of the
	// events it records.
	ControllerName = "deployment-controller"

	// maxRetries is how many failed syncs in a row a Deployment gets before it leaves the
	// queue until its next event or resync. With the queue's default backoff (5 ms doubling)
	// the last retry comes about 160 s after the first failure.
	maxRetries = 15
)

// controllerKind is the kind of the objects this controller owns ReplicaSets for.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("Deployment")

// Controller rolls Deployments out through ReplicaSets.
type Controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	gates    featuregate.FeatureGate
	clock    clock.Clock

	deployments appslisters.DeploymentLister
	replicaSets appslisters.ReplicaSetLister
	// podIndexer carries podutil.PodControllerIndex, so a ReplicaSet's pods are one lookup.
	podIndexer   cache.Indexer
	cachesSynced []cache.InformerSynced

	queue workqueue.TypedRateLimitingInterface[string]
	// syncHandler is syncDeployment; tests replace it to watch the worker loop.
	syncHandler queue.SyncFunc[string]
}

// NewController builds a Deployment controller on the given informers. It adds
// podutil.PodControllerIndex to the pod informer, so it must be called before the informers
// start. Events are recorded through recorder, whose source should be ControllerName. Of
// the options it reads the clock (condition times, progress deadlines), the feature gate
// (DeploymentReplicaSetTerminatingReplicas) and the queue wrapper.
func NewController(ctx context.Context, dInformer appsinformers.DeploymentInformer, rsInformer appsinformers.ReplicaSetInformer,
	podInformer coreinformers.PodInformer, client kubernetes.Interface, recorder record.EventRecorder, opts ...options.Option) (*Controller, error) {
	settings := options.Apply(opts)
	c := &Controller{
		client:      client,
		recorder:    recorder,
		gates:       settings.FeatureGate,
		clock:       settings.Clock,
		deployments: dInformer.Lister(),
		replicaSets: rsInformer.Lister(),
		podIndexer:  podInformer.Informer().GetIndexer(),
		cachesSynced: []cache.InformerSynced{
			dInformer.Informer().HasSynced, rsInformer.Informer().HasSynced, podInformer.Informer().HasSynced,
		},
		queue: settings.WrapQueue(queue.New[string](queue.NameDeployment)),
	}
	c.syncHandler = c.syncDeployment

	if err := podutil.AddPodControllerIndex(podInformer.Informer()); err != nil {
		return nil, err
	}
	if err := informers.AddHandlers(ctx, dInformer.Informer(), "Deployment", informers.Handlers{
		Add: c.addDeployment, Update: c.updateDeployment, Delete: c.deleteDeployment,
	}); err != nil {
		return nil, err
	}
	if err := informers.AddHandlers(ctx, rsInformer.Informer(), "ReplicaSet", informers.Handlers{
		Add: c.addReplicaSet, Update: c.updateReplicaSet, Delete: c.deleteReplicaSet,
	}); err != nil {
		return nil, err
	}
	// Everything else about pods reaches this controller through ReplicaSet status; only a
	// pod's disappearance matters, because a Recreate rollout waits for the last old one.
	if err := informers.AddHandlers(ctx, podInformer.Informer(), "pod", informers.Handlers{Delete: c.deletePod}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run waits for the caches to sync, then processes Deployments with workers workers until
// ctx ends. It returns after the queue is shut down and every worker has stopped.
func (c *Controller) Run(ctx context.Context, workers int) {
	queue.RunController(ctx, ControllerName, c.queue, workers, c.cachesSynced, c.syncOrGiveUp)
}

// syncOrGiveUp runs syncHandler and tells the worker loop whether to retry: a returned
// error is retried with backoff (and logged once, by the loop), nil drops the key. A
// Deployment is given up on after maxRetries failures in a row, and at once when its
// namespace is being deleted: every later write there fails the same way, and the
// namespace's deletion takes the Deployment with it.
func (c *Controller) syncOrGiveUp(ctx context.Context, key string) error {
	err := c.syncHandler(ctx, key)
	switch {
	case err == nil:
		return nil
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		klog.FromContext(ctx).V(4).Info("Not retrying Deployment: its namespace is terminating", "key", key, "err", err)
		return nil
	case c.queue.NumRequeues(key) >= maxRetries:
		utilruntime.HandleErrorWithContext(ctx, err, "Giving up on Deployment until its next change", "key", key, "failures", maxRetries)
		return nil
	}
	return err
}

// enqueue adds d's key to the queue.
func (c *Controller) enqueue(ctx context.Context, d *appsv1.Deployment) {
	key, err := queue.KeyFor(d)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Cannot queue Deployment", "deployment", klog.KObj(d))
		return
	}
	c.queue.Add(key)
}

func (c *Controller) addDeployment(ctx context.Context, obj any) {
	c.deploymentChanged(ctx, "added", obj)
}

func (c *Controller) updateDeployment(ctx context.Context, _, cur any) {
	c.deploymentChanged(ctx, "updated", cur)
}

func (c *Controller) deleteDeployment(ctx context.Context, obj any) {
	c.deploymentChanged(ctx, "deleted", obj)
}

// deploymentChanged queues a Deployment on any change of its own: every sync starts from
// the cache, so what changed does not matter. obj may be a deletion tombstone.
func (c *Controller) deploymentChanged(ctx context.Context, change string, obj any) {
	d, ok := queue.FromTombstone[*appsv1.Deployment](obj)
	if !ok {
		utilruntime.HandleErrorWithContext(ctx, nil, "Deployment event carries an unexpected object", "type", fmt.Sprintf("%T", obj))
		return
	}
	klog.FromContext(ctx).V(4).Info("Deployment "+change, "deployment", klog.KObj(d))
	c.enqueue(ctx, d)
}

// addReplicaSet wakes the owner of a new ReplicaSet or, for an orphan, every Deployment
// that may adopt it.
func (c *Controller) addReplicaSet(ctx context.Context, obj any) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		c.wakeController(ctx, rs, ref, "ReplicaSet added")
		return
	}
	// An orphan that is already being deleted (a restarted controller lists those) can
	// never be adopted.
	if rs.DeletionTimestamp == nil {
		c.wakeAdopters(ctx, rs)
	}
}

// updateReplicaSet wakes the Deployments an update concerns: a former owner that lost the
// ReplicaSet, the current owner, or the Deployments that may adopt it now.
func (c *Controller) updateReplicaSet(ctx context.Context, old, cur any) {
	oldRS, ok1 := old.(*appsv1.ReplicaSet)
	curRS, ok2 := cur.(*appsv1.ReplicaSet)
	if !ok1 || !ok2 || oldRS.ResourceVersion == curRS.ResourceVersion {
		// Equal resource versions: a periodic resync, nothing changed.
		return
	}
	change := refmanager.CompareControllerRefs(oldRS, curRS)
	if change.Former != nil {
		c.wakeController(ctx, oldRS, change.Former, "ReplicaSet released")
	}
	if change.Current != nil {
		c.wakeController(ctx, curRS, change.Current, "ReplicaSet updated")
	}
	if change.Adoptable {
		c.wakeAdopters(ctx, curRS)
	}
}

// deleteReplicaSet wakes the owner of a deleted ReplicaSet; nobody else can care, as a
// deleted orphan can no longer be adopted. obj may be a deletion tombstone.
func (c *Controller) deleteReplicaSet(ctx context.Context, obj any) {
	rs, ok := queue.FromTombstone[*appsv1.ReplicaSet](obj)
	if !ok {
		utilruntime.HandleErrorWithContext(ctx, nil, "ReplicaSet event carries an unexpected object", "type", fmt.Sprintf("%T", obj))
		return
	}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		c.wakeController(ctx, rs, ref, "ReplicaSet deleted")
	}
}

// deletePod wakes a Recreate Deployment when the last pod of its ReplicaSets is gone, so
// that it creates the new ReplicaSet without waiting for a ReplicaSet status update.
func (c *Controller) deletePod(ctx context.Context, obj any) {
	pod, ok := queue.FromTombstone[*corev1.Pod](obj)
	if !ok {
		utilruntime.HandleErrorWithContext(ctx, nil, "Pod event carries an unexpected object", "type", fmt.Sprintf("%T", obj))
		return
	}
	d := c.deploymentOfPod(pod)
	if d == nil || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		return
	}
	left, err := c.countPods(d)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Cannot tell whether a Recreate Deployment has pods left", "deployment", klog.KObj(d))
		return
	}
	if left == 0 {
		klog.FromContext(ctx).V(4).Info("Recreate Deployment has no pods left", "deployment", klog.KObj(d), "lastPod", klog.KObj(pod))
		c.enqueue(ctx, d)
	}
}

// wakeController queues the Deployment that ref (child's controller reference) names,
// when it still exists.
func (c *Controller) wakeController(ctx context.Context, child *appsv1.ReplicaSet, ref *metav1.OwnerReference, what string) {
	d := c.resolveControllerRef(child.Namespace, ref)
	if d == nil {
		return
	}
	klog.FromContext(ctx).V(4).Info(what, "replicaSet", klog.KObj(child), "deployment", klog.KObj(d))
	c.enqueue(ctx, d)
}

// wakeAdopters queues every Deployment whose selector matches the orphan rs.
func (c *Controller) wakeAdopters(ctx context.Context, rs *appsv1.ReplicaSet) {
	all, err := c.deployments.Deployments(rs.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, d := range refmanager.AdoptersOf(ctx, all, rs, func(d *appsv1.Deployment) *metav1.LabelSelector { return d.Spec.Selector }) {
		klog.FromContext(ctx).V(4).Info("Orphan ReplicaSet may be adopted", "replicaSet", klog.KObj(rs), "deployment", klog.KObj(d))
		c.enqueue(ctx, d)
	}
}

// resolveControllerRef returns the Deployment ref names, or nil when ref is not to a
// Deployment or names one that no longer exists.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1.Deployment {
	d, _ := refmanager.ResolveControllerRef(ref, controllerKind.Kind, c.deployments.Deployments(namespace).Get)
	return d
}

// deploymentOfPod follows pod → controlling ReplicaSet → controlling Deployment through the
// listers, checking UIDs at each step.
func (c *Controller) deploymentOfPod(pod *corev1.Pod) *appsv1.Deployment {
	rs, ok := refmanager.ResolveControllerRef(metav1.GetControllerOfNoCopy(pod), "ReplicaSet", c.replicaSets.ReplicaSets(pod.Namespace).Get)
	if !ok {
		return nil
	}
	return c.resolveControllerRef(rs.Namespace, metav1.GetControllerOfNoCopy(rs))
}

// countPods counts the pods, in any phase, of the ReplicaSets that d selects and controls.
func (c *Controller) countPods(d *appsv1.Deployment) (int, error) {
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return 0, fmt.Errorf("parsing the selector of Deployment %s: %w", klog.KObj(d), err)
	}
	rsList, err := c.replicaSets.ReplicaSets(d.Namespace).List(selector)
	if err != nil {
		return 0, fmt.Errorf("listing ReplicaSets of Deployment %s: %w", klog.KObj(d), err)
	}
	var owned []*appsv1.ReplicaSet
	for _, rs := range rsList {
		if metav1.IsControlledBy(rs, d) {
			owned = append(owned, rs)
		}
	}
	podsByRS, err := c.podsByReplicaSet(owned)
	if err != nil {
		return 0, err
	}
	count := 0
	for _, pods := range podsByRS {
		count += len(pods)
	}
	return count, nil
}
