package nodeimage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	appsinformers "github.com/bosun-dev/client-go/informers/externalversions/apps/v1beta1"
	appslisters "github.com/bosun-dev/client-go/listers/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

const (
	// ControllerName is the controller's canonical name and the source component of the
	// events it records.
	ControllerName = "nodeimage-controller"

	// DefaultCreationDelay is how long a node must have been Ready before its NodeImage is
	// created.
	DefaultCreationDelay = 30 * time.Second
	// DefaultResponseTimeout is how long after a tag's createdAt the agent has to report on
	// it before the manager fails it.
	DefaultResponseTimeout = 10 * time.Minute

	// minRequeueDelay and requeueJitter bound how soon a node is looked at again for a
	// timer: never sooner than minRequeueDelay plus a random part of requeueJitter.
	minRequeueDelay = 3 * time.Second
	requeueJitter   = 2 * time.Second

	// secretCheckInterval is how often, at most, the Secrets a NodeImage references are
	// looked up.
	secretCheckInterval = time.Minute
)

// Event reasons, OpenKruise's.
const (
	// PullImageFailedReason (Warning, on the NodeImage and every owner of the tag): the
	// pull of a tag failed; here, the agent never answered or the deadline passed.
	PullImageFailedReason = "PullImageFailed"
)

// Messages of the failures the manager writes into tag statuses, OpenKruise's.
const (
	NotRespondedMessage     = "node has not responded for a long time"
	DeadlineExceededMessage = "pulling exceeds the activeDeadlineSeconds"
)

// The keys of the options only this controller reads.
type (
	creationDelayKey   struct{}
	responseTimeoutKey struct{}
	requeueJitterKey   struct{}
)

// WithCreationDelay makes the controller create a node's NodeImage once the node has been
// Ready for d (default DefaultCreationDelay); zero creates it as soon as the node is Ready.
func WithCreationDelay(d time.Duration) options.Option {
	return options.Local(creationDelayKey{}, d)
}

// WithResponseTimeout gives the node agent d after a tag's createdAt to report on it
// before the controller fails the tag (default DefaultResponseTimeout, also used when d is
// zero or negative).
func WithResponseTimeout(d time.Duration) options.Option {
	return options.Local(responseTimeoutKey{}, d)
}

// withRequeueJitter makes the controller take the random part of its requeue delays from
// jitter instead of a random source, so that tests can know the delays.
func withRequeueJitter(jitter func() time.Duration) options.Option {
	return options.Local(requeueJitterKey{}, jitter)
}

// Controller keeps one NodeImage per node, in line with the node and with the jobs and
// secrets its tags reference.
type Controller struct {
	client      kubernetes.Interface
	bosunClient bosunclientset.Interface
	recorder    record.EventRecorder
	clock       clock.Clock

	creationDelay   time.Duration
	responseTimeout time.Duration

	nodes        corelisters.NodeLister
	nodeImages   appslisters.NodeImageLister
	jobs         appslisters.ImagePullJobLister
	cachesSynced []cache.InformerSynced

	// secretsMu guards secretsChecked: by node name, when its NodeImage's secret references
	// were last looked up.
	secretsMu      sync.Mutex
	secretsChecked map[string]time.Time

	queue workqueue.TypedRateLimitingInterface[string]
	// syncHandler is syncNodeImage; tests replace it to watch the worker loop.
	syncHandler queue.SyncFunc[string]
	// jitter returns the random part of a requeue delay, in [0, requeueJitter); tests fix it
	// with withRequeueJitter.
	jitter func() time.Duration
}

// NewController builds the NodeImage controller on the given informers. jobs is optional:
// nil when the API server does not serve ImagePullJobs, and owner references to them are
// then left alone. client reads Secrets (live, never cached) and bosunClient writes
// NodeImages and reads ImagePullJobs the cache does not know. Events are recorded through
// recorder, whose source should be ControllerName. Of the options it reads the clock, the
// queue wrapper and its own WithCreationDelay and WithResponseTimeout.
func NewController(ctx context.Context,
	nodes coreinformers.NodeInformer, nodeImages appsinformers.NodeImageInformer, jobs appsinformers.ImagePullJobInformer,
	client kubernetes.Interface, bosunClient bosunclientset.Interface, recorder record.EventRecorder,
	opts ...options.Option) (*Controller, error) {
	settings := options.Apply(opts)
	c := &Controller{
		client:          client,
		bosunClient:     bosunClient,
		recorder:        recorder,
		clock:           settings.Clock,
		creationDelay:   DefaultCreationDelay,
		responseTimeout: DefaultResponseTimeout,
		nodes:           nodes.Lister(),
		nodeImages:      nodeImages.Lister(),
		cachesSynced:    []cache.InformerSynced{nodes.Informer().HasSynced, nodeImages.Informer().HasSynced},
		secretsChecked:  map[string]time.Time{},
		queue:           settings.WrapQueue(queue.New[string](queue.NameNodeImage)),
		jitter:          func() time.Duration { return rand.N(requeueJitter) },
	}
	c.syncHandler = c.syncNodeImage
	if d, ok := options.LocalValue[time.Duration](settings, creationDelayKey{}); ok {
		c.creationDelay = d
	}
	if d, ok := options.LocalValue[time.Duration](settings, responseTimeoutKey{}); ok && d > 0 {
		c.responseTimeout = d
	}
	if jitter, ok := options.LocalValue[func() time.Duration](settings, requeueJitterKey{}); ok && jitter != nil {
		c.jitter = jitter
	}
	if err := informers.AddHandlers(ctx, nodes.Informer(), "Node",
		informers.Handlers{Add: c.addNode, Update: c.updateNode, Delete: c.deleteNode}); err != nil {
		return nil, err
	}
	if err := informers.AddHandlers(ctx, nodeImages.Informer(), "NodeImage",
		informers.Handlers{Add: c.addNodeImage, Update: c.updateNodeImage, Delete: c.deleteNodeImage}); err != nil {
		return nil, err
	}
	if jobs != nil {
		c.jobs = jobs.Lister()
		c.cachesSynced = append(c.cachesSynced, jobs.Informer().HasSynced)
		if err := informers.AddHandlers(ctx, jobs.Informer(), "ImagePullJob", informers.Handlers{Delete: c.deleteJob}); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run waits for the caches to sync, then processes nodes with workers workers until ctx
// ends. It returns after the queue is shut down and every worker has stopped.
func (c *Controller) Run(ctx context.Context, workers int) {
	queue.RunController(ctx, ControllerName, c.queue, workers, c.cachesSynced, c.syncHandler)
}

func (c *Controller) addNode(ctx context.Context, obj any) {
	if node, ok := obj.(*corev1.Node); ok {
		klog.FromContext(ctx).V(5).Info("Node added", "node", klog.KObj(node))
		c.queue.Add(node.Name)
	}
}

// updateNode queues the node when something the NodeImage depends on changed: its labels,
// its deletion, or its Ready condition. Status heartbeats alone queue nothing.
func (c *Controller) updateNode(ctx context.Context, old, cur any) {
	oldNode, ok1 := old.(*corev1.Node)
	curNode, ok2 := cur.(*corev1.Node)
	if !ok1 || !ok2 {
		return
	}
	oldReady, curReady := readyCondition(oldNode), readyCondition(curNode)
	readyChanged := (oldReady == nil) != (curReady == nil) ||
		(curReady != nil && (oldReady.Status != curReady.Status || !oldReady.LastTransitionTime.Equal(&curReady.LastTransitionTime)))
	if oldNode.UID == curNode.UID && !readyChanged &&
		labels.Equals(oldNode.Labels, curNode.Labels) &&
		(oldNode.DeletionTimestamp == nil) == (curNode.DeletionTimestamp == nil) {
		return
	}
	klog.FromContext(ctx).V(5).Info("Node updated", "node", klog.KObj(curNode))
	c.queue.Add(curNode.Name)
}

func (c *Controller) deleteNode(ctx context.Context, obj any) {
	node, ok := queue.FromTombstone[*corev1.Node](obj)
	if !ok {
		utilruntime.HandleErrorWithContext(ctx, nil, "Node event carries an unexpected object", "type", fmt.Sprintf("%T", obj))
		return
	}
	klog.FromContext(ctx).V(4).Info("Node deleted", "node", klog.KObj(node))
	c.queue.Add(node.Name)
}

func (c *Controller) addNodeImage(ctx context.Context, obj any) {
	if ni, ok := obj.(*appsv1beta1.NodeImage); ok {
		klog.FromContext(ctx).V(5).Info("NodeImage added", "nodeImage", klog.KObj(ni))
		c.queue.Add(ni.Name)
	}
}

// updateNodeImage queues the node on every change of its NodeImage, status writes of the
// agent included: statuses of dropped tags and the counts follow them.
func (c *Controller) updateNodeImage(ctx context.Context, old, cur any) {
	oldNI, ok1 := old.(*appsv1beta1.NodeImage)
	curNI, ok2 := cur.(*appsv1beta1.NodeImage)
	if !ok1 || !ok2 || oldNI.ResourceVersion == curNI.ResourceVersion {
		return
	}
	klog.FromContext(ctx).V(5).Info("NodeImage updated", "nodeImage", klog.KObj(curNI))
	c.queue.Add(curNI.Name)
}

func (c *Controller) deleteNodeImage(ctx context.Context, obj any) {
	ni, ok := queue.FromTombstone[*appsv1beta1.NodeImage](obj)
	if !ok {
		utilruntime.HandleErrorWithContext(ctx, nil, "NodeImage event carries an unexpected object", "type", fmt.Sprintf("%T", obj))
		return
	}
	klog.FromContext(ctx).V(4).Info("NodeImage deleted", "nodeImage", klog.KObj(ni))
	c.forgetSecretCheck(ni.Name)
	c.queue.Add(ni.Name)
}

// deleteJob queues the nodes whose NodeImage has a tag the deleted ImagePullJob owns, so
// that its references (and the tags it alone asked for) go.
func (c *Controller) deleteJob(ctx context.Context, obj any) {
	job, ok := queue.FromTombstone[*appsv1beta1.ImagePullJob](obj)
	if !ok {
		utilruntime.HandleErrorWithContext(ctx, nil, "ImagePullJob event carries an unexpected object", "type", fmt.Sprintf("%T", obj))
		return
	}
	all, err := c.nodeImages.List(labels.Everything())
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Listing NodeImages for a deleted ImagePullJob", "imagePullJob", klog.KObj(job))
		return
	}
	queued := 0
	for _, ni := range all {
		if ownsAnyTag(ni, job.UID) {
			c.queue.Add(ni.Name)
			queued++
		}
	}
	klog.FromContext(ctx).V(4).Info("ImagePullJob deleted", "imagePullJob", klog.KObj(job), "nodeImages", queued)
}

// requeueAfter queues the node again after delay, but never sooner than minRequeueDelay
// plus a random jitter.
func (c *Controller) requeueAfter(name string, delay time.Duration) {
	floor := minRequeueDelay + c.jitter()
	if delay < floor {
		delay = floor
	}
	c.queue.AddAfter(name, delay)
}

// readyCondition returns the node's Ready condition, or nil.
func readyCondition(node *corev1.Node) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// labelsEqual compares label maps, a nil map equal to an empty one.
func labelsEqual(a, b map[string]string) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}
