package imagelistpulljob

import (
	"context"
	"fmt"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	appsinformers "github.com/bosun-dev/client-go/informers/externalversions/apps/v1beta1"
	appslisters "github.com/bosun-dev/client-go/listers/apps/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/bosun-dev/bosun/pkg/controller/expectations"
	"github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/controller/refmanager"
)

const (
	// ControllerName is the controller's canonical name, its event source and its client's
	// name.
	ControllerName = "imagelistpulljob-controller"

	// MaxActiveImagesAnnotation on a list job limits how many of its children may be
	// running (created and not completed) at once; its value is a positive integer.
	MaxActiveImagesAnnotation = "imagelistpulljob.bosun.dev/max-active-images"

	// controllerUIDIndex indexes ImagePullJobs by the UID of the list job controlling them,
	// so that a sync finds its children without scanning the namespace.
	controllerUIDIndex = "imagelistpulljob.bosun.dev/controller-uid"
)

// controllerKind is the kind children name in their controller reference.
var controllerKind = appsv1beta1.SchemeGroupVersion.WithKind("ImageListPullJob")

// Controller keeps one child ImagePullJob per image of every ImageListPullJob and reports
// their progress.
type Controller struct {
	bosunClient bosunclientset.Interface
	recorder    record.EventRecorder
	clock       clock.Clock

	listJobs     appslisters.ImageListPullJobLister
	jobs         cache.Indexer
	cachesSynced []cache.InformerSynced

	// expectations holds, by list job key, the children this controller created (counted)
	// and deleted (by child key) that the informer has not shown yet.
	expectations *expectations.TrackedStore

	queue workqueue.TypedRateLimitingInterface[string]
	// syncHandler is syncListJob; tests may replace it to watch the worker loop.
	syncHandler queue.SyncFunc[string]
}

// NewController builds the ImageListPullJob controller on the v1beta1 informers of
// ImageListPullJobs and ImagePullJobs (both required). bosunClient writes list jobs and
// their children; recorder records the events on list jobs. Of the options it reads the
// clock and the queue wrapper.
func NewController(ctx context.Context,
	listJobs appsinformers.ImageListPullJobInformer, jobs appsinformers.ImagePullJobInformer,
	bosunClient bosunclientset.Interface, recorder record.EventRecorder,
	opts ...options.Option) (*Controller, error) {
	settings := options.Apply(opts)
	c := &Controller{
		bosunClient:  bosunClient,
		recorder:     recorder,
		clock:        settings.Clock,
		listJobs:     listJobs.Lister(),
		jobs:         jobs.Informer().GetIndexer(),
		cachesSynced: []cache.InformerSynced{listJobs.Informer().HasSynced, jobs.Informer().HasSynced},
		expectations: expectations.NewTracked(expectations.NewWithClock(settings.Clock)),
		queue:        settings.WrapQueue(queue.New[string](queue.NameImageListPullJob)),
	}
	c.syncHandler = c.syncListJob

	if err := jobs.Informer().AddIndexers(cache.Indexers{controllerUIDIndex: indexByControllerUID}); err != nil {
		return nil, fmt.Errorf("adding the ImagePullJob index %s: %w", controllerUIDIndex, err)
	}
	for _, r := range []struct {
		informer cache.SharedIndexInformer
		kind     string
		handlers informers.Handlers
	}{
		{listJobs.Informer(), "ImageListPullJob", informers.Handlers{Add: c.addListJob, Update: c.updateListJob, Delete: c.deleteListJob}},
		{jobs.Informer(), "ImagePullJob", informers.Handlers{Add: c.addJob, Update: c.updateJob, Delete: c.deleteJob}},
	} {
		if err := informers.AddHandlers(ctx, r.informer, r.kind, r.handlers); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run waits for the caches to sync, then processes list jobs with workers workers until
// ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	queue.RunController(ctx, ControllerName, c.queue, workers, c.cachesSynced, c.syncHandler)
}

func (c *Controller) addListJob(ctx context.Context, obj any) {
	if listJob, ok := obj.(*appsv1beta1.ImageListPullJob); ok {
		klog.FromContext(ctx).V(4).Info("ImageListPullJob added", "imageListPullJob", klog.KObj(listJob))
		c.queue.Add(queue.KeyForRef(listJob.Namespace, listJob.Name))
	}
}

// updateListJob queues the list job on every update, periodic resyncs included: they are
// what looks at a list job again when an informer event was lost.
func (c *Controller) updateListJob(ctx context.Context, _, cur any) {
	if listJob, ok := cur.(*appsv1beta1.ImageListPullJob); ok {
		klog.FromContext(ctx).V(5).Info("ImageListPullJob updated", "imageListPullJob", klog.KObj(listJob))
		c.queue.Add(queue.KeyForRef(listJob.Namespace, listJob.Name))
	}
}

// deleteListJob drops the list job's expectations at once: a list job created again under
// the same name must not wait for the writes of the one that went.
func (c *Controller) deleteListJob(ctx context.Context, obj any) {
	listJob, ok := queue.FromTombstone[*appsv1beta1.ImageListPullJob](obj)
	if !ok {
		return
	}
	klog.FromContext(ctx).V(4).Info("ImageListPullJob deleted", "imageListPullJob", klog.KObj(listJob))
	key := queue.KeyForRef(listJob.Namespace, listJob.Name)
	c.expectations.Delete(ctx, key)
	c.queue.Add(key)
}

// addJob records the creation (or, for a child already being deleted, the deletion) of a
// child and queues its list job.
func (c *Controller) addJob(ctx context.Context, obj any) {
	job, ok := obj.(*appsv1beta1.ImagePullJob)
	if !ok {
		return
	}
	listJob, ok := c.listJobOf(job.Namespace, metav1.GetControllerOfNoCopy(job))
	if !ok {
		return
	}
	key := queue.KeyForRef(listJob.Namespace, listJob.Name)
	if job.DeletionTimestamp != nil {
		// The informer may first show a child when it is already going (after a relist).
		c.expectations.DeletionObserved(ctx, key, queue.KeyForRef(job.Namespace, job.Name))
	} else {
		c.expectations.CreationObserved(ctx, key)
	}
	klog.FromContext(ctx).V(4).Info("ImagePullJob added", "imagePullJob", klog.KObj(job), "imageListPullJob", key)
	c.queue.Add(key)
}

// updateJob queues the list job controlling the child, and the one that controlled it
// before when its controller changed; a child that started going counts as deleted.
func (c *Controller) updateJob(ctx context.Context, old, cur any) {
	oldJob, ok1 := old.(*appsv1beta1.ImagePullJob)
	curJob, ok2 := cur.(*appsv1beta1.ImagePullJob)
	if !ok1 || !ok2 || oldJob.ResourceVersion == curJob.ResourceVersion {
		return
	}
	change := refmanager.CompareControllerRefs(oldJob, curJob)
	if change.Former != nil {
		if former, ok := c.listJobOf(oldJob.Namespace, change.Former); ok {
			c.queue.Add(queue.KeyForRef(former.Namespace, former.Name))
		}
	}
	listJob, ok := c.listJobOf(curJob.Namespace, change.Current)
	if !ok {
		return
	}
	key := queue.KeyForRef(listJob.Namespace, listJob.Name)
	if curJob.DeletionTimestamp != nil {
		c.expectations.DeletionObserved(ctx, key, queue.KeyForRef(curJob.Namespace, curJob.Name))
	}
	klog.FromContext(ctx).V(5).Info("ImagePullJob updated", "imagePullJob", klog.KObj(curJob), "imageListPullJob", key)
	c.queue.Add(key)
}

// deleteJob records the deletion of a child and queues its list job.
func (c *Controller) deleteJob(ctx context.Context, obj any) {
	job, ok := queue.FromTombstone[*appsv1beta1.ImagePullJob](obj)
	if !ok {
		return
	}
	listJob, ok := c.listJobOf(job.Namespace, metav1.GetControllerOfNoCopy(job))
	if !ok {
		return
	}
	key := queue.KeyForRef(listJob.Namespace, listJob.Name)
	c.expectations.DeletionObserved(ctx, key, queue.KeyForRef(job.Namespace, job.Name))
	klog.FromContext(ctx).V(4).Info("ImagePullJob deleted", "imagePullJob", klog.KObj(job), "imageListPullJob", key)
	c.queue.Add(key)
}

// listJobOf returns the list job a controller reference of an object in namespace points
// to, if it is in the cache with the UID the reference names.
func (c *Controller) listJobOf(namespace string, ref *metav1.OwnerReference) (*appsv1beta1.ImageListPullJob, bool) {
	if !isListJobRef(ref) {
		return nil, false
	}
	return refmanager.ResolveControllerRef(ref, controllerKind.Kind, c.listJobs.ImageListPullJobs(namespace).Get)
}

// isListJobRef reports whether ref names an apps.kruise.io ImageListPullJob, of any
// version: OpenKruise wrote v1alpha1 references before its v1beta1 hub.
func isListJobRef(ref *metav1.OwnerReference) bool {
	if ref == nil || ref.Kind != controllerKind.Kind {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == controllerKind.Group
}

// indexByControllerUID is the controllerUIDIndex function: the UID of the list job
// controlling an ImagePullJob, if one does.
func indexByControllerUID(obj any) ([]string, error) {
	job, ok := obj.(*appsv1beta1.ImagePullJob)
	if !ok {
		return nil, nil
	}
	ref := metav1.GetControllerOfNoCopy(job)
	if !isListJobRef(ref) {
		return nil, nil
	}
	return []string{string(ref.UID)}, nil
}
