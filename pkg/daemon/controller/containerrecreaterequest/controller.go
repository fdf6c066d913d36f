package containerrecreaterequest

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	appsinformers "github.com/bosun-dev/client-go/informers/externalversions/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/expectations"
	"github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/daemon/containerstop"
	"github.com/bosun-dev/bosun/pkg/daemon/controller"
)

const (
	// ControllerName is the controller's canonical name, its client's User-Agent suffix and
	// the source of the events it records.
	ControllerName = "containerrecreaterequest-agent"

	// Workers is how many pods are worked on at once. Stopping a container blocks a worker
	// for the container's grace period, so there are many.
	Workers = 32

	// podIndex indexes requests by "<namespace>/<spec.podName>", which is also the queue key:
	// all requests of one pod are handled by one sync, so that only one runs at a time.
	podIndex = "pod"

	// A pod's sync is retried after 500 ms, doubling up to a cap between 50 and 55 s (chosen
	// once per process, so that the agents of many nodes do not retry in step).
	initialRetryDelay = 500 * time.Millisecond
	maxRetryDelay     = 50 * time.Second
	maxRetryJitter    = 5 * time.Second
)

// Event reasons, the kubelet's, on the pod.
const (
	// KillingReason (Normal): a container is being stopped for a request.
	KillingReason = "Killing"
	// FailedPreStopHookReason (Warning): the container's preStop hook failed; the container
	// is stopped anyway.
	FailedPreStopHookReason = "FailedPreStopHook"
)

// Controller stops, through the CRI, the containers that the active
// ContainerRecreateRequests of this node name, and reports their progress.
type Controller struct {
	client   bosunclientset.Interface
	runtime  controller.RuntimeSource
	recorder record.EventRecorder
	clock    clock.Clock
	// stopper stops containers as the kubelet does, preStop hooks first.
	stopper *containerstop.Stopper

	requests     cache.Indexer
	pods         corelisters.PodLister
	cachesSynced []cache.InformerSynced

	// written holds, by pod key, the resource version of this agent's last write to each
	// of the pod's requests until the informer shows it. Until then the cached request
	// predates the write (its phase or container states are stale), and acting on it would
	// repeat the work the write recorded, such as stopping a container a second time.
	written *expectations.VersionStore

	queue workqueue.TypedRateLimitingInterface[string]
	// syncHandler is syncPod; tests replace it to watch the worker loop.
	syncHandler queue.SyncFunc[string]
}

// New builds the controller from the node agent's context: the agent's informers scoped to
// its node, its runtime, its client and recorder.
func New(ctx context.Context, cc *controller.Context) (controller.Controller, error) {
	return NewController(ctx, cc.ContainerRecreateRequests.Apps().V1beta1().ContainerRecreateRequests(),
		cc.Pods.Core().V1().Pods(), cc.Runtime, cc.BosunClient, cc.Recorder)
}

// NewController builds the controller on the informer of this node's active requests and
// the informer of this node's pods (whose cached copy names the pod in events). runtime
// hands out the CRI connection; client writes request status; events go through recorder.
// Of the options it reads the clock and the queue wrapper.
func NewController(ctx context.Context, requests appsinformers.ContainerRecreateRequestInformer, pods coreinformers.PodInformer,
	runtime controller.RuntimeSource, client bosunclientset.Interface, recorder record.EventRecorder, opts ...options.Option) (*Controller, error) {
	settings := options.Apply(opts)
	if err := requests.Informer().AddIndexers(cache.Indexers{podIndex: indexByPod}); err != nil {
		return nil, fmt.Errorf("adding the pod index of ContainerRecreateRequests: %w", err)
	}
	c := &Controller{
		client:       client,
		runtime:      runtime,
		recorder:     recorder,
		clock:        settings.Clock,
		stopper:      containerstop.NewStopper(settings.Clock),
		requests:     requests.Informer().GetIndexer(),
		pods:         pods.Lister(),
		cachesSynced: []cache.InformerSynced{requests.Informer().HasSynced, pods.Informer().HasSynced},
		queue:        settings.WrapQueue(queue.NewJittered[string](queue.NameContainerRecreateRequestAgent, initialRetryDelay, maxRetryDelay, maxRetryJitter)),
	}
	c.written = expectations.NewVersionStoreWithTimeout(settings.Clock, c.cachedVersion, writtenVersionWait)
	c.syncHandler = c.syncPod
	if err := informers.AddHandlers(ctx, requests.Informer(), "ContainerRecreateRequest",
		informers.Handlers{Add: c.addRequest, Update: c.updateRequest, Delete: c.deleteRequest}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run waits for the caches to sync, then works on pods with Workers workers until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	queue.RunController(ctx, ControllerName, c.queue, Workers, c.cachesSynced, c.syncHandler)
}

// indexByPod is the podIndex function.
func indexByPod(obj any) ([]string, error) {
	crr, ok := obj.(*appsv1beta1.ContainerRecreateRequest)
	if !ok {
		return nil, nil
	}
	return []string{podKey(crr)}, nil
}

// podKey is the queue key of crr's pod.
func podKey(crr *appsv1beta1.ContainerRecreateRequest) string {
	return queue.KeyForRef(crr.Namespace, crr.Spec.PodName)
}

func (c *Controller) addRequest(ctx context.Context, obj any) {
	crr, ok := obj.(*appsv1beta1.ContainerRecreateRequest)
	if !ok {
		return
	}
	klog.FromContext(ctx).V(4).Info("ContainerRecreateRequest added", "containerRecreateRequest", klog.KObj(crr), "pod", podKey(crr))
	c.queue.Add(podKey(crr))
}

// updateRequest queues the pod on every change, finished requests included: once one
// request of a pod finishes, the next one waiting for the pod can start, and an event that
// queued nothing would leave it waiting (OpenKruise issues #1058, #1626).
func (c *Controller) updateRequest(ctx context.Context, _, cur any) {
	crr, ok := cur.(*appsv1beta1.ContainerRecreateRequest)
	if !ok {
		return
	}
	klog.FromContext(ctx).V(5).Info("ContainerRecreateRequest updated", "containerRecreateRequest", klog.KObj(crr),
		"phase", crr.Status.Phase, "resourceVersion", crr.ResourceVersion)
	c.queue.Add(podKey(crr))
}

// deleteRequest forgets what this agent wrote to the request and queues its pod, whose next
// request may now start. A request leaves this node's informer when it is deleted and also
// when the manager removes its active label after completion. obj may be a tombstone.
func (c *Controller) deleteRequest(ctx context.Context, obj any) {
	crr, ok := queue.FromTombstone[*appsv1beta1.ContainerRecreateRequest](obj)
	if !ok {
		utilruntime.HandleErrorWithContext(ctx, nil, "ContainerRecreateRequest event carries an unexpected object", "type", fmt.Sprintf("%T", obj))
		return
	}
	klog.FromContext(ctx).V(4).Info("ContainerRecreateRequest gone from this node's active requests", "containerRecreateRequest", klog.KObj(crr))
	c.written.Gone(podKey(crr), crr)
	c.queue.Add(podKey(crr))
}

// writtenVersionWait is how long a request whose cached copy is older than this agent's
// last write to it holds its pod back. After that the write is taken as lost or overtaken.
const writtenVersionWait = 10 * time.Second

// cachedVersion is the UID and resource version of the request the informer holds under
// namespace and name (expectations.CachedVersion).
func (c *Controller) cachedVersion(namespace, name string) (types.UID, string, bool) {
	obj, exists, err := c.requests.GetByKey(cache.NewObjectName(namespace, name).String())
	if err != nil || !exists {
		return "", "", false
	}
	crr, ok := obj.(*appsv1beta1.ContainerRecreateRequest)
	if !ok {
		return "", "", false
	}
	return crr.UID, crr.ResourceVersion, true
}
