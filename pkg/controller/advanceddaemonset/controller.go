package advanceddaemonset

import (
	"context"
	"fmt"
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
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	appsv1beta1informers "github.com/bosun-dev/client-go/informers/externalversions/apps/v1beta1"
	appsv1beta1listers "github.com/bosun-dev/client-go/listers/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/advanceddaemonset/daemonsetutil"
	"github.com/bosun-dev/bosun/pkg/controller/expectations"
	"github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/podcontrol"
	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/pkg/controller/predownload"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/controller/refmanager"
)

const (
	// ControllerName is the controller's canonical name and the source component of the
	// events it records.
	ControllerName = "advanced-daemonset-controller"

	// failedPodBackoffInitial and failedPodBackoffMax bound the delay between deletions of
	// failed daemon pods on one node, so that a pod that fails at once is not recreated in
	// a hot loop.
	failedPodBackoffInitial = time.Second
	failedPodBackoffMax     = 15 * time.Minute
	// failedPodBackoffGCPeriod is how often entries of nodes that stopped failing are
	// dropped.
	failedPodBackoffGCPeriod = time.Minute
)

// Event reasons recorded on the DaemonSet, besides the pod create and delete events of
// podcontrol. They are OpenKruise's.
const (
	SelectingAllReason               = "SelectingAll"
	FailedDaemonPodReason            = "FailedDaemonPod"
	SuccessfulUpdatePodInPlaceReason = "SuccessfulUpdatePodInPlace"
	FailedUpdatePodInPlaceReason     = "FailedUpdatePodInPlace"
)

// controllerKind is the kind of the objects this controller manages.
var controllerKind = appsv1beta1.SchemeGroupVersion.WithKind("DaemonSet")

// Controller runs one daemon pod on every node that wants one, for every Advanced
// DaemonSet, and rolls them to new revisions.
type Controller struct {
	kubeClient  kubernetes.Interface
	bosunClient bosunclientset.Interface
	recorder    record.EventRecorder
	podControl  podcontrol.Interface
	gates       featuregate.FeatureGate
	clock       clock.Clock

	// burstReplicas caps creates, deletes and in-place updates per sync for DaemonSets
	// without spec.burstReplicas.
	burstReplicas int

	// expectations records the creates and deletes a sync issued that the informer has not
	// shown yet; counters is the store behind it, through which creates are expected
	// together with tracked deletes.
	expectations *expectations.TrackedStore
	counters     *expectations.Store
	// podUpdates records the resource versions of pods this controller updated (in place,
	// or held by a preDelete hook) until the informer shows them.
	podUpdates *expectations.VersionStore

	// failedPodsBackoff spaces out the deletion of failed pods per DaemonSet and node.
	failedPodsBackoff *flowcontrol.Backoff
	backoffGCMu       sync.Mutex
	lastBackoffGC     time.Time

	// simulated caches the pod each DaemonSet would place on a node.
	simulated *simulatedPods

	daemonSets   appsv1beta1listers.DaemonSetLister
	revisions    appslisters.ControllerRevisionLister
	pods         corelisters.PodLister
	podIndexer   cache.Indexer
	nodes        corelisters.NodeLister
	cachesSynced []cache.InformerSynced

	// preDownload writes the ImagePullJobs of image pre-download; nil when NewController
	// got no ImagePullJob informer: image pre-download is off.
	preDownload *predownload.Control

	queue workqueue.TypedRateLimitingInterface[string]
	// syncHandler is syncDaemonSet; tests replace it to watch the worker loop.
	syncHandler queue.SyncFunc[string]

	// podEvents decides which DaemonSets a pod event concerns (see ownedPodHandlers).
	podEvents refmanager.PodHandlers[*appsv1beta1.DaemonSet]
}

// NewController builds the Advanced DaemonSet controller on the given informers. It adds
// podutil.PodControllerIndex to the pod informer, so it must be called before the
// informers start. Events are recorded through recorder, whose source should be
// ControllerName. Of the options it reads the clock (availability, expectation expiry,
// failed-pod backoff, condition and lifecycle times), the feature gate
// (AdvancedDaemonSetStrictMaxUnavailable, PreDownloadImageForDaemonSetUpdate), the
// burst size, used for DaemonSets without spec.burstReplicas (default 250), and the queue
// and pod control wrappers.
//
// imagePullJobInformer is optional: the manager passes nil when the API server does not
// serve ImagePullJobs or feature PreDownloadImageForDaemonSetUpdate was off when it
// started, and image pre-download is then off whatever the gate says.
func NewController(ctx context.Context,
	dsInformer appsv1beta1informers.DaemonSetInformer,
	revisionInformer appsinformers.ControllerRevisionInformer,
	podInformer coreinformers.PodInformer, nodeInformer coreinformers.NodeInformer,
	imagePullJobInformer appsv1beta1informers.ImagePullJobInformer,
	kubeClient kubernetes.Interface, bosunClient bosunclientset.Interface,
	recorder record.EventRecorderLogger, opts ...options.Option) (*Controller, error) {
	settings := options.Apply(opts)
	burst := settings.BurstReplicas
	if burst <= 0 {
		burst = daemonsetutil.DefaultBurstReplicas
	}
	counters := expectations.NewWithClock(settings.Clock)
	c := &Controller{
		kubeClient:    kubeClient,
		bosunClient:   bosunClient,
		recorder:      recorder,
		podControl:    settings.WrapPodControl(&podcontrol.Real{Client: kubeClient, Recorder: recorder}),
		gates:         settings.FeatureGate,
		clock:         settings.Clock,
		burstReplicas: burst,
		expectations:  expectations.NewTracked(counters),
		counters:      counters,
		podUpdates:    expectations.NewVersionStore(settings.Clock, cachedPodVersion(podInformer.Lister())),
		// The "fake" constructor is the one that takes a clock; it is the real backoff.
		failedPodsBackoff: flowcontrol.NewFakeBackOff(failedPodBackoffInitial, failedPodBackoffMax, settings.Clock),
		simulated:         newSimulatedPods(),
		daemonSets:        dsInformer.Lister(),
		revisions:         revisionInformer.Lister(),
		pods:              podInformer.Lister(),
		podIndexer:        podInformer.Informer().GetIndexer(),
		nodes:             nodeInformer.Lister(),
		cachesSynced: []cache.InformerSynced{
			dsInformer.Informer().HasSynced, revisionInformer.Informer().HasSynced,
			podInformer.Informer().HasSynced, nodeInformer.Informer().HasSynced,
		},
		queue: settings.WrapQueue(queue.New[string](queue.NameAdvancedDaemonSet)),
	}
	c.syncHandler = c.syncDaemonSet
	c.podEvents = c.ownedPodHandlers()
	if imagePullJobInformer != nil {
		c.preDownload = predownload.NewControl(kubeClient, bosunClient, recorder, imagePullJobInformer.Lister())
		c.cachesSynced = append(c.cachesSynced, imagePullJobInformer.Informer().HasSynced)
	}

	if err := podutil.AddPodControllerIndex(podInformer.Informer()); err != nil {
		return nil, err
	}
	handlers := []struct {
		informer cache.SharedIndexInformer
		kind     string
		handlers informers.Handlers
	}{
		{dsInformer.Informer(), "DaemonSet", informers.Handlers{Add: c.addDaemonSet, Update: c.updateDaemonSet, Delete: c.deleteDaemonSet}},
		{revisionInformer.Informer(), "ControllerRevision", informers.Handlers{Add: c.addRevision, Update: c.updateRevision, Delete: c.deleteRevision}},
		{podInformer.Informer(), "pod", informers.Handlers{Add: c.addPod, Update: c.updatePod, Delete: c.deletePod}},
		{nodeInformer.Informer(), "node", informers.Handlers{Add: c.addNode, Update: c.updateNode}},
	}
	for _, h := range handlers {
		if err := informers.AddHandlers(ctx, h.informer, h.kind, h.handlers); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run waits for the caches to sync, then processes DaemonSets with workers workers until
// ctx ends. It returns after the queue is shut down and every worker has stopped.
func (c *Controller) Run(ctx context.Context, workers int) {
	queue.RunController(ctx, ControllerName, c.queue, workers, c.cachesSynced, c.syncHandler)
}

// enqueue adds ds's key to the queue.
// cachedPodVersion reads the pod informer's current version of a pod for podUpdates.
func cachedPodVersion(pods corelisters.PodLister) expectations.CachedVersion {
	return func(namespace, name string) (types.UID, string, bool) {
		pod, err := pods.Pods(namespace).Get(name)
		if err != nil {
			return "", "", false
		}
		return pod.UID, pod.ResourceVersion, true
	}
}

func (c *Controller) enqueue(ctx context.Context, ds *appsv1beta1.DaemonSet) {
	key, err := queue.KeyFor(ds)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Cannot queue DaemonSet", "daemonSet", klog.KObj(ds))
		return
	}
	c.queue.Add(key)
}

func (c *Controller) addDaemonSet(ctx context.Context, obj any) {
	ds, ok := obj.(*appsv1beta1.DaemonSet)
	if !ok {
		return
	}
	klog.FromContext(ctx).V(4).Info("DaemonSet added", "daemonSet", klog.KObj(ds))
	c.enqueue(ctx, ds)
}

// updateDaemonSet queues the DaemonSet on every update, status-only ones included, so
// that the periodic resync retries what failed for reasons outside the controller.
func (c *Controller) updateDaemonSet(ctx context.Context, old, cur any) {
	oldDS, ok1 := old.(*appsv1beta1.DaemonSet)
	curDS, ok2 := cur.(*appsv1beta1.DaemonSet)
	if !ok1 || !ok2 {
		return
	}
	if oldDS.UID != curDS.UID {
		// A delete and a re-create under one name folded into one update: nothing the
		// controller remembers about the old object may carry over.
		c.deleteDaemonSet(ctx, cache.DeletedFinalStateUnknown{Key: queue.KeyForRef(oldDS.Namespace, oldDS.Name), Obj: oldDS})
	}
	klog.FromContext(ctx).V(4).Info("DaemonSet updated", "daemonSet", klog.KObj(curDS))
	c.enqueue(ctx, curDS)
}

// deleteDaemonSet forgets what the controller remembered about a deleted DaemonSet and
// queues its key once more, so that the sync sees it gone. obj may be a tombstone.
func (c *Controller) deleteDaemonSet(ctx context.Context, obj any) {
	ds, ok := queue.FromTombstone[*appsv1beta1.DaemonSet](obj)
	if !ok {
		utilruntime.HandleErrorWithContext(ctx, nil, "DaemonSet event carries an unexpected object", "type", fmt.Sprintf("%T", obj))
		return
	}
	key, err := queue.KeyFor(obj)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Cannot queue DaemonSet", "daemonSet", klog.KObj(ds))
		return
	}
	klog.FromContext(ctx).V(4).Info("DaemonSet deleted", "daemonSet", klog.KObj(ds))
	c.forget(ctx, key)
	c.simulated.forget(ds.UID)
	c.queue.Add(key)
}

// forget drops the expectations of the DaemonSet with key.
func (c *Controller) forget(ctx context.Context, key string) {
	c.expectations.Delete(ctx, key)
	c.podUpdates.Forget(key)
}

// addPod handles a pod the informer sees for the first time: one this controller created,
// whose creation is now observed, or an orphan a DaemonSet may adopt.
func (c *Controller) addPod(ctx context.Context, obj any) { c.podEvents.Add(ctx, obj) }

// updatePod wakes the DaemonSets a pod change concerns: the one it left, the one it
// belongs to, or, for an orphan whose labels or ownership changed, those that may adopt it.
// A graceful delete shows first as an update: counting it now lets the replacement be
// created without waiting out the grace period.
func (c *Controller) updatePod(ctx context.Context, old, cur any) { c.podEvents.Update(ctx, old, cur) }

// deletePod handles a deleted pod; obj may be a tombstone.
func (c *Controller) deletePod(ctx context.Context, obj any) { c.podEvents.Delete(ctx, obj) }

// ownedPodHandlers says how pod events concern DaemonSets: through a pod's controller
// reference, or, for an orphan, through the selectors that may adopt it. Creations and
// deletions are recorded in the expectations of the DaemonSet controlling the pod, and the
// pod's versions in its record of the pod updates it is waiting to see.
func (c *Controller) ownedPodHandlers() refmanager.PodHandlers[*appsv1beta1.DaemonSet] {
	return refmanager.PodHandlers[*appsv1beta1.DaemonSet]{
		Kind: controllerKind.Kind,
		ControllerOf: func(namespace string, ref *metav1.OwnerReference) (*appsv1beta1.DaemonSet, bool) {
			ds := c.resolveControllerRef(namespace, ref)
			return ds, ds != nil
		},
		Selecting:       c.adoptersOf,
		Enqueue:         func(key string) { c.queue.Add(key) },
		MinReadySeconds: func(ds *appsv1beta1.DaemonSet) int32 { return ds.Spec.MinReadySeconds },
		EnqueueAfter:    c.queue.AddAfter,
		Created: func(ctx context.Context, key string, _ *appsv1beta1.DaemonSet, _ *corev1.Pod) {
			c.expectations.CreationObserved(ctx, key)
		},
		Updated: func(_ context.Context, key string, _ *appsv1beta1.DaemonSet, _, cur *corev1.Pod) {
			c.podUpdates.Observed(key, cur)
		},
		Gone: func(ctx context.Context, key string, _ *appsv1beta1.DaemonSet, pod *corev1.Pod) {
			c.expectations.DeletionObserved(ctx, key, queue.PodKey(pod))
			c.podUpdates.Gone(key, pod)
		},
	}
}

// adoptersOf returns the DaemonSets whose selector matches the orphan pod.
func (c *Controller) adoptersOf(ctx context.Context, pod *corev1.Pod) []*appsv1beta1.DaemonSet {
	all, err := c.daemonSets.DaemonSets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	return refmanager.AdoptersOf(ctx, all, pod, func(ds *appsv1beta1.DaemonSet) *metav1.LabelSelector { return ds.Spec.Selector })
}

// addRevision queues the owner of a new revision, or the DaemonSets that may adopt an
// orphan one.
func (c *Controller) addRevision(ctx context.Context, obj any) {
	revision, ok := obj.(*appsv1.ControllerRevision)
	if !ok {
		return
	}
	c.revisionChanged(ctx, revision, true)
}

func (c *Controller) updateRevision(ctx context.Context, old, cur any) {
	oldRevision, ok1 := old.(*appsv1.ControllerRevision)
	curRevision, ok2 := cur.(*appsv1.ControllerRevision)
	if !ok1 || !ok2 || oldRevision.ResourceVersion == curRevision.ResourceVersion {
		return
	}
	change := refmanager.CompareControllerRefs(oldRevision, curRevision)
	if change.Former != nil {
		if ds := c.resolveControllerRef(oldRevision.Namespace, change.Former); ds != nil {
			c.enqueue(ctx, ds)
		}
	}
	c.revisionChanged(ctx, curRevision, change.Adoptable)
}

// deleteRevision queues the owner of a deleted revision; obj may be a tombstone.
func (c *Controller) deleteRevision(ctx context.Context, obj any) {
	revision, ok := queue.FromTombstone[*appsv1.ControllerRevision](obj)
	if !ok {
		return
	}
	c.revisionChanged(ctx, revision, false)
}

// revisionChanged queues the DaemonSet controlling revision; for an orphan revision it
// queues the DaemonSets whose selector matches it, when adoptable says its labels or
// ownership may now let them adopt it.
func (c *Controller) revisionChanged(ctx context.Context, revision *appsv1.ControllerRevision, adoptable bool) {
	if ref := metav1.GetControllerOfNoCopy(revision); ref != nil {
		if ds := c.resolveControllerRef(revision.Namespace, ref); ds != nil {
			klog.FromContext(ctx).V(4).Info("ControllerRevision changed", "controllerRevision", klog.KObj(revision), "daemonSet", klog.KObj(ds))
			c.enqueue(ctx, ds)
		}
		return
	}
	if !adoptable {
		return
	}
	all, err := c.daemonSets.DaemonSets(revision.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range refmanager.AdoptersOf(ctx, all, revision, func(ds *appsv1beta1.DaemonSet) *metav1.LabelSelector { return ds.Spec.Selector }) {
		c.enqueue(ctx, ds)
	}
}

// addNode queues the DaemonSets that want a pod on a new node.
func (c *Controller) addNode(ctx context.Context, obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	all, err := c.daemonSets.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range all {
		if c.eligibility(ds, node).ShouldRun {
			klog.FromContext(ctx).V(4).Info("Node added; DaemonSet wants a pod there", "node", klog.KObj(node), "daemonSet", klog.KObj(ds))
			c.enqueue(ctx, ds)
		}
	}
}

// updateNode queues the DaemonSets for which a node change matters: whether they should
// run there, or whether their rolling-update selector picks the node, changed. Heartbeats
// and other status churn change neither and are dropped early.
func (c *Controller) updateNode(ctx context.Context, old, cur any) {
	oldNode, ok1 := old.(*corev1.Node)
	curNode, ok2 := cur.(*corev1.Node)
	if !ok1 || !ok2 || !nodeChangeMatters(oldNode, curNode) {
		return
	}
	all, err := c.daemonSets.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range all {
		if c.eligibility(ds, oldNode) != c.eligibility(ds, curNode) || rollingSelectorMatches(ds, oldNode) != rollingSelectorMatches(ds, curNode) {
			klog.FromContext(ctx).V(4).Info("Node changed for DaemonSet", "node", klog.KObj(curNode), "daemonSet", klog.KObj(ds))
			c.enqueue(ctx, ds)
		}
	}
}

// nodeChangeMatters reports whether an update changed anything a DaemonSet looks at:
// labels, taints, schedulability or which conditions are True.
func nodeChangeMatters(old, cur *corev1.Node) bool {
	return !reflect.DeepEqual(old.Labels, cur.Labels) ||
		!reflect.DeepEqual(old.Spec.Taints, cur.Spec.Taints) ||
		old.Spec.Unschedulable != cur.Spec.Unschedulable ||
		!slices.Equal(trueConditions(old), trueConditions(cur))
}

func trueConditions(node *corev1.Node) []corev1.NodeConditionType {
	var types []corev1.NodeConditionType
	for _, cond := range node.Status.Conditions {
		if cond.Status == corev1.ConditionTrue {
			types = append(types, cond.Type)
		}
	}
	slices.Sort(types)
	return types
}

// rollingSelectorMatches reports whether ds's rolling-update selector picks node; false
// when ds has none.
func rollingSelectorMatches(ds *appsv1beta1.DaemonSet, node *corev1.Node) bool {
	rolling := daemonsetutil.RollingUpdate(ds)
	if rolling == nil || rolling.Selector == nil {
		return false
	}
	selector, err := metav1.LabelSelectorAsSelector(rolling.Selector)
	return err == nil && selector.Matches(labels.Set(node.Labels))
}

// resolveControllerRef returns the DaemonSet ref names, or nil when ref is not to an
// apps.kruise.io DaemonSet (of any version) or names one that no longer exists.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1beta1.DaemonSet {
	if ref == nil {
		return nil
	}
	// Kind alone would also match apps/v1 DaemonSets.
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != controllerKind.Group {
		return nil
	}
	ds, _ := refmanager.ResolveControllerRef(ref, controllerKind.Kind, c.daemonSets.DaemonSets(namespace).Get)
	return ds
}

// eligibility judges node for ds.
func (c *Controller) eligibility(ds *appsv1beta1.DaemonSet, node *corev1.Node) daemonsetutil.Eligibility {
	return daemonsetutil.NodeEligibility(c.simulated.get(ds), node)
}

// simulatedPods caches, per DaemonSet UID, the pod the DaemonSet would place on a node;
// node events judge every DaemonSet against the node, and building the pod each time
// would copy every template on every node heartbeat that gets through.
type simulatedPods struct {
	mu    sync.Mutex
	byUID map[types.UID]simulatedPod
}

type simulatedPod struct {
	generation int64
	pod        *corev1.Pod
}

func newSimulatedPods() *simulatedPods {
	return &simulatedPods{byUID: map[types.UID]simulatedPod{}}
}

// get returns the simulated pod of ds, rebuilt when ds's generation moved on. Callers
// must not modify it.
func (s *simulatedPods) get(ds *appsv1beta1.DaemonSet) *corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cached, ok := s.byUID[ds.UID]; ok && cached.generation == ds.Generation {
		return cached.pod
	}
	pod := daemonsetutil.SimulatedPod(&ds.Spec.Template)
	// An older copy of ds (a lagging cache) gets its own pod but must not replace the
	// newer one.
	if cached, ok := s.byUID[ds.UID]; !ok || cached.generation < ds.Generation {
		s.byUID[ds.UID] = simulatedPod{generation: ds.Generation, pod: pod}
	}
	return pod
}

func (s *simulatedPods) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byUID, uid)
}
