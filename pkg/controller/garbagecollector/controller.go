package garbagecollector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/gcgraph"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

const (
	// ControllerName is the collector's canonical name and the source component of the
	// events it records.
	ControllerName = "garbage-collector-controller"

	// DiscoveryResyncPeriod is how often the monitors are brought in line with the
	// resources discovery reports.
	DiscoveryResyncPeriod = 30 * time.Second

	// MonitorSyncTimeout bounds every wait for the monitors to sync: at start-up, before the
	// workers start, and after each change of monitors. The collector works on whatever it
	// has once it passes, so that one resource that never syncs cannot stop collection of
	// all the others.
	MonitorSyncTimeout = 30 * time.Second

	// graphPath is the debug endpoint's one page, relative to the controller's prefix.
	graphPath = "/graph"
)

// The keys of the options only the collector reads.
type (
	monitorSyncTimeoutKey struct{}
	queueWrappersKey      struct{}
)

// withMonitorSyncTimeout bounds the waits for the monitors to sync by d instead of
// MonitorSyncTimeout (also kept when d is zero or negative); tests shorten it.
func withMonitorSyncTimeout(d time.Duration) options.Option {
	return options.Local(monitorSyncTimeoutKey{}, d)
}

// queueWrappers are what the collector passes each of its work queues through once it has
// built them, as options.WithQueueWrapper does for a controller with one queue of string
// keys, which the collector's queues are not. A nil field leaves its queue alone.
type queueWrappers struct {
	graphChanges    func(workqueue.TypedRateLimitingInterface[*graphChange]) workqueue.TypedRateLimitingInterface[*graphChange]
	attemptToDelete func(workqueue.TypedRateLimitingInterface[*gcgraph.Node]) workqueue.TypedRateLimitingInterface[*gcgraph.Node]
	attemptToOrphan func(workqueue.TypedRateLimitingInterface[*gcgraph.Node]) workqueue.TypedRateLimitingInterface[*gcgraph.Node]
}

// withQueueWrappers makes the collector pass its work queues through wrappers; tests put
// recorders in front of them.
func withQueueWrappers(wrappers queueWrappers) options.Option {
	return options.Local(queueWrappersKey{}, wrappers)
}

// wrapQueue returns q passed through wrap; q itself when wrap is nil.
func wrapQueue[T comparable](wrap func(workqueue.TypedRateLimitingInterface[T]) workqueue.TypedRateLimitingInterface[T],
	q workqueue.TypedRateLimitingInterface[T]) workqueue.TypedRateLimitingInterface[T] {
	if wrap == nil {
		return q
	}
	return wrap(q)
}

// SharedInformerLookup returns the informer another controller of the process already
// runs for resource, so that the collector shares its cache rather than building a second
// one. ok is false for resources no one else watches; the collector watches those
// metadata-only. The process starts the informers it returns.
type SharedInformerLookup func(resource schema.GroupVersionResource) (informer cache.SharedIndexInformer, ok bool)

// Controller is the garbage collector.
type Controller struct {
	metadataClient metadata.Interface
	discovery      discovery.ServerResourcesInterface
	mapper         meta.ResettableRESTMapper
	recorder       record.EventRecorder

	// graph is written only by the graph builder (processGraphChange); workers read it.
	graph *gcgraph.UIDToNode
	// absentOwners remembers owners verified not to exist, so that the dependents of a
	// deleted owner do not each cost a GET of it.
	absentOwners *gcgraph.AbsentOwnerCache

	monitors *monitorSet

	graphChanges    workqueue.TypedRateLimitingInterface[*graphChange]
	attemptToDelete workqueue.TypedRateLimitingInterface[*gcgraph.Node]
	attemptToOrphan workqueue.TypedRateLimitingInterface[*gcgraph.Node]

	// resyncPeriod and syncTimeout are DiscoveryResyncPeriod and MonitorSyncTimeout; tests
	// shorten syncTimeout with withMonitorSyncTimeout.
	resyncPeriod time.Duration
	syncTimeout  time.Duration
}

// NewController builds a garbage collector.
//
// Monitors watch each deletable resource through sharedInformers when it knows the
// resource and through metadataInformers otherwise; they are created and started only
// once informersStarted is closed (the process has started its informers). Reads, patches
// and deletes go through metadataClient, kinds are mapped to resources by mapper, which
// the collector resets when the served resources change, and discoveryClient lists the
// resources. Warning events are recorded through recorder, whose source should be
// ControllerName. ignoredResources are never watched nor collected, in addition to
// events and events.k8s.io events, which always are. Of the options it reads only its
// own, which tests use: withMonitorSyncTimeout and withQueueWrappers.
func NewController(ctx context.Context,
	metadataInformers metadatainformer.SharedInformerFactory, sharedInformers SharedInformerLookup, informersStarted <-chan struct{},
	metadataClient metadata.Interface, discoveryClient discovery.ServerResourcesInterface, mapper meta.ResettableRESTMapper,
	recorder record.EventRecorder, ignoredResources []schema.GroupResource, opts ...options.Option) (*Controller, error) {
	settings := options.Apply(opts)
	switch {
	case metadataInformers == nil:
		return nil, errors.New("building the garbage collector: no metadata informer factory")
	case metadataClient == nil || discoveryClient == nil || mapper == nil:
		return nil, errors.New("building the garbage collector: a metadata client, a discovery client and a REST mapper are required")
	case recorder == nil:
		return nil, errors.New("building the garbage collector: no event recorder")
	}
	if sharedInformers == nil {
		sharedInformers = func(schema.GroupVersionResource) (cache.SharedIndexInformer, bool) { return nil, false }
	}
	ignored := map[schema.GroupResource]bool{
		{Group: "", Resource: "events"}:              true,
		{Group: "events.k8s.io", Resource: "events"}: true,
	}
	for _, gr := range ignoredResources {
		ignored[gr] = true
	}
	wrappers, _ := options.LocalValue[queueWrappers](settings, queueWrappersKey{})
	c := &Controller{
		metadataClient:  metadataClient,
		discovery:       discoveryClient,
		mapper:          mapper,
		recorder:        recorder,
		graph:           gcgraph.NewUIDToNode(),
		absentOwners:    gcgraph.NewAbsentOwnerCache(gcgraph.AbsentOwnerCacheSize),
		graphChanges:    wrapQueue(wrappers.graphChanges, queue.New[*graphChange](queue.NameGarbageCollectorGraphChanges)),
		attemptToDelete: wrapQueue(wrappers.attemptToDelete, queue.New[*gcgraph.Node](queue.NameGarbageCollectorAttemptDelete)),
		attemptToOrphan: wrapQueue(wrappers.attemptToOrphan, queue.New[*gcgraph.Node](queue.NameGarbageCollectorAttemptOrphan)),
		resyncPeriod:    DiscoveryResyncPeriod,
		syncTimeout:     MonitorSyncTimeout,
	}
	if d, ok := options.LocalValue[time.Duration](settings, monitorSyncTimeoutKey{}); ok && d > 0 {
		c.syncTimeout = d
	}
	c.monitors = &monitorSet{
		metadataInformers: metadataInformers,
		sharedInformers:   sharedInformers,
		informersStarted:  informersStarted,
		ignored:           ignored,
		monitors:          map[schema.GroupVersionResource]*monitor{},
		handlers:          c.monitorHandlers,
	}
	klog.FromContext(ctx).V(4).Info("Garbage collector built", "ignoredResources", len(ignored))
	registerMetrics()
	return c, nil
}

// Run starts the monitors and the graph builder once the process has started its
// informers, waits up to the monitor sync timeout for the monitors, then runs workers
// attempt-to-delete and workers attempt-to-orphan workers until ctx ends; the discovery
// resync loop runs alongside from the start. It returns once every goroutine it started
// has stopped. Events flow through the recorder given to NewController, whose broadcaster
// the caller runs.
//
// The shape differs from queue.RunController because the collector has three queues and
// its start-up wait must not block: a monitor that never syncs only delays the workers.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx).WithValues("controller", ControllerName)
	ctx = klog.NewContext(ctx, logger)
	logger.Info("Controller starting", "workers", workers)
	defer logger.Info("Controller stopped")
	defer c.shutDownQueues()

	select {
	case <-c.monitors.informersStarted:
	case <-ctx.Done():
		return
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	// Handlers go before the queues shut down: a shared informer outlives the collector.
	defer c.monitors.removeAll(ctx)

	c.monitors.run(ctx)
	c.syncMonitors(ctx, false)
	wg.Go(func() {
		queue.RunWorkers(ctx, c.graphChanges, 1, c.processGraphChange)
	})
	wg.Go(func() {
		c.resyncMonitorsPeriodically(ctx)
	})

	synced := c.waitForMonitors(ctx)
	if ctx.Err() != nil {
		return
	}
	if synced {
		logger.Info("all resource monitors have synced")
	} else {
		logger.Info("not all resource monitors could be synced, proceeding anyways", "unsynced", c.monitors.unsynced())
	}
	wg.Go(func() {
		queue.RunWorkers(ctx, c.attemptToDelete, workers, c.attemptToDeleteWorker)
	})
	wg.Go(func() {
		queue.RunWorkers(ctx, c.attemptToOrphan, workers, c.attemptToOrphanWorker)
	})
	<-ctx.Done()
}

func (c *Controller) shutDownQueues() {
	c.graphChanges.ShutDown()
	c.attemptToDelete.ShutDown()
	c.attemptToOrphan.ShutDown()
}

// IsSynced reports whether there is at least one monitor and every monitor has delivered
// the initial list of its resource.
func (c *Controller) IsSynced(ctx context.Context) bool {
	return c.monitors.isSynced(ctx)
}

// waitForMonitors waits up to the sync timeout for IsSynced and reports whether it became
// true.
func (c *Controller) waitForMonitors(ctx context.Context) bool {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, c.syncTimeout, true, func(ctx context.Context) (bool, error) {
		return c.IsSynced(ctx), nil
	})
	return err == nil
}

// HealthCheck reports the collector healthy while it is built: a monitor that cannot sync
// is a problem of one resource, not a reason to restart the process.
func (c *Controller) HealthCheck(*http.Request) error {
	return nil
}

// DebuggingHandler serves the ownership graph in Graphviz DOT at /graph (relative to the
// prefix the process mounts it under). Repeated ?uid= parameters limit the output to the
// nodes reachable from those UIDs through owners and dependents. Every other path is 404.
func (c *Controller) DebuggingHandler() http.Handler {
	return http.HandlerFunc(c.serveGraph)
}

func (c *Controller) serveGraph(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != graphPath {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var uids []types.UID
	for _, uid := range r.URL.Query()["uid"] {
		uids = append(uids, types.UID(uid))
	}
	// Rendered to a buffer first, so that a failure becomes a 500 rather than half a graph.
	var body bytes.Buffer
	if err := gcgraph.WriteDOT(&body, c.graph, uids...); err != nil {
		http.Error(w, fmt.Sprintf("rendering the graph: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/vnd.graphviz")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body.Bytes())
}
