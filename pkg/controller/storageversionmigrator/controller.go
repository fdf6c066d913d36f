package storageversionmigrator

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	clientinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

const (
	// ControllerName is the controller's canonical name and the source component of the
	// events it records.
	ControllerName = "storage-version-migrator-controller"

	// TargetVersion is the version every object ends up stored in, and the only one left
	// in status.storedVersions afterwards.
	TargetVersion = "v1beta1"

	// DefaultSettleDelay is how long after this process first saw v1beta1 as a CRD's
	// storage version the pass waits, so that every API server of the control plane has
	// picked the new storage version up.
	DefaultSettleDelay = 2 * time.Minute

	// pageSize is how many objects one LIST page asks for.
	pageSize = 500

	// ManagedByLabel and ManagedByValue mark the CRDs bosun manages; no other CRD is ever
	// migrated.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "bosun"
)

// Event reasons, recorded on the CRD.
const (
	// MigratedReason (Normal): every object was rewritten in v1beta1 and
	// status.storedVersions trimmed to [v1beta1].
	MigratedReason = "StorageVersionMigrated"
	// FailedReason (Warning): a pass failed, or the trim was refused; it is retried.
	FailedReason = "StorageVersionMigrationFailed"
)

// CRDResource is the resource the controller watches.
var CRDResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// CRDNames are the CRDs the controller migrates: bosun's seven resources.
var CRDNames = []string{
	"daemonsets.apps.kruise.io",
	"nodeimages.apps.kruise.io",
	"imagepulljobs.apps.kruise.io",
	"imagelistpulljobs.apps.kruise.io",
	"containerrecreaterequests.apps.kruise.io",
	"podunavailablebudgets.policy.kruise.io",
	"clonesets.apps.kruise.io",
}

// SelectManagedCRDs limits a CRD informer's list and watch to the CRDs bosun manages, so
// that the cache does not hold every CRD of the cluster (their schemas are large).
func SelectManagedCRDs(opts *metav1.ListOptions) {
	opts.LabelSelector = labels.Set{ManagedByLabel: ManagedByValue}.String()
}

// settleDelayKey is the key of WithSettleDelay.
type settleDelayKey struct{}

// WithSettleDelay makes the pass wait d (default DefaultSettleDelay) after this process
// first saw v1beta1 as the CRD's storage version; zero does not wait.
func WithSettleDelay(d time.Duration) options.Option {
	return options.Local(settleDelayKey{}, d)
}

// storageSeen is when this process first saw v1beta1 as the storage version of one CRD,
// of the CRD with that UID (a CRD deleted and created again is seen anew).
type storageSeen struct {
	uid types.UID
	at  time.Time
}

// Controller rewrites the objects of bosun's CRDs in v1beta1 and trims their
// status.storedVersions.
type Controller struct {
	client      dynamic.Interface
	recorder    record.EventRecorder
	clock       clock.Clock
	settleDelay time.Duration

	crds         cache.GenericLister
	cachesSynced []cache.InformerSynced

	// seenMu guards seen, by CRD name.
	seenMu sync.Mutex
	seen   map[string]storageSeen

	queue workqueue.TypedRateLimitingInterface[string]
	// syncHandler is syncCRD; tests replace it to watch the worker loop.
	syncHandler queue.SyncFunc[string]
}

// NewController builds the migrator on an informer of apiextensions.k8s.io/v1
// CustomResourceDefinitions (unstructured; SelectManagedCRDs is the list option it should be
// built with). client lists and rewrites the objects and writes the CRDs' status; events
// are recorded through recorder, whose source should be ControllerName. Of the options it
// reads the clock, the queue wrapper and its own WithSettleDelay.
func NewController(ctx context.Context, crds clientinformers.GenericInformer, client dynamic.Interface, recorder record.EventRecorder,
	opts ...options.Option) (*Controller, error) {
	registerMetrics()
	settings := options.Apply(opts)
	c := &Controller{
		client:       client,
		recorder:     recorder,
		clock:        settings.Clock,
		settleDelay:  DefaultSettleDelay,
		crds:         crds.Lister(),
		cachesSynced: []cache.InformerSynced{crds.Informer().HasSynced},
		seen:         map[string]storageSeen{},
		queue:        settings.WrapQueue(queue.New[string](queue.NameStorageVersionMigrator)),
	}
	c.syncHandler = c.syncCRD
	if d, ok := options.LocalValue[time.Duration](settings, settleDelayKey{}); ok && d >= 0 {
		c.settleDelay = d
	}
	if err := informers.AddHandlers(ctx, crds.Informer(), "CustomResourceDefinition",
		informers.Handlers{Add: c.addCRD, Update: c.updateCRD, Delete: c.deleteCRD}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run waits for the CRD cache to sync, then migrates CRDs with workers workers until ctx
// ends. It returns after the queue is shut down and every worker has stopped.
func (c *Controller) Run(ctx context.Context, workers int) {
	queue.RunController(ctx, ControllerName, c.queue, workers, c.cachesSynced, c.syncHandler)
}

func (c *Controller) addCRD(ctx context.Context, obj any) {
	crd, ok := obj.(*unstructured.Unstructured)
	if !ok || !isMigrated(crd.GetName()) {
		return
	}
	klog.FromContext(ctx).V(5).Info("CRD added", "crd", crd.GetName())
	c.queue.Add(crd.GetName())
}

// updateCRD queues the CRD on every change: its conditions, storage version, conversion
// configuration and stored versions all decide what the sync does. Resyncs queue nothing.
func (c *Controller) updateCRD(ctx context.Context, old, cur any) {
	oldCRD, ok1 := old.(*unstructured.Unstructured)
	curCRD, ok2 := cur.(*unstructured.Unstructured)
	if !ok1 || !ok2 || !isMigrated(curCRD.GetName()) || oldCRD.GetResourceVersion() == curCRD.GetResourceVersion() {
		return
	}
	klog.FromContext(ctx).V(5).Info("CRD updated", "crd", curCRD.GetName())
	c.queue.Add(curCRD.GetName())
}

// deleteCRD queues the CRD, whose sync forgets what this process saw of it.
func (c *Controller) deleteCRD(ctx context.Context, obj any) {
	crd, ok := queue.FromTombstone[*unstructured.Unstructured](obj)
	if !ok {
		utilruntime.HandleErrorWithContext(ctx, nil, "CustomResourceDefinition event carries an unexpected object", "type", fmt.Sprintf("%T", obj))
		return
	}
	if !isMigrated(crd.GetName()) {
		return
	}
	klog.FromContext(ctx).V(4).Info("CRD deleted", "crd", crd.GetName())
	c.queue.Add(crd.GetName())
}

// isMigrated reports whether name is one of the CRDs the controller migrates.
func isMigrated(name string) bool {
	return slices.Contains(CRDNames, name)
}

// storageSeenAt returns when this process first saw v1beta1 as the storage version of
// crd, which it sees now.
func (c *Controller) storageSeenAt(crd *unstructured.Unstructured) time.Time {
	c.seenMu.Lock()
	defer c.seenMu.Unlock()
	seen, ok := c.seen[crd.GetName()]
	if !ok || seen.uid != crd.GetUID() {
		seen = storageSeen{uid: crd.GetUID(), at: c.clock.Now()}
		c.seen[crd.GetName()] = seen
	}
	return seen.at
}

// forgetStorage forgets that this process saw v1beta1 as the storage version of the CRD:
// it is gone, or its storage version is another now.
func (c *Controller) forgetStorage(name string) {
	c.seenMu.Lock()
	defer c.seenMu.Unlock()
	delete(c.seen, name)
}
