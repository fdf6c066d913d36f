package garbagecollector

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/testutil"

	"github.com/bosun-dev/bosun/pkg/controller/informers"
)

var (
	podsResource        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	configMapsResource  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	replicaSetsResource = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	widgetsResource     = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

func TestDeletableResources(t *testing.T) {
	core := resourceList("v1", "pods:Pod", "configmaps:ConfigMap", "events:Event", "pods/status:Pod")
	core.APIResources = append(core.APIResources,
		metav1.APIResource{Name: "bindings", Kind: "Binding", Verbs: metav1.Verbs{"create"}},
		metav1.APIResource{Name: "componentstatuses", Kind: "ComponentStatus", Verbs: metav1.Verbs{"get", "list"}},
	)
	d := &fakeDiscovery{}
	d.set(nil, core, resourceList("events.k8s.io/v1", "events:Event"), resourceList("apps/v1", "replicasets:ReplicaSet"),
		resourceList("example.com/v1", "widgets:Widget"))
	ignored := map[schema.GroupResource]bool{
		{Resource: "events"}: true, {Group: "events.k8s.io", Resource: "events"}: true, {Group: "example.com", Resource: "widgets"}: true,
	}
	got, err := deletableResources(context.Background(), d, ignored)
	if err != nil {
		t.Fatal(err)
	}
	want := map[schema.GroupVersionResource]schema.GroupVersionKind{
		podsResource:        podKind,
		configMapsResource:  configMapKind,
		replicaSetsResource: replicaSetKind,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deletable resources (-want +got):\n%s", diff)
	}
}

// monitored returns the monitored resources and whether each shares another controller's
// informer.
func monitored(f *fixture) map[schema.GroupVersionResource]bool {
	f.c.monitors.mu.Lock()
	defer f.c.monitors.mu.Unlock()
	out := map[schema.GroupVersionResource]bool{}
	for gvr, m := range f.c.monitors.monitors {
		out[gvr] = m.shared
	}
	return out
}

func syncErrors(t *testing.T) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(resourcesSyncErrors)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMonitorsFollowDiscovery(t *testing.T) {
	// The pods informer belongs to "another controller": the collector must use it. It is
	// built on the fixture's client, before the collector first looks it up.
	var podInformer cache.SharedIndexInformer
	f := newFixtureWith(t, fixtureOptions{sharedInformers: func(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, bool) {
		return podInformer, gvr == podsResource
	}})
	podInformer = informers.NewMetadataInformerFactory(f.client, 0).ForResource(podsResource).Informer()
	core := resourceList("v1", "pods:Pod", "configmaps:ConfigMap", "events:Event")
	apps := resourceList("apps/v1", "replicasets:ReplicaSet")
	widgets := resourceList("example.com/v1", "widgets:Widget")

	f.discovery.set(nil, core, apps)
	f.c.syncMonitors(f.ctx, false)
	want := map[schema.GroupVersionResource]bool{podsResource: true, configMapsResource: false, replicaSetsResource: false}
	if diff := cmp.Diff(want, monitored(f)); diff != "" {
		t.Fatalf("monitors (-want +got):\n%s", diff)
	}
	if f.c.monitors.monitors[podsResource].informer != podInformer {
		t.Error("the pods monitor does not use the shared informer")
	}
	if got := f.mapper.resets.Load(); got != 1 {
		t.Errorf("REST mapper reset %d times, want 1", got)
	}

	// A custom resource appears, ReplicaSets vanish.
	f.discovery.set(nil, core, widgets)
	f.c.syncMonitors(f.ctx, false)
	want = map[schema.GroupVersionResource]bool{podsResource: true, configMapsResource: false, widgetsResource: false}
	if diff := cmp.Diff(want, monitored(f)); diff != "" {
		t.Errorf("monitors after a change (-want +got):\n%s", diff)
	}
	if got := f.mapper.resets.Load(); got != 2 {
		t.Errorf("REST mapper reset %d times, want 2", got)
	}

	// Nothing changed: nothing done.
	f.c.syncMonitors(f.ctx, false)
	if got := f.mapper.resets.Load(); got != 2 {
		t.Errorf("REST mapper reset %d times without a change, want 2", got)
	}

	// Discovery reports nothing: the monitors stay, the error is counted.
	before := syncErrors(t)
	f.discovery.set(&discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{{Version: "v1"}: context.DeadlineExceeded}})
	f.c.syncMonitors(f.ctx, false)
	if diff := cmp.Diff(want, monitored(f)); diff != "" {
		t.Errorf("monitors after an empty discovery (-want +got):\n%s", diff)
	}
	if got := syncErrors(t) - before; got != 1 {
		t.Errorf("resources_sync_error_total grew by %v, want 1", got)
	}

	// Removal takes the collector's handlers off the shared informer but leaves the
	// informer alone.
	f.c.monitors.removeAll(f.ctx)
	if len(monitored(f)) != 0 || podInformer.IsStopped() {
		t.Errorf("after removeAll: monitors %v, shared informer stopped %v", monitored(f), podInformer.IsStopped())
	}
	f.discovery.set(nil, core)
	f.c.syncMonitors(f.ctx, false)
	if len(monitored(f)) != 0 {
		t.Errorf("monitors added after the collector stopped: %v", monitored(f))
	}
}

func TestPartialDiscoveryFailureKeepsSyncedMonitors(t *testing.T) {
	core := resourceList("v1", "configmaps:ConfigMap")
	widgets := resourceList("example.com/v1", "widgets:Widget")
	widgetsFailed := &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{widgetsResource.GroupVersion(): context.DeadlineExceeded}}

	for _, synced := range []bool{true, false} {
		name := map[bool]string{true: "synced monitor kept", false: "unsynced monitor dropped"}[synced]
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			ctx, cancel := context.WithCancel(f.ctx)
			defer cancel()
			if synced {
				// Started monitors sync on the fake client.
				f.c.monitors.run(ctx)
			}
			f.discovery.set(nil, core, widgets)
			f.c.syncMonitors(ctx, false)
			if synced {
				deadline := time.Now().Add(30 * time.Second)
				for !f.c.IsSynced(ctx) {
					if time.Now().After(deadline) {
						t.Fatal("monitors never synced")
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			f.discovery.set(widgetsFailed, core)
			f.c.syncMonitors(ctx, false)
			_, kept := monitored(f)[widgetsResource]
			if kept != synced {
				t.Errorf("widgets monitor kept: %v, want %v", kept, synced)
			}
			if _, ok := monitored(f)[configMapsResource]; !ok {
				t.Error("configmaps monitor dropped")
			}
		})
	}
}

func TestDiffResources(t *testing.T) {
	current := map[schema.GroupVersionResource]schema.GroupVersionKind{podsResource: podKind, replicaSetsResource: replicaSetKind}
	want := map[schema.GroupVersionResource]schema.GroupVersionKind{podsResource: podKind, widgetsResource: widgetKind, configMapsResource: configMapKind}
	added, removed := diffResources(current, want)
	if diff := cmp.Diff([]string{"example.com/v1/widgets", "v1/configmaps"}, added); diff != "" {
		t.Errorf("added (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"apps/v1/replicasets"}, removed); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
}
