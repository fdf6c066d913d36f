package containerrecreaterequest

import (
	"context"
	"fmt"
	"reflect"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	crrinformers "github.com/bosun-dev/client-go/informers/externalversions/apps/v1beta1"
	crrlisters "github.com/bosun-dev/client-go/listers/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/controller/refmanager"
)

const (
	// ControllerName is the controller's canonical name.
	ControllerName = "containerrecreaterequest-controller"

	// ResponseTimeout is how long after its creation a request may stay unpicked (empty
	// phase) before it is given up: the node's agent is not running or not answering.
	ResponseTimeout = 60 * time.Second

	// podUIDIndex indexes requests by their pod-uid label, so that a pod's event finds its
	// requests without listing the namespace.
	podUIDIndex = "crr.apps.kruise.io/pod-uid"
)

// The messages of a request the controller completes, OpenKruise's.
const (
	MessagePodGone          = "pod has gone"
	MessageNoResponse       = "daemon has not responded for a long time"
	MessageDeadlineExceeded = "recreating has exceeded the activeDeadlineSeconds"
)

// Controller is the manager-side ContainerRecreateRequest controller.
type Controller struct {
	client      kubernetes.Interface
	bosunClient bosunclientset.Interface
	clock       clock.Clock

	requests        crrlisters.ContainerRecreateRequestLister
	requestsIndexer cache.Indexer
	pods            corelisters.PodLister
	cachesSynced    []cache.InformerSynced

	queue workqueue.TypedRateLimitingInterface[string]
	// syncHandler is syncRequest; tests replace it to watch the worker loop.
	syncHandler queue.SyncFunc[string]

	// podEvents decides which requests a pod event concerns (see requestPodHandlers).
	podEvents refmanager.PodHandlers[*appsv1beta1.ContainerRecreateRequest]
}

// NewController builds the controller on the given informers. client writes pod status
// (the KruisePodReady condition), bosunClient the requests. Of the options it reads the
// clock and the queue wrapper.
func NewController(ctx context.Context, requests crrinformers.ContainerRecreateRequestInformer, pods coreinformers.PodInformer,
	client kubernetes.Interface, bosunClient bosunclientset.Interface, opts ...options.Option) (*Controller, error) {
	settings := options.Apply(opts)
	c := &Controller{
		client:          client,
		bosunClient:     bosunClient,
		clock:           settings.Clock,
		requests:        requests.Lister(),
		requestsIndexer: requests.Informer().GetIndexer(),
		pods:            pods.Lister(),
		cachesSynced:    []cache.InformerSynced{requests.Informer().HasSynced, pods.Informer().HasSynced},
		queue:           settings.WrapQueue(queue.New[string](queue.NameContainerRecreateRequest)),
	}
	c.syncHandler = c.syncRequest
	c.podEvents = c.requestPodHandlers()
	if err := addPodUIDIndex(requests.Informer()); err != nil {
		return nil, err
	}
	if err := informers.AddHandlers(ctx, requests.Informer(), "ContainerRecreateRequest", informers.Handlers{
		Add:    c.addRequest,
		Update: c.updateRequest,
	}); err != nil {
		return nil, err
	}
	if err := informers.AddHandlers(ctx, pods.Informer(), "Pod", informers.Handlers{
		Add:    c.addPod,
		Update: c.updatePod,
		Delete: c.deletePod,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run waits for the caches to sync, then processes requests with workers workers until ctx
// ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	queue.RunController(ctx, ControllerName, c.queue, workers, c.cachesSynced, c.syncHandler)
}

func addPodUIDIndex(informer cache.SharedIndexInformer) error {
	err := informers.AddIndex(informer, podUIDIndex, func(obj any) ([]string, error) {
		crr, ok := obj.(*appsv1beta1.ContainerRecreateRequest)
		if !ok {
			return nil, nil
		}
		if uid := crr.Labels[appsv1beta1.ContainerRecreateRequestPodUIDKey]; uid != "" {
			return []string{uid}, nil
		}
		return nil, nil
	})
	if err != nil {
		return fmt.Errorf("indexing ContainerRecreateRequests: %w", err)
	}
	return nil
}

func (c *Controller) enqueue(crr *appsv1beta1.ContainerRecreateRequest) {
	c.queue.Add(queue.KeyForRef(crr.Namespace, crr.Name))
}

func (c *Controller) addRequest(ctx context.Context, obj any) {
	crr, ok := obj.(*appsv1beta1.ContainerRecreateRequest)
	if !ok {
		return
	}
	klog.FromContext(ctx).V(4).Info("ContainerRecreateRequest added", "containerRecreateRequest", klog.KObj(crr))
	c.enqueue(crr)
}

func (c *Controller) updateRequest(ctx context.Context, _, cur any) {
	crr, ok := cur.(*appsv1beta1.ContainerRecreateRequest)
	if !ok {
		return
	}
	klog.FromContext(ctx).V(5).Info("ContainerRecreateRequest updated", "containerRecreateRequest", klog.KObj(crr))
	c.enqueue(crr)
}

func (c *Controller) addPod(ctx context.Context, obj any) { c.podEvents.Add(ctx, obj) }

// updatePod queues the pod's unfinished requests when its deletion starts or its container
// statuses change; other changes concern no request.
func (c *Controller) updatePod(ctx context.Context, old, cur any) { c.podEvents.Update(ctx, old, cur) }

func (c *Controller) deletePod(ctx context.Context, obj any) { c.podEvents.Delete(ctx, obj) }

// requestPodHandlers says how pod events concern requests: every event of a pod queues
// its unfinished requests, found through podUIDIndex.
func (c *Controller) requestPodHandlers() refmanager.PodHandlers[*appsv1beta1.ContainerRecreateRequest] {
	return refmanager.PodHandlers[*appsv1beta1.ContainerRecreateRequest]{
		Kind:      "ContainerRecreateRequest",
		Selecting: c.unfinishedRequestsOf,
		UpdateConcerns: func(old, cur *corev1.Pod) bool {
			deletionStarted := old.DeletionTimestamp == nil && cur.DeletionTimestamp != nil
			return deletionStarted || !reflect.DeepEqual(old.Status.ContainerStatuses, cur.Status.ContainerStatuses)
		},
		Enqueue: func(key string) { c.queue.Add(key) },
	}
}

// unfinishedRequestsOf returns the requests on pod that have not completed.
func (c *Controller) unfinishedRequestsOf(ctx context.Context, pod *corev1.Pod) []*appsv1beta1.ContainerRecreateRequest {
	objs, err := c.requestsIndexer.ByIndex(podUIDIndex, string(pod.UID))
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Listing the ContainerRecreateRequests of a pod", "pod", klog.KObj(pod))
		return nil
	}
	var unfinished []*appsv1beta1.ContainerRecreateRequest
	for _, obj := range objs {
		if crr, ok := obj.(*appsv1beta1.ContainerRecreateRequest); ok && crr.Status.CompletionTime == nil {
			unfinished = append(unfinished, crr)
		}
	}
	return unfinished
}
