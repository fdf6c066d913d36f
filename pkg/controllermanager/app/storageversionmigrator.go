package app

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	toolkitinformers "github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/storageversionmigrator"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
)

// storageVersionMigratorWorkers is the migrator's number of workers: one pass at a time
// keeps the extra etcd writes of a migration to one client's rate.
const storageVersionMigratorWorkers = 1

// newStorageVersionMigrator builds the migrator on an informer of its own: the shared
// factories hold no CustomResourceDefinitions, and this one watches only the CRDs bosun
// manages, unstructured, through a dynamic client.
func newStorageVersionMigrator(ctx context.Context, cc *registry.ControllerContext) (registry.Controller, error) {
	config, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("building the %s client configuration: %w", storageversionmigrator.ControllerName, err)
	}
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("building the %s dynamic client: %w", storageversionmigrator.ControllerName, err)
	}
	crds := dynamicinformer.NewFilteredDynamicInformer(client, storageversionmigrator.CRDResource, metav1.NamespaceAll,
		cc.ResyncPeriod(), cache.Indexers{}, storageversionmigrator.SelectManagedCRDs)
	if err := crds.Informer().SetTransform(toolkitinformers.StripManagedFields); err != nil {
		return nil, fmt.Errorf("setting up the %s CRD informer: %w", storageversionmigrator.ControllerName, err)
	}
	c, err := storageversionmigrator.NewController(ctx, crds, client, cc.EventRecorder(storageversionmigrator.ControllerName),
		storageversionmigrator.WithSettleDelay(settleDelay(cc)))
	if err != nil {
		return nil, fmt.Errorf("building the %s: %w", storageversionmigrator.ControllerName, err)
	}
	return withOwnInformer{informer: crds.Informer(), run: c.Run, workers: storageVersionMigratorWorkers}, nil
}

// settleDelay is --storage-version-migration-delay; a context built without a
// configuration (as in tests) keeps the controller's default.
func settleDelay(cc *registry.ControllerContext) time.Duration {
	if cc.Config == nil {
		return storageversionmigrator.DefaultSettleDelay
	}
	return cc.Config.StorageVersionMigrator.SettleDelay
}

// withOwnInformer runs a controller together with an informer that no shared factory
// starts, for as long as the controller runs.
type withOwnInformer struct {
	informer cache.SharedIndexInformer
	run      func(ctx context.Context, workers int)
	workers  int
}

// Run implements registry.Controller: it returns once the controller and the informer
// have both stopped.
func (w withOwnInformer) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { w.informer.RunWithContext(ctx) })
	w.run(ctx, w.workers)
	wg.Wait()
}
