package cloneset

import (
	"context"
	"fmt"

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
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	appsv1beta1informers "github.com/bosun-dev/client-go/informers/externalversions/apps/v1beta1"
	appsv1beta1listers "github.com/bosun-dev/client-go/listers/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/cloneset/clonesetutil"
	"github.com/bosun-dev/bosun/pkg/controller/expectations"
	"github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/pkg/controller/predownload"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/controller/refmanager"
)

const (
	// ControllerName is the controller's canonical name and the source component of the
	// events it records.
	ControllerName = "cloneset-controller"

	// ClaimControllerIndex indexes PersistentVolumeClaims by the UID of their controller,
	// so that a sync finds a CloneSet's claims without listing its namespace.
	ClaimControllerIndex = "claimControllerUID"
)

// Resources named in expectations.
const (
	podsResource   = "pods"
	claimsResource = "persistentvolumeclaims"
)

// controllerKind is the kind of the objects this controller manages, in the version it
// writes owner references with.
var controllerKind = clonesetutil.ControllerKind

// scalingExcludePreparingDeleteKey keys WithScalingExcludePreparingDelete's setting.
type scalingExcludePreparingDeleteKey struct{}

// WithScalingExcludePreparingDelete makes every CloneSet leave pods held in PreparingDelete
// out of its count of pods, as if each set scaleStrategy.excludePreparingDelete
// (--cloneset-scaling-exclude-preparing-delete).
func WithScalingExcludePreparingDelete(exclude bool) options.Option {
	return options.Local(scalingExcludePreparingDeleteKey{}, exclude)
}

// scalingSurplusIgnoreMaxUnavailableKey keys WithScalingSurplusIgnoreMaxUnavailable's
// setting.
type scalingSurplusIgnoreMaxUnavailableKey struct{}

// WithScalingSurplusIgnoreMaxUnavailable lets a scale-in delete the pods above replicas
// (plus the surge in use) however many of them are ready, as a Deployment does, instead of
// only as many ready ones as maxUnavailable leaves room for
// (--cloneset-scaling-surplus-ignore-max-unavailable). Pods deleted for other reasons stay
// within the limit.
func WithScalingSurplusIgnoreMaxUnavailable(ignore bool) options.Option {
	return options.Local(scalingSurplusIgnoreMaxUnavailableKey{}, ignore)
}

// restartDeadlineOnProgressKey keys WithProgressDeadlineRestartsOnProgress's setting.
type restartDeadlineOnProgressKey struct{}

// WithProgressDeadlineRestartsOnProgress makes every CloneSet's progress deadline count from
// its rollout's last progress, as a Deployment's does, rather than from the rollout's start
// (--cloneset-progress-deadline-restarts-on-progress).
func WithProgressDeadlineRestartsOnProgress(restart bool) options.Option {
	return options.Local(restartDeadlineOnProgressKey{}, restart)
}

// budgetCheckKey keys WithPodUnavailableBudget's check.
type budgetCheckKey struct{}

// BudgetCheck is the PodUnavailableBudget decision of the pod webhook, made in process
// (pod.InProcess of package webhook/pod): Admit judges op on pod, asked by user, and spends
// the budget covering the pod when it admits. admitted=false is the budget's refusal; err a
// decision that could not be made.
type BudgetCheck interface {
	Admit(ctx context.Context, pod *corev1.Pod, op policyv1beta1.PubOperation, user string) (admitted bool, reason string, err error)
}

// WithPodUnavailableBudget makes the controller ask check before it updates each pod it
// chose for an update, while gate PodUnavailableBudgetUpdateGate is on. Without it no pod
// update is checked (the API server's pod webhook still judges the deletions).
func WithPodUnavailableBudget(check BudgetCheck) options.Option {
	return options.Local(budgetCheckKey{}, check)
}

// Controller keeps every CloneSet's pods at its replicas and revision.
type Controller struct {
	kubeClient  kubernetes.Interface
	bosunClient bosunclientset.Interface
	recorder    record.EventRecorder
	gates       featuregate.FeatureGate
	clock       clock.Clock

	// excludePreparingDelete is --cloneset-scaling-exclude-preparing-delete.
	excludePreparingDelete bool
	// surplusIgnoresMaxUnavailable is --cloneset-scaling-surplus-ignore-max-unavailable.
	surplusIgnoresMaxUnavailable bool
	// restartDeadlineOnProgress is --cloneset-progress-deadline-restarts-on-progress.
	restartDeadlineOnProgress bool
	// budgets judges pod updates against PodUnavailableBudgets; nil when not asked to.
	budgets BudgetCheck

	// scaleExpectations records the pods and claims a sync created or deleted that the
	// informers have not shown yet, by name.
	scaleExpectations *expectations.NameStore
	// podUpdates records the resource versions of pods this controller updated until the
	// informer shows them.
	podUpdates *expectations.VersionStore

	cloneSets    appsv1beta1listers.CloneSetLister
	revisions    appslisters.ControllerRevisionLister
	pods         corelisters.PodLister
	podIndexer   cache.Indexer
	claimIndexer cache.Indexer
	nodes        corelisters.NodeLister
	cachesSynced []cache.InformerSynced

	// preDownload writes the ImagePullJobs of image pre-download; nil when NewController
	// got no ImagePullJob informer: image pre-download is off.
	preDownload *predownload.Control

	queue workqueue.TypedRateLimitingInterface[string]
	// syncHandler is syncCloneSet; tests replace it to watch the worker loop.
	syncHandler queue.SyncFunc[string]

	// podEvents decides which CloneSets a pod event concerns (see ownedPodHandlers).
	podEvents refmanager.PodHandlers[*appsv1beta1.CloneSet]
	// randomID draws a fresh instance ID.
	randomID func() string
}

// NewController builds the CloneSet controller on the given informers. It adds
// podutil.PodControllerIndex to the pod informer and ClaimControllerIndex to the claim
// informer, so it must be called before the informers start. Events are recorded through
// recorder, whose source should be ControllerName. Of the options it reads the clock
// (availability, lifecycle and condition times, expectation waits), the feature gate
// (CloneSetShortHash, PreparingUpdateAsUpdate, CloneSetPartitionRollback,
// RecreatePodWhenChangeVCTInCloneSetGate, PodUnavailableBudgetUpdateGate,
// PreDownloadImageForInPlaceUpdate), the queue wrapper, WithScalingExcludePreparingDelete,
// WithScalingSurplusIgnoreMaxUnavailable and WithPodUnavailableBudget. The node informer is
// read only to rank pods by the topology spread constraints of their template.
//
// imagePullJobInformer is optional: the manager passes nil when the API server does not
// serve ImagePullJobs or feature PreDownloadImageForInPlaceUpdate was off when it started,
// and image pre-download is then off whatever the gate says.
func NewController(ctx context.Context,
	csInformer appsv1beta1informers.CloneSetInformer,
	revisionInformer appsinformers.ControllerRevisionInformer,
	podInformer coreinformers.PodInformer,
	claimInformer coreinformers.PersistentVolumeClaimInformer,
	nodeInformer coreinformers.NodeInformer,
	imagePullJobInformer appsv1beta1informers.ImagePullJobInformer,
	kubeClient kubernetes.Interface, bosunClient bosunclientset.Interface,
	recorder record.EventRecorder, opts ...options.Option) (*Controller, error) {
	settings := options.Apply(opts)
	exclude, _ := options.LocalValue[bool](settings, scalingExcludePreparingDeleteKey{})
	surplusIgnores, _ := options.LocalValue[bool](settings, scalingSurplusIgnoreMaxUnavailableKey{})
	restartDeadline, _ := options.LocalValue[bool](settings, restartDeadlineOnProgressKey{})
	budgets, _ := options.LocalValue[BudgetCheck](settings, budgetCheckKey{})
	c := &Controller{
		kubeClient:                   kubeClient,
		bosunClient:                  bosunClient,
		recorder:                     recorder,
		gates:                        settings.FeatureGate,
		clock:                        settings.Clock,
		excludePreparingDelete:       exclude,
		surplusIgnoresMaxUnavailable: surplusIgnores,
		restartDeadlineOnProgress:    restartDeadline,
		budgets:                      budgets,
		scaleExpectations:            expectations.NewNameStore(settings.Clock),
		podUpdates:                   expectations.NewVersionStore(settings.Clock, cachedPodVersion(podInformer.Lister())),
		cloneSets:                    csInformer.Lister(),
		revisions:                    revisionInformer.Lister(),
		pods:                         podInformer.Lister(),
		podIndexer:                   podInformer.Informer().GetIndexer(),
		claimIndexer:                 claimInformer.Informer().GetIndexer(),
		nodes:                        nodeInformer.Lister(),
		cachesSynced: []cache.InformerSynced{
			csInformer.Informer().HasSynced, revisionInformer.Informer().HasSynced, podInformer.Informer().HasSynced,
			claimInformer.Informer().HasSynced, nodeInformer.Informer().HasSynced,
		},
		queue:    settings.WrapQueue(queue.New[string](queue.NameCloneSet)),
		randomID: randomInstanceID,
	}
	c.syncHandler = c.syncCloneSet
	c.podEvents = c.ownedPodHandlers()
	if imagePullJobInformer != nil {
		c.preDownload = predownload.NewControl(kubeClient, bosunClient, recorder, imagePullJobInformer.Lister())
		c.cachesSynced = append(c.cachesSynced, imagePullJobInformer.Informer().HasSynced)
	}

	if err := podutil.AddPodControllerIndex(podInformer.Informer()); err != nil {
		return nil, err
	}
	if err := addClaimControllerIndex(claimInformer.Informer()); err != nil {
		return nil, err
	}
	handlers := []struct {
		informer cache.SharedIndexInformer
		kind     string
		handlers informers.Handlers
	}{
		{csInformer.Informer(), "CloneSet", informers.Handlers{Add: c.addCloneSet, Update: c.updateCloneSet, Delete: c.deleteCloneSet}},
		{podInformer.Informer(), "pod", informers.Handlers{Add: c.addPod, Update: c.updatePod, Delete: c.deletePod}},
		{claimInformer.Informer(), "PersistentVolumeClaim", informers.Handlers{Add: c.addClaim, Update: c.updateClaim, Delete: c.deleteClaim}},
	}
	for _, h := range handlers {
		if err := informers.AddHandlers(ctx, h.informer, h.kind, h.handlers); err != nil {
			return nil, err
		}
	}
	registerMetrics()
	return c, nil
}

// addClaimControllerIndex indexes claims by their controller's UID. Adding it again is a
// no-op.
func addClaimControllerIndex(informer cache.SharedIndexInformer) error {
	err := informers.AddIndex(informer, ClaimControllerIndex, func(obj any) ([]string, error) {
		claim, ok := obj.(*corev1.PersistentVolumeClaim)
		if !ok {
			return nil, nil
		}
		if ref := metav1.GetControllerOfNoCopy(claim); ref != nil {
			return []string{string(ref.UID)}, nil
		}
		return nil, nil
	})
	if err != nil {
		return fmt.Errorf("indexing claims: %w", err)
	}
	return nil
}

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

// Run waits for the caches to sync, then processes CloneSets with workers workers until
// ctx ends. It returns after the queue is shut down and every worker has stopped.
func (c *Controller) Run(ctx context.Context, workers int) {
	queue.RunController(ctx, ControllerName, c.queue, workers, c.cachesSynced, c.syncHandler)
}

// enqueue adds cs's key to the queue.
func (c *Controller) enqueue(ctx context.Context, cs *appsv1beta1.CloneSet) {
	key, err := queue.KeyFor(cs)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Cannot queue CloneSet", "cloneSet", klog.KObj(cs))
		return
	}
	c.queue.Add(key)
}

func (c *Controller) addCloneSet(ctx context.Context, obj any) {
	cs, ok := obj.(*appsv1beta1.CloneSet)
	if !ok {
		return
	}
	klog.FromContext(ctx).V(4).Info("CloneSet added", "cloneSet", klog.KObj(cs))
	c.enqueue(ctx, cs)
}

// updateCloneSet queues the CloneSet on every update, status-only ones included, so that
// the periodic resync retries what failed for reasons outside the controller.
func (c *Controller) updateCloneSet(ctx context.Context, old, cur any) {
	oldCS, ok1 := old.(*appsv1beta1.CloneSet)
	curCS, ok2 := cur.(*appsv1beta1.CloneSet)
	if !ok1 || !ok2 {
		return
	}
	if oldCS.UID != curCS.UID {
		// A delete and a re-create under one name folded into one update: nothing the
		// controller remembers about the old object may carry over.
		c.deleteCloneSet(ctx, cache.DeletedFinalStateUnknown{Key: queue.KeyForRef(oldCS.Namespace, oldCS.Name), Obj: oldCS})
	}
	if before, after := oldCS.Spec.Replicas, curCS.Spec.Replicas; before != nil && after != nil && *before != *after {
		klog.FromContext(ctx).V(4).Info("CloneSet resized", "cloneSet", klog.KObj(curCS), "from", *before, "to", *after)
	}
	c.enqueue(ctx, curCS)
}

// deleteCloneSet forgets what the controller remembered about a deleted CloneSet and queues
// its key once more, so that the sync sees it gone. obj may be a tombstone.
func (c *Controller) deleteCloneSet(ctx context.Context, obj any) {
	cs, ok := queue.FromTombstone[*appsv1beta1.CloneSet](obj)
	if !ok {
		utilruntime.HandleErrorWithContext(ctx, nil, "CloneSet event carries an unexpected object", "type", fmt.Sprintf("%T", obj))
		return
	}
	key, err := queue.KeyFor(obj)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Cannot queue CloneSet", "cloneSet", klog.KObj(cs))
		return
	}
	klog.FromContext(ctx).V(4).Info("CloneSet deleted", "cloneSet", klog.KObj(cs))
	c.forget(key)
	c.queue.Add(key)
}

// forget drops the expectations of the CloneSet with key.
func (c *Controller) forget(key string) {
	c.scaleExpectations.Forget(key)
	c.podUpdates.Forget(key)
}

// addPod handles a pod the informer sees for the first time: one this controller created,
// whose creation is now observed, or an orphan, which no CloneSet adopts but whose
// CloneSets are queued all the same.
func (c *Controller) addPod(ctx context.Context, obj any) { c.podEvents.Add(ctx, obj) }

// updatePod wakes the CloneSets a pod change concerns: the one it left and the one it
// belongs to. A graceful delete shows first as an update: counting it now lets the
// replacement be created without waiting out the grace period.
func (c *Controller) updatePod(ctx context.Context, old, cur any) { c.podEvents.Update(ctx, old, cur) }

// deletePod handles a deleted pod; obj may be a tombstone.
func (c *Controller) deletePod(ctx context.Context, obj any) { c.podEvents.Delete(ctx, obj) }

// ownedPodHandlers says how pod events concern CloneSets: through a pod's controller
// reference, or, for an orphan, through the selectors that match it. Creations and
// deletions are observed by name in the scale expectations of the CloneSet controlling the
// pod, updates in its record of the pod updates it waits to see.
func (c *Controller) ownedPodHandlers() refmanager.PodHandlers[*appsv1beta1.CloneSet] {
	return refmanager.PodHandlers[*appsv1beta1.CloneSet]{
		Kind: controllerKind.Kind,
		ControllerOf: func(namespace string, ref *metav1.OwnerReference) (*appsv1beta1.CloneSet, bool) {
			cs := c.resolveControllerRef(namespace, ref)
			return cs, cs != nil
		},
		Selecting:       c.selectingCloneSets,
		Enqueue:         func(key string) { c.queue.Add(key) },
		MinReadySeconds: func(cs *appsv1beta1.CloneSet) int32 { return cs.Spec.MinReadySeconds },
		EnqueueAfter:    c.queue.AddAfter,
		Created: func(_ context.Context, key string, _ *appsv1beta1.CloneSet, pod *corev1.Pod) {
			c.scaleExpectations.Observe(key, expectations.Create, podsResource, pod.Name)
		},
		Updated: func(_ context.Context, key string, _ *appsv1beta1.CloneSet, _, cur *corev1.Pod) {
			c.podUpdates.Observed(key, cur)
		},
		Gone: func(_ context.Context, key string, _ *appsv1beta1.CloneSet, pod *corev1.Pod) {
			c.scaleExpectations.Observe(key, expectations.Delete, podsResource, pod.Name)
			c.podUpdates.Gone(key, pod)
		},
	}
}

// selectingCloneSets returns the CloneSets whose selector matches the orphan pod. They
// never adopt it, but a pod whose labels left a CloneSet must wake the CloneSet to replace
// it, and the orphan's arrival may explain a name clash.
func (c *Controller) selectingCloneSets(ctx context.Context, pod *corev1.Pod) []*appsv1beta1.CloneSet {
	all, err := c.cloneSets.CloneSets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	return refmanager.AdoptersOf(ctx, all, pod, func(cs *appsv1beta1.CloneSet) *metav1.LabelSelector { return cs.Spec.Selector })
}

// addClaim observes the creation of a CloneSet's claim.
func (c *Controller) addClaim(ctx context.Context, obj any) {
	claim, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return
	}
	if claim.DeletionTimestamp != nil {
		c.claimGone(ctx, claim)
		return
	}
	c.claimEvent(ctx, claim, expectations.Create)
}

// updateClaim observes the start of a claim's deletion; other changes concern no CloneSet.
func (c *Controller) updateClaim(ctx context.Context, _, cur any) {
	claim, ok := cur.(*corev1.PersistentVolumeClaim)
	if !ok || claim.DeletionTimestamp == nil {
		return
	}
	c.claimGone(ctx, claim)
}

// deleteClaim observes the deletion of a claim; obj may be a tombstone.
func (c *Controller) deleteClaim(ctx context.Context, obj any) {
	claim, ok := queue.FromTombstone[*corev1.PersistentVolumeClaim](obj)
	if !ok {
		return
	}
	c.claimGone(ctx, claim)
}

func (c *Controller) claimGone(ctx context.Context, claim *corev1.PersistentVolumeClaim) {
	c.claimEvent(ctx, claim, expectations.Delete)
}

// claimEvent observes action on claim for the CloneSet controlling it, and queues it.
func (c *Controller) claimEvent(ctx context.Context, claim *corev1.PersistentVolumeClaim, action expectations.Action) {
	cs := c.resolveControllerRef(claim.Namespace, metav1.GetControllerOfNoCopy(claim))
	if cs == nil {
		return
	}
	key, err := queue.KeyFor(cs)
	if err != nil {
		return
	}
	klog.FromContext(ctx).V(4).Info("Claim event", "persistentVolumeClaim", klog.KObj(claim), "action", action, "cloneSet", klog.KObj(cs))
	c.scaleExpectations.Observe(key, action, claimsResource, claim.Name)
	c.queue.Add(key)
}

// resolveControllerRef returns the CloneSet ref names, or nil when ref is not to an
// apps.kruise.io CloneSet (of any version) or names one that no longer exists.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1beta1.CloneSet {
	if ref == nil {
		return nil
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != controllerKind.Group {
		return nil
	}
	cs, _ := refmanager.ResolveControllerRef(ref, controllerKind.Kind, c.cloneSets.CloneSets(namespace).Get)
	return cs
}
