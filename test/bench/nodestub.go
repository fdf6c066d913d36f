package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// nodeStub plays the scheduler and the kubelets of the simulated nodes for the pods of one
// namespace, as far as the workload controllers can tell: it binds every new pod to a node
// (the scheduler's Binding), reports the status a kubelet reports once the pod's containers
// run (see stubPodStatus: Running, container statuses with the spec's images and an imageID
// per image, Ready once the containers are and every readiness gate is True), reports a
// restarted container with the new image after an in-place image update, and removes a
// bound pod being deleted at once (the kubelet's final delete, grace period 0). It watches
// the pods and reacts to every change, its own writes included, which it finds already
// done; a write that conflicts is redone when the newer pod arrives through the watch.
type nodeStub struct {
	client   kubernetes.Interface
	nodes    []string
	factory  informers.SharedInformerFactory
	informer cache.SharedIndexInformer
	lister   corelisters.PodLister
	queue    workqueue.TypedRateLimitingInterface[string]

	mu   sync.Mutex
	errs []error
}

// newNodeStub makes a stub for the pods of namespace, binding them to nodes (names of
// simulated nodes). client should carry agentUserAgent, so that the audit log charges its
// writes to the simulated agents.
func newNodeStub(client kubernetes.Interface, namespace string, nodes []string) *nodeStub {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	pods := factory.Core().V1().Pods()
	s := &nodeStub{
		client:   client,
		nodes:    nodes,
		factory:  factory,
		informer: pods.Informer(),
		lister:   pods.Lister(),
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
	}
	_, _ = s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.enqueue,
		UpdateFunc: func(_, cur any) { s.enqueue(cur) },
	})
	return s
}

func (s *nodeStub) enqueue(obj any) {
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		s.queue.Add(key)
	}
}

// run starts the watch and workers parallel writers and returns when ctx ends.
func (s *nodeStub) run(ctx context.Context, workers int) {
	defer s.queue.ShutDown()
	s.factory.Start(ctx.Done())
	defer s.factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), s.informer.HasSynced) {
		return
	}
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() {
			for s.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	s.queue.ShutDown()
	wg.Wait()
}

// waitForCache returns once the stub's watch has listed the pods.
func (s *nodeStub) waitForCache(ctx context.Context) error {
	return framework.WaitFor(ctx, time.Minute, "the node stub's pod cache to sync", func(context.Context) (bool, error) {
		return s.informer.HasSynced(), nil
	})
}

func (s *nodeStub) processNext(ctx context.Context) bool {
	key, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(key)
	if err := s.sync(ctx, key); err != nil {
		if ctx.Err() != nil {
			return false
		}
		s.mu.Lock()
		s.errs = append(s.errs, err)
		s.mu.Unlock()
		s.queue.AddRateLimited(key)
		return true
	}
	s.queue.Forget(key)
	return true
}

// sync does the next thing a scheduler or kubelet would do to one pod.
func (s *nodeStub) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	pod, err := s.lister.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading pod %s from the cache: %w", key, err)
	}
	pods := s.client.CoreV1().Pods(namespace)
	switch {
	case pod.DeletionTimestamp != nil:
		if pod.Spec.NodeName == "" {
			return nil // the API server removes an unbound pod by itself
		}
		// The kubelet has stopped the containers: the final delete.
		err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: metav1.NewUIDPreconditions(string(pod.UID))})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("removing pod %s: %w", key, err)
		}
		return nil
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return nil
	case pod.Spec.NodeName == "":
		binding := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: pod.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: s.nodeFor(pod)},
		}
		err := pods.Bind(ctx, binding, metav1.CreateOptions{})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("binding pod %s: %w", key, err)
		}
		return nil // the bound pod comes back through the watch
	}
	status := stubPodStatus(pod, metav1.Now())
	if apiequality.Semantic.DeepEqual(status, &pod.Status) {
		return nil
	}
	updated := pod.DeepCopy()
	updated.Status = *status
	_, err = pods.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("reporting the status of pod %s: %w", key, err)
	}
	return nil
}

// nodeFor is the node a pod's required node affinity names (a DaemonSet's pod), else one
// spread by the pod's name's hash, as a scheduler spreads the pods of one workload.
func (s *nodeStub) nodeFor(pod *corev1.Pod) string {
	if node := podTargetNode(pod); node != "" {
		return node
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(pod.Name))
	return s.nodes[int(h.Sum32()%uint32(len(s.nodes)))]
}

func (s *nodeStub) errors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.errs
}

// stubPodStatus is the status a kubelet reports for a bound pod once its containers run, at
// now: phase Running; per container of the spec, the status it had when it still runs the
// spec's image, else a started, running container of that image (one restart more than
// before when it ran another image: an in-place image update restarts the container) with
// the image's ID; conditions PodScheduled, Initialized and ContainersReady True, and Ready
// True once every readiness gate's condition is True as well. A condition's
// lastTransitionTime moves to now only when its status changes, so a pod whose status is
// already this gets an equal status back.
func stubPodStatus(pod *corev1.Pod, now metav1.Time) *corev1.PodStatus {
	status := pod.Status.DeepCopy()
	status.Phase = corev1.PodRunning
	if status.StartTime == nil {
		status.StartTime = &now
	}
	previous := make(map[string]corev1.ContainerStatus, len(pod.Status.ContainerStatuses))
	for _, c := range pod.Status.ContainerStatuses {
		previous[c.Name] = c
	}
	status.ContainerStatuses = make([]corev1.ContainerStatus, 0, len(pod.Spec.Containers))
	for _, c := range pod.Spec.Containers {
		s, ran := previous[c.Name]
		if !ran || s.Image != c.Image {
			restarts := int32(0)
			if ran {
				restarts = s.RestartCount + 1
			}
			s = corev1.ContainerStatus{
				Name:         c.Name,
				Image:        c.Image,
				ImageID:      stubImageID(c.Image),
				ContainerID:  fmt.Sprintf("containerd://%s-%s-%d", pod.UID, c.Name, restarts),
				RestartCount: restarts,
				Started:      ptr.To(true),
				State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			}
		}
		s.Ready = true
		status.ContainerStatuses = append(status.ContainerStatuses, s)
	}
	gatesTrue := true
	for _, gate := range pod.Spec.ReadinessGates {
		gatesTrue = gatesTrue && conditionStatus(pod.Status.Conditions, gate.ConditionType) == corev1.ConditionTrue
	}
	setStubCondition(status, corev1.PodScheduled, true, now)
	setStubCondition(status, corev1.PodInitialized, true, now)
	setStubCondition(status, corev1.ContainersReady, true, now)
	setStubCondition(status, corev1.PodReady, gatesTrue, now)
	return status
}

// stubImageID is the ID a container runtime reports for image: its repository and a digest
// of the reference, so that every image has its own.
func stubImageID(image string) string {
	repository := image
	if slash, colon := strings.LastIndexByte(image, '/'), strings.LastIndexByte(image, ':'); colon > slash {
		repository = image[:colon]
	}
	sum := sha256.Sum256([]byte(image))
	return repository + "@sha256:" + hex.EncodeToString(sum[:])
}

// conditionStatus returns the status of the condition of type t, "" when there is none.
func conditionStatus(conditions []corev1.PodCondition, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// setStubCondition sets the condition of type t to value; its lastTransitionTime moves to
// now only when its status changes.
func setStubCondition(status *corev1.PodStatus, t corev1.PodConditionType, value bool, now metav1.Time) {
	want := corev1.ConditionFalse
	if value {
		want = corev1.ConditionTrue
	}
	for i := range status.Conditions {
		if c := &status.Conditions[i]; c.Type == t {
			if c.Status != want {
				c.Status, c.LastTransitionTime, c.Reason, c.Message = want, now, "", ""
			}
			return
		}
	}
	status.Conditions = append(status.Conditions, corev1.PodCondition{Type: t, Status: want, LastTransitionTime: now})
}
