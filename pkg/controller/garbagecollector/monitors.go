package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

// deletableVerbs are the verbs the collector needs on a resource: watch it (list, watch)
// and collect it (delete).
var deletableVerbs = []string{"delete", "list", "watch"}

// deletableResources returns the preferred version of every resource discovery reports
// that supports deletableVerbs, minus ignored, with its kind. When discovery fails for
// some groups it returns what it found together with the error
// (discovery.ErrGroupDiscoveryFailed).
func deletableResources(ctx context.Context, client discovery.ServerResourcesInterface, ignored map[schema.GroupResource]bool) (map[schema.GroupVersionResource]schema.GroupVersionKind, error) {
	logger := klog.FromContext(ctx)
	lists, err := client.ServerPreferredResources()
	if err != nil {
		if failed, partial := discovery.GroupDiscoveryFailedErrorGroups(err); partial {
			logger.Info("Failed to discover some API groups", "groups", failed)
		} else {
			logger.Info("Failed to discover the preferred resources", "err", err)
		}
	}
	resources := map[schema.GroupVersionResource]schema.GroupVersionKind{}
	for _, list := range lists {
		if list == nil {
			continue
		}
		gv, parseErr := schema.ParseGroupVersion(list.GroupVersion)
		if parseErr != nil {
			logger.Info("Ignoring a discovered group version that does not parse", "groupVersion", list.GroupVersion, "err", parseErr)
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !sets.New(r.Verbs...).HasAll(deletableVerbs...) {
				continue
			}
			gvr := gv.WithResource(r.Name)
			if ignored[gvr.GroupResource()] {
				continue
			}
			resources[gvr] = gv.WithKind(r.Kind)
		}
	}
	return resources, err
}

// monitor is the collector's view of one resource: an informer and the registration of
// the collector's handlers on it.
type monitor struct {
	kind schema.GroupVersionKind
	// shared is true when the informer belongs to another controller of the process
	// (typed), false for a metadata-only one.
	shared       bool
	informer     cache.SharedIndexInformer
	registration cache.ResourceEventHandlerRegistration
}

// synced reports whether the collector's handlers have received the initial list.
func (m *monitor) synced() bool { return m.registration.HasSynced() }

// monitorSet is the set of monitors, kept in line with discovery by the resync loop and
// read by workers (the caches behind the merge-patch fallback) and IsSynced.
type monitorSet struct {
	metadataInformers metadatainformer.SharedInformerFactory
	sharedInformers   SharedInformerLookup
	informersStarted  <-chan struct{}
	ignored           map[schema.GroupResource]bool
	// handlers returns the event handlers a monitor of kind registers.
	handlers func(kind schema.GroupVersionKind) informers.Handlers

	mu       sync.Mutex
	monitors map[schema.GroupVersionResource]*monitor
	// ctx is the context of Run, set once monitors may start: informers the collector
	// creates are started with it, and handlers get it.
	ctx context.Context
	// stopped is set when Run ends; no monitor is added afterwards.
	stopped bool
}

// run records ctx: from now on metadata informers of new monitors are started at once.
func (s *monitorSet) run(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ctx = ctx
}

// resources returns the monitored resources and their kinds.
func (s *monitorSet) resources() map[schema.GroupVersionResource]schema.GroupVersionKind {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[schema.GroupVersionResource]schema.GroupVersionKind, len(s.monitors))
	for gvr, m := range s.monitors {
		out[gvr] = m.kind
	}
	return out
}

// syncedResources returns the resources whose monitors have synced.
func (s *monitorSet) syncedResources() map[schema.GroupVersionResource]schema.GroupVersionKind {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[schema.GroupVersionResource]schema.GroupVersionKind{}
	for gvr, m := range s.monitors {
		if m.synced() {
			out[gvr] = m.kind
		}
	}
	return out
}

// apply adds a monitor for every resource of want that has none and removes the monitors
// of resources not in want. Monitors that cannot be built are reported together; the
// others are in place either way.
func (s *monitorSet) apply(ctx context.Context, want map[schema.GroupVersionResource]schema.GroupVersionKind) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	logger := klog.FromContext(ctx)
	handlerCtx := ctx
	if s.ctx != nil {
		handlerCtx = s.ctx
	}
	var errs []error
	added := 0
	for gvr, kind := range want {
		if m, ok := s.monitors[gvr]; ok && m.kind == kind {
			continue
		} else if ok {
			// Same resource, another kind: replace the monitor so events carry the new kind.
			s.remove(ctx, gvr, m)
		}
		m := &monitor{kind: kind}
		m.informer, m.shared = s.sharedInformers(gvr)
		if !m.shared {
			m.informer = s.metadataInformers.ForResource(gvr).Informer()
		}
		registration, err := informers.AddRemovableHandlers(handlerCtx, m.informer, kind.Kind, s.handlers(kind))
		if err != nil {
			errs = append(errs, fmt.Errorf("monitoring %s: %w", gvr, err))
			continue
		}
		m.registration = registration
		s.monitors[gvr] = m
		added++
		logger.V(4).Info("Monitoring resource", "resource", resourceString(gvr), "kind", kind.Kind, "sharedTypedInformer", m.shared)
	}
	for gvr, m := range s.monitors {
		if _, ok := want[gvr]; !ok {
			s.remove(ctx, gvr, m)
		}
	}
	if added > 0 && s.ctx != nil {
		// Starts only the informers not started yet; shared typed informers belong to the
		// process, which started them.
		s.metadataInformers.Start(s.ctx.Done())
	}
	return utilerrors.NewAggregate(errs)
}

// remove drops the monitor of gvr; s.mu must be held. The informer itself stays: it may
// be shared, and the factory that owns it stops it with the process.
func (s *monitorSet) remove(ctx context.Context, gvr schema.GroupVersionResource, m *monitor) {
	if err := m.informer.RemoveEventHandler(m.registration); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Cannot remove the handlers of a monitor", "resource", resourceString(gvr))
	}
	delete(s.monitors, gvr)
	klog.FromContext(ctx).V(4).Info("Stopped monitoring resource", "resource", resourceString(gvr))
}

// removeAll removes every monitor for good.
func (s *monitorSet) removeAll(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	for gvr, m := range s.monitors {
		s.remove(ctx, gvr, m)
	}
}

// isSynced reports whether there is at least one monitor and all have synced.
func (s *monitorSet) isSynced(ctx context.Context) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.monitors) == 0 {
		klog.FromContext(ctx).V(4).Info("Garbage collector has no monitors yet")
		return false
	}
	for gvr, m := range s.monitors {
		if !m.synced() {
			klog.FromContext(ctx).V(4).Info("Monitor not synced yet", "resource", resourceString(gvr))
			return false
		}
	}
	return true
}

// unsynced lists the resources whose monitors have not synced, for logs.
func (s *monitorSet) unsynced() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for gvr, m := range s.monitors {
		if !m.synced() {
			out = append(out, resourceString(gvr))
		}
	}
	slices.Sort(out)
	return out
}

// cached returns the object namespace/name of resource from its monitor's cache.
func (s *monitorSet) cached(resource schema.GroupVersionResource, namespace, name string) (metav1.Object, bool) {
	s.mu.Lock()
	m, ok := s.monitors[resource]
	s.mu.Unlock()
	if !ok {
		return nil, false
	}
	obj, exists, err := m.informer.GetStore().GetByKey(queue.KeyForRef(namespace, name))
	if err != nil || !exists {
		return nil, false
	}
	accessor, ok := obj.(metav1.Object)
	return accessor, ok
}

// syncMonitors brings the monitors in line with discovery. With waitForSync it then waits
// up to the sync timeout for the monitors to sync, which only logs: workers never wait for
// it.
func (c *Controller) syncMonitors(ctx context.Context, waitForSync bool) {
	logger := klog.FromContext(ctx)
	want, err := deletableResources(ctx, c.discovery, c.monitors.ignored)
	if len(want) == 0 {
		logger.Info("Discovery reported no deletable resources; skipping this resource sync", "err", err)
		resourcesSyncErrors.Inc()
		return
	}
	if failed, partial := discovery.GroupDiscoveryFailedErrorGroups(err); partial {
		// Keep what is known to work for groups discovery could not list this time, rather
		// than drop their monitors and relist everything when the group comes back.
		for gvr, kind := range c.monitors.syncedResources() {
			if _, ok := failed[gvr.GroupVersion()]; ok {
				want[gvr] = kind
			}
		}
	}
	added, removed := diffResources(c.monitors.resources(), want)
	if len(added) == 0 && len(removed) == 0 {
		logger.V(5).Info("Deletable resources unchanged")
		return
	}
	logger.Info("Deletable resources changed", "diff", fmt.Sprintf("added: %v, removed: %v", added, removed))
	// Mappings of new kinds are unknown to a cached mapper, and vanished ones must go.
	c.mapper.Reset()
	if err := c.monitors.apply(ctx, want); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Cannot monitor some resources; retrying at the next resource sync")
		resourcesSyncErrors.Inc()
	}
	if !waitForSync {
		return
	}
	if c.waitForMonitors(ctx) {
		logger.V(2).Info("Resource monitors synced")
		return
	}
	if ctx.Err() == nil {
		utilruntime.HandleErrorWithContext(ctx, errors.New("timed out waiting for the resource monitors to sync"),
			"Garbage collection continues on the monitors that synced", "unsynced", c.monitors.unsynced())
		resourcesSyncErrors.Inc()
	}
}

// resyncMonitorsPeriodically runs syncMonitors every resync period until ctx ends.
func (c *Controller) resyncMonitorsPeriodically(ctx context.Context) {
	ticker := time.NewTicker(c.resyncPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			c.syncMonitors(ctx, true)
		}
	}
}

// diffResources returns the resources of want that current lacks and those of current
// that want lacks, each sorted, as strings for the log.
func diffResources(current, want map[schema.GroupVersionResource]schema.GroupVersionKind) (added, removed []string) {
	added, removed = []string{}, []string{}
	for gvr, kind := range want {
		if k, ok := current[gvr]; !ok || k != kind {
			added = append(added, resourceString(gvr))
		}
	}
	for gvr := range current {
		if _, ok := want[gvr]; !ok {
			removed = append(removed, resourceString(gvr))
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	return added, removed
}

// resourceString renders gvr as "apps/v1/replicasets", or "v1/pods" for the core group.
func resourceString(gvr schema.GroupVersionResource) string {
	return gvr.GroupVersion().String() + "/" + gvr.Resource
}
