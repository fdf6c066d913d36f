package containermeta

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/expectations"
	"github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/daemon/containerstop"
	"github.com/bosun-dev/bosun/pkg/daemon/controller"
	"github.com/bosun-dev/bosun/pkg/features"
)

const (
	// ControllerName is the controller's canonical name, its client's User-Agent suffix and
	// the source of the events it records.
	ControllerName = "containermeta-agent"

	// Workers is how many pods are worked on at once. Stopping a container blocks a worker
	// for up to the pod's grace period.
	Workers = 10

	// eventDelay is how long a pod event waits in the queue, so that the burst of status
	// writes the kubelet makes while it starts containers is reported once.
	eventDelay = time.Second

	// A pod's sync is retried after 500 ms, doubling up to a cap between 50 and 55 s (chosen
	// once per process, so that the agents of many nodes do not retry in step).
	initialRetryDelay = 500 * time.Millisecond
	maxRetryDelay     = 50 * time.Second
	maxRetryJitter    = 5 * time.Second

	// writtenVersionWait is how long the informer may take to show this agent's write to a
	// pod before the write is taken as overtaken.
	writtenVersionWait = 30 * time.Second

	// sidecarSetHashKey marks pods that an OpenKruise SidecarSet injected containers into.
	sidecarSetHashKey = "kruise.io/sidecarset-hash"
)

// Event reasons, the kubelet's, on the pod.
const (
	// KillingReason (Normal): a container is being stopped so that it starts again with the
	// env its pod's metadata gives it now.
	KillingReason = "Killing"
	// FailedPreStopHookReason (Warning): the container's preStop hook failed; the container
	// is stopped anyway.
	FailedPreStopHookReason = "FailedPreStopHook"
)

// Controller reports the runtime's containers on the pods of OpenKruise workloads on this
// node, and restarts those whose env from metadata is out of date during in-place updates.
type Controller struct {
	client          kubernetes.Interface
	runtime         controller.RuntimeSource
	recorder        record.EventRecorder
	clock           clock.Clock
	stopper         *containerstop.Stopper
	envFromMetadata bool

	pods         corelisters.PodLister
	cachesSynced []cache.InformerSynced

	// written holds, by pod key, the resource version of this agent's last report on each
	// pod until the informer shows it: until then the cached pod carries the previous
	// report, and a sync would compute and write the same change again.
	written *expectations.VersionStore

	queue workqueue.TypedRateLimitingInterface[string]
	// syncHandler is syncPod; tests replace it to watch the worker loop.
	syncHandler queue.SyncFunc[string]
}

// New builds the controller from the node agent's context: the informer of the pods bound
// to its node, its runtime, its client, recorder and feature gates.
func New(ctx context.Context, cc *controller.Context) (controller.Controller, error) {
	opts := []options.Option{}
	if cc.FeatureGate != nil {
		opts = append(opts, options.WithFeatureGate(cc.FeatureGate))
	}
	return NewController(ctx, cc.Pods.Core().V1().Pods(), cc.Runtime, cc.KubeClient, cc.Recorder, opts...)
}

// NewController builds the controller on the informer of this node's pods. runtime hands
// out the CRI connection; client writes the report; events go through recorder. Of the
// options it reads the clock, the feature gates (InPlaceUpdateEnvFromMetadata) and the
// queue wrapper.
func NewController(ctx context.Context, pods coreinformers.PodInformer, runtime controller.RuntimeSource,
	client kubernetes.Interface, recorder record.EventRecorder, opts ...options.Option) (*Controller, error) {
	settings := options.Apply(opts)
	c := &Controller{
		client:          client,
		runtime:         runtime,
		recorder:        recorder,
		clock:           settings.Clock,
		stopper:         containerstop.NewStopper(settings.Clock),
		envFromMetadata: settings.FeatureGate.Enabled(features.InPlaceUpdateEnvFromMetadata),
		pods:            pods.Lister(),
		cachesSynced:    []cache.InformerSynced{pods.Informer().HasSynced},
		queue:           settings.WrapQueue(queue.NewJittered[string](queue.NameContainerMetaAgent, initialRetryDelay, maxRetryDelay, maxRetryJitter)),
	}
	c.written = expectations.NewVersionStoreWithTimeout(settings.Clock, c.cachedVersion, writtenVersionWait)
	c.syncHandler = c.syncPod
	if err := informers.AddHandlers(ctx, pods.Informer(), "Pod",
		informers.Handlers{Add: c.addPod, Update: c.updatePod, Delete: c.deletePod}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run waits for the pod cache to sync, then works on pods with Workers workers until ctx
// ends.
func (c *Controller) Run(ctx context.Context) {
	queue.RunController(ctx, ControllerName, c.queue, Workers, c.cachesSynced, c.syncHandler)
}

// addPod queues a pod that already carries a report, when it needs a new one. Pods without
// a report are left to their next change: at the agent's start every pod of the node is
// added, and reporting on all of them at once would flood the API server.
func (c *Controller) addPod(ctx context.Context, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if _, reported := pod.Annotations[appsv1beta1.RuntimeContainersMetaKey]; !reported {
		return
	}
	if c.needsReport(nil, pod) {
		klog.FromContext(ctx).V(5).Info("Pod added whose report is out of date", "pod", klog.KObj(pod))
		c.enqueue(pod)
	}
}

func (c *Controller) updatePod(ctx context.Context, old, cur any) {
	oldPod, ok := old.(*corev1.Pod)
	if !ok {
		return
	}
	pod, ok := cur.(*corev1.Pod)
	if !ok {
		return
	}
	if c.needsReport(oldPod, pod) {
		klog.FromContext(ctx).V(5).Info("Pod changed; its report may be out of date", "pod", klog.KObj(pod), "resourceVersion", pod.ResourceVersion)
		c.enqueue(pod)
	}
}

// deletePod forgets what this agent wrote to the pod. obj may be a tombstone.
func (c *Controller) deletePod(ctx context.Context, obj any) {
	pod, ok := queue.FromTombstone[*corev1.Pod](obj)
	if !ok {
		utilruntime.HandleErrorWithContext(ctx, nil, "Pod event carries an unexpected object", "type", fmt.Sprintf("%T", obj))
		return
	}
	c.written.Forget(queue.PodKey(pod))
}

// enqueue queues pod after eventDelay, unless it is going away or runs no container yet.
func (c *Controller) enqueue(pod *corev1.Pod) {
	if pod.DeletionTimestamp != nil || len(pod.Status.ContainerStatuses) == 0 {
		return
	}
	c.queue.AddAfter(queue.PodKey(pod), eventDelay)
}

// needsReport reports whether pod (changed from old; nil for a pod just added) is one this
// agent reports on and whose report may be out of date: a container changed, the report
// misses a running container or names another one, or (gate InPlaceUpdateEnvFromMetadata)
// the values a container's env should read from the pod's metadata differ from those the
// report says it runs with, or changed with this event.
func (c *Controller) needsReport(old, pod *corev1.Pod) bool {
	if !reportedOn(pod) {
		return false
	}
	if old != nil && len(old.Spec.Containers) != len(pod.Spec.Containers) {
		return true
	}
	reported, _ := kruisepod.ReadRuntimeContainerMeta(pod)
	for _, status := range pod.Status.ContainerStatuses {
		if status.ContainerID == "" {
			continue
		}
		if reported == nil || len(reported.Containers) != len(pod.Status.ContainerStatuses) {
			return true
		}
		entry := reported.Container(status.Name)
		if entry == nil || entry.ContainerID != status.ContainerID {
			return true
		}
		if !c.envFromMetadata {
			continue
		}
		spec := specContainer(pod, status.Name)
		if spec == nil {
			continue
		}
		expected := kruisepod.ExpectedEnvFromMetadataHash(spec, pod.Labels, pod.Annotations)
		if expected != entry.Hashes.ExtractedEnvFromMetadataHash {
			return true
		}
		if old != nil {
			if oldSpec := specContainer(old, status.Name); oldSpec != nil && kruisepod.ExpectedEnvFromMetadataHash(oldSpec, old.Labels, old.Annotations) != expected {
				return true
			}
		}
	}
	return false
}

// reportedOn reports whether pod belongs to an OpenKruise workload: its controller is of
// the apps.kruise.io group, or a SidecarSet injected it.
func reportedOn(pod *corev1.Pod) bool {
	if _, injected := pod.Annotations[sidecarSetHashKey]; injected {
		return true
	}
	owner := metav1.GetControllerOf(pod)
	if owner == nil {
		return false
	}
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	return err == nil && gv.Group == appsv1beta1.GroupName
}

// specContainer returns the spec of pod's container called name, or nil.
func specContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

// cachedVersion is the UID and resource version of the pod the informer holds under
// namespace and name (expectations.CachedVersion).
func (c *Controller) cachedVersion(namespace, name string) (types.UID, string, bool) {
	pod, err := c.pods.Pods(namespace).Get(name)
	if err != nil {
		return "", "", false
	}
	return pod.UID, pod.ResourceVersion, true
}
