package replicaset

import (
	"context"
	"fmt"
	"reflect"
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

	// BurstReplicas is the maximum number of pods created or deleted for one ReplicaSet
	// in one sync. A larger difference is worked off over several syncs, each waiting
	// for the informer to observe the previous one.
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

	rsLister   appslisters.ReplicaSetLister
	rsIndexer  cache.Indexer
	rsSynced   cache.InformerSynced
	podLister  corelisters.PodLister
	podIndexer cache.Indexer
	podSynced  cache.InformerSynced

	queue workqueue.TypedRateLimitingInterface[string]
}

// Option customises a Controller built by NewController.
type Option func(*Controller)

// WithClock makes the controller read time from clk (status times, availability,
// expectation expiry, ranking); tests pass a fake clock.
func WithClock(clk clock.Clock) Option {
	return func(c *Controller) { c.clock = clk }
}

// NewController builds a ReplicaSet controller on the given informers. It adds the
// ControllerUIDIndex to the ReplicaSet informer and podutil.PodControllerIndex to the pod
// informer, so it must be called before the informers start. Events are recorded through
// recorder, whose source should be ControllerName. gates supplies PodDeletionCost,
// DeploymentReplicaSetTerminatingReplicas and StaleControllerConsistencyReplicaSet.
func NewController(ctx context.Context, rsInformer appsinformers.ReplicaSetInformer, podInformer coreinformers.PodInformer,
	client kubernetes.Interface, recorder record.EventRecorder, gates featuregate.FeatureGate, burstReplicas int, opts ...Option) (*Controller, error) {
	c := &Controller{
		client:        client,
		gates:         gates,
		clock:         clock.RealClock{},
		burstReplicas: burstReplicas,
		rsLister:      rsInformer.Lister(),
		rsIndexer:     rsInformer.Informer().GetIndexer(),
		rsSynced:      rsInformer.Informer().HasSynced,
		podLister:     podInformer.Lister(),
		podIndexer:    podInformer.Informer().GetIndexer(),
		podSynced:     podInformer.Informer().HasSynced,
		queue:         queue.New[string](queue.NameReplicaSet),
	}
	for _, opt := range opts {
		opt(c)
	}
	c.expectations = expectations.NewTracked(expectations.NewWithClock(c.clock))

	control := &podcontrol.Real{Client: client, Recorder: recorder}
	if gates.Enabled(features.StaleControllerConsistencyReplicaSet) {
		c.writes = newWriteTracker(c.podIndexer.LastStoreSyncResourceVersion, c.rsIndexer.LastStoreSyncResourceVersion)
		control.OnWrite = c.writes.podWritten
	}
	c.podControl = control

	if err := addControllerUIDIndex(rsInformer.Informer()); err != nil {
		return nil, err
	}
	if err := podutil.AddPodControllerIndex(podInformer.Informer()); err != nil {
		return nil, err
	}

	_, err := rsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.addReplicaSet(ctx, obj) },
		UpdateFunc: func(old, cur any) { c.updateReplicaSet(ctx, old, cur) },
		DeleteFunc: func(obj any) { c.deleteReplicaSet(ctx, obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("adding ReplicaSet event handler: %w", err)
	}
	_, err = podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.addPod(ctx, obj) },
		UpdateFunc: func(old, cur any) { c.updatePod(ctx, old, cur) },
		DeleteFunc: func(obj any) { c.deletePod(ctx, obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("adding pod event handler: %w", err)
	}

	registerMetrics()
	return c, nil
}

// addControllerUIDIndex indexes ReplicaSets by their controller's UID. Other controllers
// sharing the informer may have added the same index already.
func addControllerUIDIndex(informer cache.SharedIndexInformer) error {
	if _, exists := informer.GetIndexer().GetIndexers()[ControllerUIDIndex]; exists {
		return nil
	}
	err := informer.AddIndexers(cache.Indexers{
		ControllerUIDIndex: func(obj any) ([]string, error) {
			rs, ok := obj.(*appsv1.ReplicaSet)
			if !ok {
				return nil, nil
			}
			ref := metav1.GetControllerOfNoCopy(rs)
			if ref == nil {
				return nil, nil
			}
			return []string{string(ref.UID)}, nil
		},
	})
	if err != nil {
		return fmt.Errorf("adding ReplicaSet index %q: %w", ControllerUIDIndex, err)
	}
	return nil
}

// Run waits for the caches to sync, then processes ReplicaSets with workers workers until
// ctx ends. It returns after the queue is shut down and every worker has stopped. Events
// flow through the recorder given to NewController, whose broadcaster the caller runs.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx)
	logger.Info("Starting controller", "controller", ControllerName)
	defer logger.Info("Shutting down controller", "controller", ControllerName)

	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.podSynced, c.rsSynced) {
		c.queue.ShutDown()
		return
	}
	queue.RunWorkers(ctx, c.queue, workers, c.syncReplicaSet)
}

// enqueue adds rs's key to the queue.
func (c *Controller) enqueue(ctx context.Context, rs *appsv1.ReplicaSet) {
	c.enqueueAfter(ctx, rs, 0)
}

// enqueueAfter adds rs's key to the queue once delay has passed.
func (c *Controller) enqueueAfter(ctx context.Context, rs *appsv1.ReplicaSet, delay time.Duration) {
	key, err := queue.KeyFor(rs)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Couldn't get key for ReplicaSet", "replicaSet", klog.KObj(rs))
		return
	}
	if delay > 0 {
		c.queue.AddAfter(key, delay)
		return
	}
	c.queue.Add(key)
}

// resolveControllerRef returns the ReplicaSet ref points to, or nil if ref is not to a
// ReplicaSet or names one that no longer exists.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	rs, _ := refmanager.ResolveControllerRef(ref, controllerKind.Kind, c.rsLister.ReplicaSets(namespace).Get)
	return rs
}

// matchingReplicaSets returns the ReplicaSets whose selector matches an orphan pod, so that
// they can consider adopting it. More than one is a user error worth logging.
func (c *Controller) matchingReplicaSets(ctx context.Context, pod *corev1.Pod) []*appsv1.ReplicaSet {
	all, err := c.rsLister.ReplicaSets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	matching := refmanager.SelectingOwners(all, pod.Labels, func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector })
	if len(matching) > 1 {
		// Overlapping selectors fight over pods; only the user can fix that.
		utilruntime.HandleErrorWithContext(ctx, nil, "More than one ReplicaSet is selecting pods with labels",
			"pod", klog.KObj(pod), "labels", pod.Labels)
	}
	return matching
}

func (c *Controller) addReplicaSet(ctx context.Context, obj any) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	klog.FromContext(ctx).V(4).Info("Adding ReplicaSet", "replicaSet", klog.KObj(rs))
	c.enqueue(ctx, rs)
}

func (c *Controller) updateReplicaSet(ctx context.Context, old, cur any) {
	oldRS, ok1 := old.(*appsv1.ReplicaSet)
	curRS, ok2 := cur.(*appsv1.ReplicaSet)
	if !ok1 || !ok2 {
		return
	}
	if oldRS.UID != curRS.UID {
		// The informer collapsed a delete and a re-create under the same name: forget
		// everything about the old object first.
		key, err := queue.KeyFor(oldRS)
		if err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Couldn't get key for ReplicaSet", "replicaSet", klog.KObj(oldRS))
			return
		}
		c.deleteReplicaSet(ctx, cache.DeletedFinalStateUnknown{Key: key, Obj: oldRS})
	}
	// Every update re-enqueues, status-only ones included: together with the periodic
	// resync this retries creates that failed for reasons outside the controller (quota).
	if oldRS.Spec.Replicas != nil && curRS.Spec.Replicas != nil && *oldRS.Spec.Replicas != *curRS.Spec.Replicas {
		klog.FromContext(ctx).V(4).Info("ReplicaSet replicas changed", "replicaSet", klog.KObj(curRS),
			"old", *oldRS.Spec.Replicas, "new", *curRS.Spec.Replicas)
	}
	c.enqueue(ctx, curRS)
}

func (c *Controller) deleteReplicaSet(ctx context.Context, obj any) {
	rs, ok := queue.FromTombstone[*appsv1.ReplicaSet](obj)
	if !ok {
		utilruntime.HandleErrorWithContext(ctx, nil, "Couldn't get ReplicaSet from deleted object", "type", fmt.Sprintf("%T", obj))
		return
	}
	key, err := queue.KeyFor(obj)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Couldn't get key for ReplicaSet", "replicaSet", klog.KObj(rs))
		return
	}
	klog.FromContext(ctx).V(4).Info("Deleting ReplicaSet", "replicaSet", klog.KObj(rs))
	c.writes.forget(key)
	c.expectations.Delete(ctx, key)
	c.queue.Add(key)
}

// addPod is called when the informer sees a new pod: a pod this controller created (its
// creation is now observed) or an orphan some ReplicaSet may adopt.
func (c *Controller) addPod(ctx context.Context, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.DeletionTimestamp != nil {
		// After a restart the informer lists pods that are already being deleted; they
		// must not count as creations.
		c.deletePod(ctx, pod)
		return
	}
	logger := klog.FromContext(ctx)
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		rs := c.resolveControllerRef(pod.Namespace, ref)
		if rs == nil {
			return
		}
		key, err := queue.KeyFor(rs)
		if err != nil {
			return
		}
		logger.V(4).Info("Pod created", "pod", klog.KObj(pod), "replicaSet", klog.KObj(rs))
		c.expectations.CreationObserved(ctx, key)
		c.queue.Add(key)
		return
	}
	// Orphans never touch expectations: nobody expected them.
	for _, rs := range c.matchingReplicaSets(ctx, pod) {
		logger.V(4).Info("Orphan pod created", "pod", klog.KObj(pod), "replicaSet", klog.KObj(rs))
		c.enqueue(ctx, rs)
	}
}

// updatePod wakes the ReplicaSets affected by a pod change: its old and new controller,
// or for orphans every ReplicaSet that may now adopt it.
func (c *Controller) updatePod(ctx context.Context, old, cur any) {
	oldPod, ok1 := old.(*corev1.Pod)
	curPod, ok2 := cur.(*corev1.Pod)
	if !ok1 || !ok2 {
		return
	}
	if curPod.ResourceVersion == oldPod.ResourceVersion {
		// A periodic resync re-delivers every pod; nothing changed.
		return
	}
	labelsChanged := !reflect.DeepEqual(curPod.Labels, oldPod.Labels)
	if curPod.DeletionTimestamp != nil {
		// A graceful delete shows up as an update first. Count it now rather than waiting
		// for the final delete, so a replacement is created without delay. If the labels
		// changed too, the old labels' owner must hear about it as well.
		c.deletePod(ctx, curPod)
		if labelsChanged {
			c.deletePod(ctx, oldPod)
		}
		return
	}

	curRef := metav1.GetControllerOfNoCopy(curPod)
	oldRef := metav1.GetControllerOfNoCopy(oldPod)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		// The old owner lost a pod.
		if rs := c.resolveControllerRef(oldPod.Namespace, oldRef); rs != nil {
			c.enqueue(ctx, rs)
		}
	}

	if curRef != nil {
		rs := c.resolveControllerRef(curPod.Namespace, curRef)
		if rs == nil {
			return
		}
		klog.FromContext(ctx).V(4).Info("Pod updated", "pod", klog.KObj(curPod), "replicaSet", klog.KObj(rs))
		c.enqueue(ctx, rs)
		// No pod event marks the moment a ready pod becomes available, so check again
		// once minReadySeconds have passed.
		if !podutil.IsPodReady(oldPod) && podutil.IsPodReady(curPod) && rs.Spec.MinReadySeconds > 0 {
			delay := time.Duration(rs.Spec.MinReadySeconds) * time.Second
			klog.FromContext(ctx).V(2).Info("Pod will be enqueued after a while for availability check",
				"duration", delay, "pod", klog.KObj(curPod), "replicaSet", klog.KObj(rs))
			c.enqueueAfter(ctx, rs, delay)
		}
		return
	}

	if labelsChanged || refChanged {
		for _, rs := range c.matchingReplicaSets(ctx, curPod) {
			klog.FromContext(ctx).V(4).Info("Orphan pod updated", "pod", klog.KObj(curPod), "replicaSet", klog.KObj(rs))
			c.enqueue(ctx, rs)
		}
	}
}

// deletePod records an observed deletion for the pod's controller. obj may be a tombstone.
func (c *Controller) deletePod(ctx context.Context, obj any) {
	pod, ok := queue.FromTombstone[*corev1.Pod](obj)
	if !ok {
		utilruntime.HandleErrorWithContext(ctx, nil, "Couldn't get pod from deleted object", "type", fmt.Sprintf("%T", obj))
		return
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		// An orphan's deletion concerns no ReplicaSet.
		return
	}
	rs := c.resolveControllerRef(pod.Namespace, ref)
	if rs == nil {
		return
	}
	key, err := queue.KeyFor(rs)
	if err != nil {
		return
	}
	klog.FromContext(ctx).V(4).Info("Pod deleted", "pod", klog.KObj(pod), "deletionTimestamp", pod.DeletionTimestamp,
		"replicaSet", klog.KObj(rs))
	c.expectations.DeletionObserved(ctx, key, queue.PodKey(pod))
	c.queue.Add(key)
}
