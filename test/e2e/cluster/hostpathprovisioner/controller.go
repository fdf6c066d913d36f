package hostpathprovisioner

import (
	"context"
	"errors"
	"path/filepath"
	"sync"

	corev1 "k8s.io/api/core/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	storageinformers "k8s.io/client-go/informers/storage/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

const (
	// ControllerName names the controller in logs and is the source of its events.
	ControllerName = "hostpath-provisioner"
	// ProvisionerName is what a StorageClass names in `provisioner` to have its volumes
	// made here.
	ProvisionerName = "local.bosun.dev/hostpath"

	// Queue names (the workqueue metrics' "name" label).
	claimQueueName  = "hostpath_provisioner_claims"
	volumeQueueName = "hostpath_provisioner_volumes"
)

// Annotations of the volume protocol between the scheduler, the PersistentVolume controller
// and external provisioners.
const (
	// AnnSelectedNode, on a claim, is the node the scheduler chose for its first consumer.
	AnnSelectedNode = "volume.kubernetes.io/selected-node"
	// AnnStorageProvisioner and AnnBetaStorageProvisioner, on a claim, name the provisioner
	// the PersistentVolume controller waits for.
	AnnStorageProvisioner     = "volume.kubernetes.io/storage-provisioner"
	AnnBetaStorageProvisioner = "volume.beta.kubernetes.io/storage-provisioner"
	// AnnProvisionedBy, on a volume, names the provisioner that made it and must delete it.
	AnnProvisionedBy = "pv.kubernetes.io/provisioned-by"
)

// Event reasons, those of Kubernetes' external provisioners.
const (
	ReasonProvisioningSucceeded = "ProvisioningSucceeded"
	ReasonProvisioningFailed    = "ProvisioningFailed"
	ReasonVolumeFailedDelete    = "VolumeFailedDelete"
)

// Controller provisions and deletes hostPath volumes under one directory.
type Controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	// dir holds one directory per volume, named after the volume.
	dir string

	claims       corelisters.PersistentVolumeClaimLister
	volumes      corelisters.PersistentVolumeLister
	classes      storagelisters.StorageClassLister
	nodes        corelisters.NodeLister
	cachesSynced []cache.InformerSynced

	claimQueue  workqueue.TypedRateLimitingInterface[string]
	volumeQueue workqueue.TypedRateLimitingInterface[string]
}

// NewController builds the provisioner on the given informers; volumes are made under dir,
// which must be absolute. Events are recorded through recorder, whose source should be
// ControllerName.
func NewController(ctx context.Context,
	claims coreinformers.PersistentVolumeClaimInformer, volumes coreinformers.PersistentVolumeInformer,
	classes storageinformers.StorageClassInformer, nodes coreinformers.NodeInformer,
	client kubernetes.Interface, recorder record.EventRecorder, dir string) (*Controller, error) {
	if !filepath.IsAbs(dir) {
		return nil, errors.New("the volume directory " + dir + " is not absolute")
	}
	c := &Controller{
		client:   client,
		recorder: recorder,
		dir:      filepath.Clean(dir),
		claims:   claims.Lister(),
		volumes:  volumes.Lister(),
		classes:  classes.Lister(),
		nodes:    nodes.Lister(),
		cachesSynced: []cache.InformerSynced{claims.Informer().HasSynced, volumes.Informer().HasSynced,
			classes.Informer().HasSynced, nodes.Informer().HasSynced},
		claimQueue:  queue.New[string](claimQueueName),
		volumeQueue: queue.New[string](volumeQueueName),
	}
	if err := informers.AddHandlers(ctx, claims.Informer(), "PersistentVolumeClaim",
		informers.Handlers{Add: c.addClaim, Update: c.updateClaim}); err != nil {
		return nil, err
	}
	if err := informers.AddHandlers(ctx, volumes.Informer(), "PersistentVolume",
		informers.Handlers{Add: c.addVolume, Update: c.updateVolume, Delete: c.deleteVolume}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run waits for the caches to sync, then processes claims and volumes with workers workers
// each until ctx ends. It returns once both queues are shut down and every worker has
// stopped.
func (c *Controller) Run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	wg.Go(func() {
		queue.RunController(ctx, ControllerName+"-claims", c.claimQueue, workers, c.cachesSynced, c.syncClaim)
	})
	wg.Go(func() {
		queue.RunController(ctx, ControllerName+"-volumes", c.volumeQueue, workers, c.cachesSynced, c.syncVolume)
	})
	wg.Wait()
}

// VolumePath is the directory of the named volume.
func (c *Controller) VolumePath(volumeName string) string {
	return filepath.Join(c.dir, volumeName)
}

// addClaim and updateClaim queue every claim: whether it asks this provisioner for a
// volume is the sync's question, and the claims of a test cluster are few.
func (c *Controller) addClaim(ctx context.Context, obj any) {
	if claim, ok := obj.(*corev1.PersistentVolumeClaim); ok {
		klog.FromContext(ctx).V(5).Info("Claim added", "claim", klog.KObj(claim))
		c.claimQueue.Add(queue.KeyForRef(claim.Namespace, claim.Name))
	}
}

func (c *Controller) updateClaim(ctx context.Context, _, cur any) {
	c.addClaim(ctx, cur)
}

// addVolume, updateVolume and deleteVolume queue every volume; the sync leaves alone those
// another provisioner made.
func (c *Controller) addVolume(ctx context.Context, obj any) {
	if volume, ok := obj.(*corev1.PersistentVolume); ok {
		klog.FromContext(ctx).V(5).Info("Volume changed", "volume", klog.KObj(volume))
		c.volumeQueue.Add(volume.Name)
	}
}

func (c *Controller) updateVolume(ctx context.Context, _, cur any) {
	c.addVolume(ctx, cur)
}

func (c *Controller) deleteVolume(ctx context.Context, obj any) {
	if volume, ok := queue.FromTombstone[*corev1.PersistentVolume](obj); ok {
		klog.FromContext(ctx).V(5).Info("Volume deleted", "volume", klog.KObj(volume))
		c.volumeQueue.Add(volume.Name)
	}
}
