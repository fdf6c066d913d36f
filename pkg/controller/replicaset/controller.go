package replicaset

import (
	"cmp"
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/bosun-dev/bosun/pkg/controller/expectations"
	"github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/podcontrol"
	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/controller/refmanager"
	"github.com/bosun-dev/bosun/pkg/features"
)

const (
	// ControllerName is the controller's canonical name and the source component of the
	// events it records.
	ControllerName = "replicaset-controller"

	// BurstReplicas is the default maximum number of pods created or deleted for one
	// ReplicaSet in one sync. A larger difference is worked off over several syncs, each
	// waiting for the informer to observe the previous one.
	BurstReplicas = 500

	// ControllerUIDIndex indexes ReplicaSets by the UID of their controller (usually a
	// Deployment), to find the siblings of a ReplicaSet when ranking pods for deletion.
	ControllerUIDIndex = "controllerUID"

	// statusUpdateRetries is how many times a failed status write is retried, each time
	// on a freshly read ReplicaSet.
	statusUpdateRetries = 1
)

// controllerKind is the kind of the objects this controller manages.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// Controller keeps ReplicaSets at their desired number of pods.
type Controller struct {
	client     kubernetes.Interface
	podControl podcontrol.Interface
	gates      featuregate.FeatureGate
	clock      clock.Clock

	// burstReplicas caps creates and deletes per sync.
	burstReplicas int

	// expectations records the creates and deletes a sync issued and the informer has not
	// shown yet; a ReplicaSet is not managed again until they have been observed.
	expectations *expectations.TrackedStore

	// writes is the read-your-writes guard (feature StaleControllerConsistencyReplicaSet);
	// nil when the gate is off.
	writes *writeTracker

	replicaSets  appslisters.ReplicaSetLister
	rsIndexer    cache.Indexer
	pods         corelisters.PodLister
	podIndexer   cache.Indexer
	cachesSynced []cache.InformerSynced

	queue workqueue.TypedRateLimitingInterface[string]
	// syncHandler is syncReplicaSet; tests replace it to watch the worker loop.
	syncHandler queue.SyncFunc[string]

	// podEvents decides which ReplicaSets a pod event concerns (see ownedPodHandlers).
	podEvents refmanager.PodHandlers[*appsv1.ReplicaSet]
}

// NewController builds a ReplicaSet controller on the given informers. It adds the
// ControllerUIDIndex to the ReplicaSet informer and podutil.PodControllerIndex to the pod
// informer, so it must be called before the informers start. Events are recorded through
// recorder, whose source should be ControllerName. Of the options it reads the clock
// (status times, availability, expectation expiry, ranking), the feature gate
// (PodDeletionCost, DeploymentReplicaSetTerminatingReplicas,
// StaleControllerConsistencyReplicaSet), the burst size (default BurstReplicas) and the
// queue and pod control wrappers.
func NewController(ctx context.Context, rsInformer appsinformers.ReplicaSetInformer, podInformer coreinformers.PodInformer,
	client kubernetes.Interface, recorder record.EventRecorder, opts ...options.Option) (*Controller, error) {
	settings := options.Apply(opts)
	c := &Controller{
		client:        client,
		gates:         settings.FeatureGate,
		clock:         settings.Clock,
		burstReplicas: cmp.Or(settings.BurstReplicas, BurstReplicas),
		replicaSets:   rsInformer.Lister(),
		rsIndexer:     rsInformer.Informer().GetIndexer(),
		pods:          podInformer.Lister(),
		podIndexer:    podInformer.Informer().GetIndexer(),
		cachesSynced:  []cache.InformerSynced{podInformer.Informer().HasSynced, rsInformer.Informer().HasSynced},
		queue:         settings.WrapQueue(queue.New[string](queue.NameReplicaSet)),
	}
	c.syncHandler = c.syncReplicaSet
	c.podEvents = c.ownedPodHandlers()
	c.expectations = expectations.NewTracked(expectations.NewWithClock(c.clock))

	control := &podcontrol.Real{Client: client, Recorder: recorder}
	if c.gates.Enabled(features.StaleControllerConsistencyReplicaSet) {
		c.writes = newWriteTracker(c.podIndexer.LastStoreSyncResourceVersion, c.rsIndexer.LastStoreSyncResourceVersion)
		control.OnWrite = c.writes.podWritten
	}
	c.podControl = settings.WrapPodControl(control)

	if err := addControllerUIDIndex(rsInformer.Informer()); err != nil {
		return nil, err
	}
	if err := podutil.AddPodControllerIndex(podInformer.Informer()); err != nil {
		return nil, err
	}
	if err := informers.AddHandlers(ctx, rsInformer.Informer(), "ReplicaSet", informers.Handlers{
		Add: c.addReplicaSet, Update: c.updateReplicaSet, Delete: c.deleteReplicaSet,
	}); err != nil {
		return nil, err
	}
	if err := informers.AddHandlers(ctx, podInformer.Informer(), "pod", informers.Handlers{
		Add: c.addPod, Update: c.updatePod, Delete: c.deletePod,
	}); err != nil {
		return nil, err
	}

	registerMetrics()
	return c, nil
}

// addControllerUIDIndex indexes ReplicaSets by their controller's UID. Other controllers
// sharing the informer may have added the same index already.
func addControllerUIDIndex(informer cache.SharedIndexInformer) error {
	err := informers.AddIndex(informer, ControllerUIDIndex, func(obj any) ([]string, error) {
		rs, ok := obj.(*appsv1.ReplicaSet)
		if !ok {
			return nil, nil
		}
		ref := metav1.GetControllerOfNoCopy(rs)
		if ref == nil {
			return nil, nil
		}
		return []string{string(ref.UID)}, nil
	})
	if err != nil {
		return fmt.Errorf("indexing ReplicaSets: %w", err)
	}
	return nil
}

// Run waits for the caches to sync, then processes ReplicaSets with workers workers until
// ctx ends. It returns after the queue is shut down and every worker has stopped. Events
// flow through the recorder given to NewController, whose broadcaster the caller runs.
func (c *Controller) Run(ctx context.Context, workers int) {
	queue.RunController(ctx, ControllerName, c.queue, workers, c.cachesSynced, c.syncHandler)
}

// enqueue adds rs's key to the queue.
func (c *Controller) enqueue(ctx context.Context, rs *appsv1.ReplicaSet) {
	c.enqueueAfter(ctx, rs, 0)
}

// enqueueAfter adds rs's key to the queue once delay has passed; at once when it is 0.
func (c *Controller) enqueueAfter(ctx context.Context, rs *appsv1.ReplicaSet, delay time.Duration) {
	key, err := queue.KeyFor(rs)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Cannot queue ReplicaSet", "replicaSet", klog.KObj(rs))
		return
	}
	if delay == 0 {
		c.queue.Add(key)
		return
	}
	c.queue.AddAfter(key, delay)
}

func (c *Controller) addReplicaSet(ctx context.Context, obj any) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	klog.FromContext(ctx).V(4).Info("ReplicaSet added", "replicaSet", klog.KObj(rs))
	c.enqueue(ctx, rs)
}

// updateReplicaSet queues the ReplicaSet on every update, status-only ones included:
// together with the periodic resync that retries creates that failed for reasons outside
// the controller, such as a quota.
func (c *Controller) updateReplicaSet(ctx context.Context, old, cur any) {
	oldRS, ok1 := old.(*appsv1.ReplicaSet)
	curRS, ok2 := cur.(*appsv1.ReplicaSet)
	if !ok1 || !ok2 {
		return
	}
	if oldRS.UID != curRS.UID {
		// The informer folded a delete and a re-create under one name into this update; the
		// old object's expectations and write record must not carry over to the new one.
		c.deleteReplicaSet(ctx, cache.DeletedFinalStateUnknown{Key: queue.KeyForRef(oldRS.Namespace, oldRS.Name), Obj: oldRS})
	}
	if before, after := oldRS.Spec.Replicas, curRS.Spec.Replicas; before != nil && after != nil && *before != *after {
		klog.FromContext(ctx).V(4).Info("ReplicaSet resized", "replicaSet", klog.KObj(curRS), "from", *before, "to", *after)
	}
	c.enqueue(ctx, curRS)
}

// deleteReplicaSet forgets what the controller remembered about a deleted ReplicaSet and
// queues its key once more, so that the sync sees it gone. obj may be a deletion tombstone.
func (c *Controller) deleteReplicaSet(ctx context.Context, obj any) {
	rs, ok := queue.FromTombstone[*appsv1.ReplicaSet](obj)
	if !ok {
		utilruntime.HandleErrorWithContext(ctx, nil, "ReplicaSet event carries an unexpected object", "type", fmt.Sprintf("%T", obj))
		return
	}
	key, err := queue.KeyFor(obj)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Cannot queue ReplicaSet", "replicaSet", klog.KObj(rs))
		return
	}
	klog.FromContext(ctx).V(4).Info("ReplicaSet deleted", "replicaSet", klog.KObj(rs))
	c.forget(ctx, key)
	c.queue.Add(key)
}

// forget drops the expectations and the write record of the ReplicaSet with key.
func (c *Controller) forget(ctx context.Context, key string) {
	c.expectations.Delete(ctx, key)
	c.writes.forget(key)
}

// addPod handles a pod the informer sees for the first time: one this controller created,
// whose creation is now observed, or an orphan a ReplicaSet may adopt.
func (c *Controller) addPod(ctx context.Context, obj any) { c.podEvents.Add(ctx, obj) }

// updatePod wakes the ReplicaSets a pod change concerns: the one it left, the one it
// belongs to, or, for an orphan whose labels or ownership changed, those that may adopt it.
// A graceful delete shows first as an update: counting it now lets the replacement be
// created at once rather than after the grace period.
func (c *Controller) updatePod(ctx context.Context, old, cur any) { c.podEvents.Update(ctx, old, cur) }

// deletePod handles a deleted pod; obj may be a deletion tombstone.
func (c *Controller) deletePod(ctx context.Context, obj any) { c.podEvents.Delete(ctx, obj) }

// ownedPodHandlers says how pod events concern ReplicaSets: through a pod's controller
// reference, or, for an orphan, through the selectors that may adopt it. Creations and
// deletions are recorded in the expectations of the ReplicaSet controlling the pod; the
// deletion of an orphan concerns no ReplicaSet.
func (c *Controller) ownedPodHandlers() refmanager.PodHandlers[*appsv1.ReplicaSet] {
	return refmanager.PodHandlers[*appsv1.ReplicaSet]{
		Kind:         controllerKind.Kind,
		ControllerOf: c.resolveControllerRef,
		Selecting:    c.adoptersOf,
		Enqueue:      func(key string) { c.queue.Add(key) },
		Created: func(ctx context.Context, key string, _ *appsv1.ReplicaSet, _ *corev1.Pod) {
			c.expectations.CreationObserved(ctx, key)
		},
		MinReadySeconds: func(rs *appsv1.ReplicaSet) int32 { return rs.Spec.MinReadySeconds },
		EnqueueAfter:    c.queue.AddAfter,
		Gone: func(ctx context.Context, key string, _ *appsv1.ReplicaSet, pod *corev1.Pod) {
			c.expectations.DeletionObserved(ctx, key, queue.PodKey(pod))
		},
	}
}

// adoptersOf returns the ReplicaSets whose selector matches the orphan pod.
func (c *Controller) adoptersOf(ctx context.Context, pod *corev1.Pod) []*appsv1.ReplicaSet {
	all, err := c.replicaSets.ReplicaSets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	return refmanager.AdoptersOf(ctx, all, pod, func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector })
}

// resolveControllerRef returns the ReplicaSet ref names; false when ref is not to a
// ReplicaSet or names one that no longer exists.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) (*appsv1.ReplicaSet, bool) {
	return refmanager.ResolveControllerRef(ref, controllerKind.Kind, c.replicaSets.ReplicaSets(namespace).Get)
}
