package containerlaunchpriority

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

// ControllerName is the controller's canonical name, OpenKruise's.
const ControllerName = "container-launch-priority-controller"

// Controller writes the barrier ConfigMaps of pods with container launch priorities.
type Controller struct {
	client       kubernetes.Interface
	pods         corelisters.PodLister
	cachesSynced []cache.InformerSynced

	queue workqueue.TypedRateLimitingInterface[string]
	// syncHandler is syncPod; tests replace it to watch the worker loop.
	syncHandler queue.SyncFunc[string]
}

// NewController builds the controller on the pod informer; client writes barrier
// ConfigMaps and pod annotations. Of the options it reads the queue wrapper only.
func NewController(ctx context.Context, pods coreinformers.PodInformer, client kubernetes.Interface, opts ...options.Option) (*Controller, error) {
	settings := options.Apply(opts)
	c := &Controller{
		client:       client,
		pods:         pods.Lister(),
		cachesSynced: []cache.InformerSynced{pods.Informer().HasSynced},
		queue:        settings.WrapQueue(queue.New[string](queue.NameContainerLaunchPriority)),
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

// Run waits for the pod cache to sync, then processes pods with workers workers until ctx
// ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	queue.RunController(ctx, ControllerName, c.queue, workers, c.cachesSynced, c.syncHandler)
}

// addPod queues a new pod whose containers wait for their launch.
func (c *Controller) addPod(ctx context.Context, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !waitsForLaunch(pod) {
		return
	}
	klog.FromContext(ctx).V(4).Info("Pod waits for its containers' launch", "pod", klog.KObj(pod))
	c.queue.Add(queue.PodKey(pod))
}

// updatePod queues a pod whose containers still wait for their launch, on any change: the
// one that matters, a container becoming ready, is one of few changes such a pod sees.
func (c *Controller) updatePod(ctx context.Context, _, cur any) {
	pod, ok := cur.(*corev1.Pod)
	if !ok || !waitsForLaunch(pod) {
		return
	}
	klog.FromContext(ctx).V(5).Info("Pod still waits for its containers' launch", "pod", klog.KObj(pod))
	c.queue.Add(queue.PodKey(pod))
}

// waitsForLaunch reports whether some container of pod may still wait for its key in the
// pod's barrier: the pod is not terminating, not marked completed, not ContainersReady, and
// has a container with a launch priority that is not ready.
func waitsForLaunch(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Annotations[kruisepod.LaunchPriorityCompletedAnnotation] == "true" {
		return false
	}
	if cond := kruisepod.PodCondition(pod, corev1.ContainersReady); cond != nil && cond.Status == corev1.ConditionTrue {
		return false
	}
	// Every pod event of the cluster comes here; almost no pod has a launch priority.
	if !slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool {
		_, ok := kruisepod.LaunchPriority(&c)
		return ok
	}) {
		return false
	}
	return len(waitingPriorities(pod)) > 0
}

// waitingPriorities returns the launch priorities of pod's containers that have a barrier
// env and are not ready, lowest first, repeated as often as containers have them.
func waitingPriorities(pod *corev1.Pod) []int {
	ready := map[string]bool{}
	for _, status := range pod.Status.ContainerStatuses {
		ready[status.Name] = status.Ready
	}
	var priorities []int
	for i := range pod.Spec.Containers {
		container := &pod.Spec.Containers[i]
		if ready[container.Name] {
			continue
		}
		if priority, ok := kruisepod.LaunchPriority(container); ok {
			priorities = append(priorities, priority)
		}
	}
	slices.Sort(priorities)
	return priorities
}
