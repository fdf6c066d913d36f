package nodeimage

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
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
	"github.com/bosun-dev/bosun/pkg/daemon/controller"
	"github.com/bosun-dev/bosun/pkg/daemon/cri/containerdprogress"
)

const (
	// ControllerName is the controller's canonical name, its client's User-Agent suffix
	// and the source component of the events it records.
	ControllerName = "nodeimage-agent"
)

// Event reasons, OpenKruise's.
const (
	// PullImageSucceedReason (Normal, on the NodeImage): a tag was pulled.
	PullImageSucceedReason = "PullImageSucceed"
	// PullImageFailedReason (Warning, on the NodeImage and on each owner of the tag): every
	// attempt to pull a tag failed, or its deadline passed.
	PullImageFailedReason = "PullImageFailed"
)

const (
	// Per-key retry backoff of failed syncs: 500 ms doubling to a cap of 50 s plus up to
	// 5 s, the cap drawn once, so that the agents of many nodes failing on the same cause
	// do not retry in lockstep.
	syncRetryBase      = 500 * time.Millisecond
	syncRetryCap       = 50 * time.Second
	syncRetryCapJitter = 5 * time.Second

	// While a tag is unfinished the status is looked at again every 3–5 s; once all are
	// finished every 20–30 min.
	unfinishedRequeue       = 3 * time.Second
	unfinishedRequeueJitter = 2 * time.Second
	finishedRequeue         = 20 * time.Minute
	finishedRequeueJitter   = 10 * time.Minute

	// An unchanged status is still rewritten every 12 h plus up to 1 h.
	statusRefreshPeriod = 12 * time.Hour
	statusRefreshJitter = time.Hour
	// Status writes are limited to 0.5 per second, burst 5: busy nodes pulling many tags
	// would otherwise write on every step of every pull.
	statusWriteQPS   = 0.5
	statusWriteBurst = 5

	// secretCacheTTL is how long a pull secret read from the API server is reused.
	secretCacheTTL = time.Minute
)

// Config is what the controller needs besides its informer and clients.
type Config struct {
	// NodeName is the agent's node, and the name of its NodeImage.
	NodeName string
	// SecretsNamespace is the only namespace pull secrets are read from.
	SecretsNamespace string
	// MaxParallelPulls bounds the tags pulled at once; 0 is unlimited.
	MaxParallelPulls int
	// Puller pulls images; nil pulls through the CRI with a unary PullImage, which reports
	// no progress between 0 and 100 by itself.
	Puller Puller
	// Progress follows the CRI pulls of a nil Puller to report progress between 0 and 100;
	// nil reports none.
	Progress ProgressWatcher
}

// Controller pulls the images of its node's NodeImage and reports the pulls in its status.
type Controller struct {
	nodeName    string
	bosunClient bosunclientset.Interface
	recorder    record.EventRecorder
	clock       clock.Clock
	runtime     controller.RuntimeSource
	puller      Puller
	secrets     *secretCache
	// slots holds one token per running pull when the node limits parallel pulls; nil
	// when it does not.
	slots chan struct{}

	nodeImages   appslisters.NodeImageLister
	cachesSynced []cache.InformerSynced

	queue workqueue.TypedRateLimitingInterface[string]
	// syncHandler is syncNodeImage; tests replace it to watch the worker loop.
	syncHandler queue.SyncFunc[string]

	// The sync state below is only used by the queue's single worker.

	// pools are the image pools by image name, of the NodeImage whose UID is
	// nodeImageUID.
	pools        map[string]*imagePool
	nodeImageUID types.UID
	writer       statusWriter

	// pulls counts the running tag workers; Run waits for them before it returns.
	pulls sync.WaitGroup
}

// New builds the controller from the node agent's context.
func New(ctx context.Context, cc *controller.Context) (controller.Controller, error) {
	return NewController(ctx, cc.NodeImage.Apps().V1beta1().NodeImages(), cc.KubeClient, cc.BosunClient, cc.Runtime, cc.Recorder,
		Config{NodeName: cc.NodeName, SecretsNamespace: cc.SecretsNamespace, MaxParallelPulls: cc.MaxParallelImagePulls,
			// Where the runtime is containerd, its content store shows the bytes pulled.
			Progress: containerdprogress.NewWatcher()},
		options.WithFeatureGate(cc.FeatureGate))
}

// NewController builds the puller on an informer that sees only this node's NodeImage.
// kubeClient reads pull secrets, bosunClient writes NodeImage status, runtime is the
// container runtime; events are recorded through recorder, whose source should be
// ControllerName. Of the options it reads the clock (retry sleeps, pull timeouts and
// deadlines, status refresh) and the queue wrapper.
func NewController(ctx context.Context, nodeImages appsinformers.NodeImageInformer, kubeClient kubernetes.Interface,
	bosunClient bosunclientset.Interface, runtime controller.RuntimeSource, recorder record.EventRecorder, config Config,
	opts ...options.Option) (*Controller, error) {
	if config.NodeName == "" {
		return nil, errors.New("the NodeImage puller needs the node name")
	}
	settings := options.Apply(opts)
	c := &Controller{
		nodeName:     config.NodeName,
		bosunClient:  bosunClient,
		recorder:     recorder,
		clock:        settings.Clock,
		runtime:      runtime,
		puller:       config.Puller,
		secrets:      newSecretCache(kubeClient, config.SecretsNamespace, settings.Clock),
		nodeImages:   nodeImages.Lister(),
		cachesSynced: []cache.InformerSynced{nodeImages.Informer().HasSynced},
		pools:        map[string]*imagePool{},
		writer:       newStatusWriter(settings.Clock),
		queue:        settings.WrapQueue(queue.NewJittered[string](queue.NameNodeImageAgent, syncRetryBase, syncRetryCap, syncRetryCapJitter)),
	}
	if c.puller == nil {
		c.puller = &criPuller{runtime: runtime, watcher: config.Progress}
	}
	if config.MaxParallelPulls > 0 {
		c.slots = make(chan struct{}, config.MaxParallelPulls)
	}
	c.syncHandler = c.syncNodeImage
	if err := informers.AddHandlers(ctx, nodeImages.Informer(), "NodeImage", informers.Handlers{
		Add: c.addNodeImage, Update: c.updateNodeImage, Delete: c.deleteNodeImage,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run waits for the cache to sync, then processes the NodeImage with one worker until ctx
// ends. It returns after every pull has stopped.
func (c *Controller) Run(ctx context.Context) {
	queue.RunController(ctx, ControllerName, c.queue, 1, c.cachesSynced, c.syncHandler)
	// The queue's worker is gone: nothing else touches the pools now.
	c.stopPools()
	c.pulls.Wait()
}

// enqueue asks for a sync of the node's NodeImage once delay has passed; at once when it
// is 0.
func (c *Controller) enqueue(delay time.Duration) {
	if delay <= 0 {
		c.queue.Add(c.nodeName)
		return
	}
	c.queue.AddAfter(c.nodeName, delay)
}

func (c *Controller) addNodeImage(ctx context.Context, obj any) {
	nodeImage, ok := obj.(*appsv1beta1.NodeImage)
	if !ok || nodeImage.Name != c.nodeName {
		return
	}
	klog.FromContext(ctx).V(4).Info("NodeImage added", "nodeImage", klog.KObj(nodeImage))
	c.enqueue(0)
}

// updateNodeImage queues only spec changes: status writes, ours included, would
// otherwise sync after every step of every pull. Timers catch up with status changes
// made by others.
func (c *Controller) updateNodeImage(ctx context.Context, old, cur any) {
	oldImage, ok1 := old.(*appsv1beta1.NodeImage)
	curImage, ok2 := cur.(*appsv1beta1.NodeImage)
	if !ok1 || !ok2 || curImage.Name != c.nodeName {
		return
	}
	if oldImage.UID == curImage.UID && oldImage.Generation == curImage.Generation && apiequality.Semantic.DeepEqual(oldImage.Spec, curImage.Spec) {
		return
	}
	klog.FromContext(ctx).V(4).Info("NodeImage spec changed", "nodeImage", klog.KObj(curImage))
	c.enqueue(0)
}

func (c *Controller) deleteNodeImage(ctx context.Context, obj any) {
	nodeImage, ok := queue.FromTombstone[*appsv1beta1.NodeImage](obj)
	if !ok || nodeImage.Name != c.nodeName {
		return
	}
	klog.FromContext(ctx).V(4).Info("NodeImage deleted", "nodeImage", klog.KObj(nodeImage))
	c.enqueue(0)
}

// nodeImageReference is the NodeImage as the object of events.
func nodeImageReference(nodeImage *appsv1beta1.NodeImage) *corev1.ObjectReference {
	return &corev1.ObjectReference{
		APIVersion: appsv1beta1.SchemeGroupVersion.String(),
		Kind:       "NodeImage",
		Name:       nodeImage.Name,
		UID:        nodeImage.UID,
	}
}

// statusWriter remembers the last status written, to skip writing it again, and limits
// the rate of writes.
type statusWriter struct {
	clock   clock.Clock
	limiter *rate.Limiter
	// last is the status last written (or found on first sight of the NodeImage);
	// refreshAt is when it is written again even if unchanged.
	last      *appsv1beta1.NodeImageStatus
	refreshAt time.Time
}

func newStatusWriter(clk clock.Clock) statusWriter {
	return statusWriter{clock: clk, limiter: rate.NewLimiter(statusWriteQPS, statusWriteBurst)}
}

// observe records status as written now.
func (w *statusWriter) observe(status *appsv1beta1.NodeImageStatus) {
	w.last = status
	w.refreshAt = w.clock.Now().Add(statusRefreshPeriod + rand.N(statusRefreshJitter))
}
