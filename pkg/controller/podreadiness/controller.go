package podreadiness

import (
	"context"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/podcontrol"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

// ControllerName is the controller's canonical name, OpenKruise's for the same controller.
const ControllerName = "pod-readiness-controller"

// Controller sets the KruisePodReady condition of the pods gated on it.
type Controller struct {
	pods         corelisters.PodLister
	status       podcontrol.StatusUpdater
	clock        clock.PassiveClock
	cachesSynced []cache.InformerSynced

	queue workqueue.TypedRateLimitingInterface[string]
	// syncHandler is syncPod; tests replace it to watch the handlers alone.
	syncHandler queue.SyncFunc[string]
}

// NewController builds the controller on the shared pod informer; client writes pod
// status. Of the options it reads the clock (the condition's lastTransitionTime) and the
// queue wrapper.
func NewController(ctx context.Context, pods coreinformers.PodInformer, client kubernetes.Interface, opts ...options.Option) (*Controller, error) {
	settings := options.Apply(opts)
	c := &Controller{
		pods:         pods.Lister(),
		status:       podcontrol.StatusUpdater{Client: client},
		clock:        settings.Clock,
		cachesSynced: []cache.InformerSynced{pods.Informer().HasSynced},
		queue:        settings.WrapQueue(queue.New[string](queue.NamePodReadiness)),
	}
	c.syncHandler = c.syncPod
	if err := informers.AddHandlers(ctx, pods.Informer(), "Pod", informers.Handlers{
		Add:    c.addPod,
		Update: c.updatePod,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run waits for the pod cache to sync, then sets conditions with workers workers until
// ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	queue.RunController(ctx, ControllerName, c.queue, workers, c.cachesSynced, c.syncHandler)
}

// addPod queues a new pod that waits for its condition. A pod's deletion needs no handler:
// a deleted pod needs nothing.
func (c *Controller) addPod(ctx context.Context, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !awaitsCondition(pod) {
		return
	}
	klog.FromContext(ctx).V(5).Info("Pod awaits its KruisePodReady condition", "pod", klog.KObj(pod))
	c.queue.Add(queue.PodKey(pod))
}

// updatePod queues a pod that waits for its condition, whatever changed: also a resync
// brings back a pod whose write failed for good.
func (c *Controller) updatePod(ctx context.Context, _, cur any) {
	c.addPod(ctx, cur)
}

// awaitsCondition reports whether pod is gated on KruisePodReady, has no such condition
// and is not being deleted: the pods this controller writes.
func awaitsCondition(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil &&
		kruisepod.HasReadinessGate(pod, appsv1beta1.KruisePodReadyConditionType) &&
		kruisepod.PodCondition(pod, appsv1beta1.KruisePodReadyConditionType) == nil
}
