package app

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/bosun-dev/bosun/pkg/controller/garbagecollector"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
)

// newGarbageCollector builds the garbage collector, unless --enable-garbage-collector is
// false.
func newGarbageCollector(ctx context.Context, cc *registry.ControllerContext) (registry.Controller, error) {
	if !cc.Config.GarbageCollector.Enabled {
		return nil, registry.NotBuilt("--enable-garbage-collector is false")
	}
	// The typed client serves discovery; every GET, PATCH and DELETE of collected objects
	// goes through the metadata client.
	client, err := cc.Client()
	if err != nil {
		return nil, fmt.Errorf("building the %s client: %w", garbagecollector.ControllerName, err)
	}
	metadataConfig, err := gcMetadataConfig(cc)
	if err != nil {
		return nil, err
	}
	metadataClient, err := metadata.NewForConfig(metadataConfig)
	if err != nil {
		return nil, fmt.Errorf("building the %s metadata client: %w", garbagecollector.ControllerName, err)
	}
	gc, err := garbagecollector.NewController(ctx,
		cc.MetadataInformerFactory,
		sharedTypedInformers(cc.InformerFactory),
		cc.InformersStarted,
		metadataClient,
		client.Discovery(),
		cc.RESTMapper,
		cc.EventRecorder(garbagecollector.ControllerName),
		nil,
	)
	if err != nil {
		return nil, fmt.Errorf("building the %s: %w", garbagecollector.ControllerName, err)
	}
	return garbageCollector{Controller: gc, workers: int(cc.Config.GarbageCollector.ConcurrentSyncs)}, nil
}

// gcMetadataConfig returns the configuration of the collector's metadata client: the
// controller's own, at twice the QPS (burst unchanged), since every object collected costs
// at least a GET and a DELETE.
func gcMetadataConfig(cc *registry.ControllerContext) (*rest.Config, error) {
	config, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("building the %s metadata client configuration: %w", garbagecollector.ControllerName, err)
	}
	if config.QPS > 0 {
		config.QPS *= 2
	}
	return config, nil
}

// sharedTypedInformers lets the collector share the typed informers of the resources the
// workload controllers of this binary watch, instead of a second, metadata-only, cache of
// the same objects. Asking for the informers here registers them with the factory before
// it starts; when the workload controllers are disabled the collector still watches these
// three resources through typed informers.
func sharedTypedInformers(factory informers.SharedInformerFactory) garbagecollector.SharedInformerLookup {
	shared := map[schema.GroupVersionResource]cache.SharedIndexInformer{
		corev1.SchemeGroupVersion.WithResource("pods"):        factory.Core().V1().Pods().Informer(),
		appsv1.SchemeGroupVersion.WithResource("replicasets"): factory.Apps().V1().ReplicaSets().Informer(),
		appsv1.SchemeGroupVersion.WithResource("deployments"): factory.Apps().V1().Deployments().Informer(),
	}
	return func(resource schema.GroupVersionResource) (cache.SharedIndexInformer, bool) {
		informer, ok := shared[resource]
		return informer, ok
	}
}

// garbageCollector adapts the collector to registry.Controller; embedding keeps its health
// check and debug handler visible to the manager.
type garbageCollector struct {
	*garbagecollector.Controller
	workers int
}

// Run implements registry.Controller.
func (g garbageCollector) Run(ctx context.Context) { g.Controller.Run(ctx, g.workers) }

var (
	_ registry.HealthCheckable = garbageCollector{}
	_ registry.Debuggable      = garbageCollector{}
)
