package queue

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/time/rate"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Rate limiter defaults shared by every bosun controller.
const (
	// BaseRetryDelay is the delay after an item's first failure; it doubles per failure.
	BaseRetryDelay = 5 * time.Millisecond
	// MaxRetryDelay caps the per-item exponential backoff.
	MaxRetryDelay = 1000 * time.Second
	// OverallRetryQPS and OverallRetryBurst bound retries across all items, so that many
	// failing items cannot flood the API server.
	OverallRetryQPS   = 10
	OverallRetryBurst = 100
)

// Queue names, of both binaries; each becomes the "name" label of the workqueue_* metrics,
// which dashboards and alerts select on, so a name never changes once released. They all
// live here so that one list says what a metrics user can select.
const (
	// The manager's controllers; the upstream ones keep kube-controller-manager's names.
	NameReplicaSet                    = "replicaset"
	NameDeployment                    = "deployment"
	NameGarbageCollectorAttemptDelete = "garbage_collector_attempt_to_delete"
	NameGarbageCollectorAttemptOrphan = "garbage_collector_attempt_to_orphan"
	NameGarbageCollectorGraphChanges  = "garbage_collector_graph_changes"
	NameAdvancedDaemonSet             = "advanced_daemonset"
	NameCloneSet                      = "cloneset"
	NamePodUnavailableBudget          = "podunavailablebudget"
	NamePodUnavailableBudgetChains    = "podunavailablebudget_chains"
	NameContainerRecreateRequest      = "containerrecreaterequest"
	NameNodeImage                     = "nodeimage"
	NameImagePullJob                  = "imagepulljob"
	NameImageListPullJob              = "imagelistpulljob"
	NamePodReadiness                  = "pod_readiness"
	NameStorageVersionMigrator        = "storage_version_migrator"
	NameContainerLaunchPriority       = "container_launch_priority"
	// The manager's webhook configuration writer.
	NameWebhookConfiguration = "webhook_configuration"
	// bosun-daemon's controllers.
	NameContainerRecreateRequestAgent = "containerrecreaterequest_agent"
	NameNodeImageAgent                = "nodeimage_agent"
	NameContainerMetaAgent            = "containermeta_agent"
)

// WorkerRestartPeriod is how long a worker waits before it is restarted after returning.
const WorkerRestartPeriod = time.Second

// DefaultRateLimiter returns the maximum of a per-item exponential backoff
// (BaseRetryDelay × 2^failures, capped at MaxRetryDelay) and an overall token bucket of
// OverallRetryQPS per second with burst OverallRetryBurst.
func DefaultRateLimiter[T comparable]() workqueue.TypedRateLimiter[T] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[T](BaseRetryDelay, MaxRetryDelay),
		&workqueue.TypedBucketRateLimiter[T]{Limiter: rate.NewLimiter(rate.Limit(OverallRetryQPS), OverallRetryBurst)},
	)
}

// New returns a rate-limited queue named name using DefaultRateLimiter.
func New[T comparable](name string) workqueue.TypedRateLimitingInterface[T] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		DefaultRateLimiter[T](),
		workqueue.TypedRateLimitingQueueConfig[T]{Name: name},
	)
}

// SyncFunc handles one item. A nil error means the item is done; an error requeues it
// with rate limiting.
type SyncFunc[T comparable] func(ctx context.Context, item T) error

// ErrRequeue, returned by a SyncFunc (alone or wrapping the reason), requeues the item with
// rate limiting like any error but logs it only at verbosity 4, however often it comes
// back: the item is not failing, it has to be looked at again later. The garbage collector
// uses it for owners it has not observed yet and for kinds the API server does not serve
// (yet), which would otherwise log an error on every retry. Conflicts and CacheBehindErrors
// need no marker: IsNormalWait recognises them.
var ErrRequeue = errors.New("requeued")

// RunWorkers starts workers goroutines that process q with syncItem and blocks until they have
// all stopped. Workers stop when ctx is cancelled (RunWorkers then shuts q down) or when q
// is shut down by someone else. A worker that returns for any other reason is restarted
// after WorkerRestartPeriod.
func RunWorkers[T comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[T], workers int, syncItem SyncFunc[T]) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		<-ctx.Done()
		q.ShutDown()
	}()

	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			wait.UntilWithContext(ctx, func(ctx context.Context) {
				for ProcessNextItem(ctx, q, syncItem) {
				}
				if q.ShuttingDown() {
					// Stop every worker instead of restarting this one once a second forever.
					cancel()
				}
			}, WorkerRestartPeriod)
		})
	}
	wg.Wait()
}

// ProcessNextItem takes one item from q and syncs it. It returns false once q is shut down.
func ProcessNextItem[T comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[T], syncItem SyncFunc[T]) bool {
	item, quit := q.Get()
	if quit {
		return false
	}
	// Done must run even if syncItem panics, or the item stays "processing" forever.
	defer q.Done(item)

	if err := syncItem(ctx, item); err != nil {
		logSyncError(ctx, item, q.NumRequeues(item), err)
		q.AddRateLimited(item)
		return true
	}
	q.Forget(item)
	klog.FromContext(ctx).V(5).Info("Synced item", "item", item)
	return true
}

// logSyncError logs the error a sync of item returned; failures counts the item's failures
// in a row before this one. A normal wait (IsNormalWait) is logged at verbosity 4 with its
// reason: a conflict or a cache behind the controller's own write is what a busy controller
// meets every few seconds, and an error line for it would bury real failures. A conflict or
// lagging cache that has lasted PersistentWaitRequeues failures is a failure after all;
// ErrRequeue never is, since the sync chose it.
func logSyncError[T comparable](ctx context.Context, item T, failures int, err error) {
	reason, wait := IsNormalWait(err)
	switch {
	case !wait:
		utilruntime.HandleErrorWithContext(ctx, err, "Sync failed; retrying with backoff", "item", item)
	case reason != WaitRequeued && failures >= PersistentWaitRequeues:
		utilruntime.HandleErrorWithContext(ctx, err, "Sync still waiting after many retries; retrying with backoff",
			"item", item, "reason", reason, "failures", failures+1)
	default:
		klog.FromContext(ctx).V(4).Info("Waiting to sync item again", "item", item, "reason", reason, "err", err)
	}
}

// RunController is the body of every controller's Run: it logs the controller's start and
// stop under name, waits for cachesSynced, then processes q with workers workers running
// sync until ctx ends (see RunWorkers). If ctx ends before the caches sync, it shuts q
// down and returns. A panic in it is reported, not swallowed.
func RunController[T comparable](ctx context.Context, name string, q workqueue.TypedRateLimitingInterface[T], workers int,
	cachesSynced []cache.InformerSynced, sync SyncFunc[T]) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx).WithValues("controller", name)
	logger.Info("Controller starting", "workers", workers)
	defer logger.Info("Controller stopped")

	if !cache.WaitForNamedCacheSyncWithContext(ctx, cachesSynced...) {
		q.ShutDown()
		return
	}
	RunWorkers(ctx, q, workers, sync)
}
