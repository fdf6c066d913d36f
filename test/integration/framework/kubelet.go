package framework

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// podGCDelay is how long a pod is left being deleted on no node before the Kubelet removes it.
const podGCDelay = 5 * time.Second

// KubeletOptions configure a Kubelet.
type KubeletOptions struct {
	// Unbound leaves pods unbound (spec.nodeName empty), for pods that name their node
	// otherwise, as DaemonSet pods do through node affinity; a deleted unbound pod goes at
	// once, as no kubelet has it to end. Otherwise each pod is bound to "node-<pod name>"
	// unless PlaceOn says another node.
	Unbound bool
}

// Kubelet stands in for the scheduler and the kubelets of a real cluster, for the pods of
// one test's namespace. It binds each pod to a node (through the binding subresource, as a
// scheduler does: that sets spec.nodeName and PodScheduled) and then reports it as a kubelet
// does once the pod's containers run: phase Running, one status per container with the
// spec's image and an image ID for it — a container whose spec image changed in place is
// reported restarted with the new image — ContainersReady, and Ready once the containers
// and every readiness gate are. Tests steer single pods through its setters, before or after
// Start. It lists and watches again on its own after a restart of kube-apiserver. It also
// plays the pod garbage collector's part for pods that are being deleted on no node.
type Kubelet struct {
	e     *Env
	opts  KubeletOptions
	queue workqueue.TypedRateLimitingInterface[string]
	store cache.Store // the pods, once started

	mu sync.Mutex
	// nodes are the nodes pods are bound to, by pod name; "node-<pod>" when not set.
	nodes map[string]string
	// ignored pods are left Pending and unscheduled.
	ignored map[string]bool
	// unready pods have their containers reported not ready.
	unready map[string]bool
	// oldImages pods keep reporting the images their containers run, whatever the spec says.
	oldImages map[string]bool
	// unpullable images are never pulled: containers of them wait, not ready.
	unpullable map[string]bool
}

// NewKubelet returns the stand-in for e's namespace, not started yet.
func NewKubelet(e *Env, opts KubeletOptions) *Kubelet {
	return &Kubelet{
		e:          e,
		opts:       opts,
		queue:      workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](10*time.Millisecond, time.Second)),
		nodes:      map[string]string{},
		ignored:    map[string]bool{},
		unready:    map[string]bool{},
		oldImages:  map[string]bool{},
		unpullable: map[string]bool{},
	}
}

// Start runs the stand-in until the test ends.
func (k *Kubelet) Start(t testing.TB) {
	t.Helper()
	enqueue := func(obj any) {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		if pod, ok := obj.(*corev1.Pod); ok {
			k.queue.Add(pod.Name)
		}
	}
	informer := k.e.RunPodInformer(t, cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	k.mu.Lock()
	k.store = informer.GetStore()
	k.mu.Unlock()
	var workers sync.WaitGroup
	for range 2 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for k.next(t) {
			}
		}()
	}
	// Runs before the informer stops (cleanups run last-registered first).
	t.Cleanup(func() {
		k.queue.ShutDown()
		workers.Wait()
	})
}

func (k *Kubelet) next(t testing.TB) bool {
	name, quit := k.queue.Get()
	if quit {
		return false
	}
	defer k.queue.Done(name)
	if err := k.sync(name); err != nil {
		if k.e.Ctx.Err() != nil {
			k.queue.Forget(name)
			return true
		}
		// Conflicts are routine, and a kube-apiserver that a test restarts refuses
		// connections for a while: not worth a line each.
		if !apierrors.IsConflict(err) && !utilnet.IsConnectionRefused(err) && !utilnet.IsConnectionReset(err) {
			t.Logf("kubelet stand-in: %v (retrying)", err)
		}
		k.queue.AddRateLimited(name)
		return true
	}
	k.queue.Forget(name)
	return true
}

// PlaceOn binds the pod, when it is not yet, to node.
func (k *Kubelet) PlaceOn(name, node string) { k.change(name, func() { k.nodes[name] = node }) }

// Ignore leaves the pod Pending and unscheduled.
func (k *Kubelet) Ignore(name string) { k.change(name, func() { k.ignored[name] = true }) }

// SetReady reports the pod's containers ready or not.
func (k *Kubelet) SetReady(name string, ready bool) {
	k.change(name, func() { k.unready[name] = !ready })
}

// KeepImages makes the pod's containers keep (or stop keeping) the images they run when
// their spec changes, as if the kubelet had not restarted them yet.
func (k *Kubelet) KeepImages(name string, keep bool) {
	k.change(name, func() { k.oldImages[name] = keep })
}

// FailPulls makes every pull of image fail, before the stand-in starts: containers of it
// wait with ErrImagePull and are not ready.
func (k *Kubelet) FailPulls(image string) {
	k.mu.Lock()
	k.unpullable[image] = true
	k.mu.Unlock()
}

func (k *Kubelet) change(name string, edit func()) {
	k.mu.Lock()
	edit()
	k.mu.Unlock()
	k.queue.Add(name)
}

// sync brings one pod to what a scheduler and a kubelet would make of it.
func (k *Kubelet) sync(name string) error {
	k.mu.Lock()
	store := k.store
	ignored, unready, oldImages := k.ignored[name], k.unready[name], k.oldImages[name]
	node := k.nodes[name]
	unpullable := maps.Clone(k.unpullable)
	k.mu.Unlock()
	if node == "" {
		node = "node-" + name
	}
	obj, exists, err := store.GetByKey(k.e.Namespace + "/" + name)
	if err != nil || !exists || ignored {
		return err
	}
	pod := obj.(*corev1.Pod)
	pods := k.e.Client.CoreV1().Pods(k.e.Namespace)
	if pod.DeletionTimestamp != nil && pod.Spec.NodeName == "" {
		// The delete of a pod no node runs is two writes, the deletion timestamp and then
		// the removal: a kube-apiserver killed between them leaves the pod being deleted
		// for good. kube-controller-manager's pod garbage collector removes such pods, a
		// while later; the stand-in does not race the delete under way.
		if wait := podGCDelay - time.Since(pod.DeletionTimestamp.Time); wait > 0 {
			k.queue.AddAfter(name, wait)
			return nil
		}
		err := pods.Delete(k.e.Ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: metav1.NewUIDPreconditions(string(pod.UID))})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("removing pod %s, being deleted and on no node: %w", name, err)
		}
		return nil
	}
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	if pod.Spec.NodeName == "" && !k.opts.Unbound {
		binding := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: pod.Name, UID: pod.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node},
		}
		err := pods.Bind(k.e.Ctx, binding, metav1.CreateOptions{})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("binding pod %s to node %s: %w", name, node, err)
		}
		return nil // the bound pod comes back through the informer
	}
	status := RunningStatus(pod, !unready, oldImages, unpullable, metav1.Now())
	if equality.Semantic.DeepEqual(status, &pod.Status) {
		return nil
	}
	updated := pod.DeepCopy()
	updated.Status = *status
	if _, err := pods.UpdateStatus(k.e.Ctx, updated, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reporting the status of pod %s: %w", name, err)
	}
	return nil
}

// RunningStatus is the status a kubelet reports for pod once its containers run (ready or
// not), at now. With oldImages, containers that run keep the images they run; containers of
// unpullable images wait for them.
func RunningStatus(pod *corev1.Pod, ready, oldImages bool, unpullable map[string]bool, now metav1.Time) *corev1.PodStatus {
	status := pod.Status.DeepCopy()
	status.Phase = corev1.PodRunning
	if status.StartTime == nil {
		status.StartTime = &now
	}
	previous := map[string]corev1.ContainerStatus{}
	for _, s := range pod.Status.ContainerStatuses {
		previous[s.Name] = s
	}
	status.ContainerStatuses = nil
	containersReady := true
	for _, c := range pod.Spec.Containers {
		s, ran := previous[c.Name]
		if !ran || (s.Image != c.Image && !oldImages) {
			restarts := int32(0)
			if ran {
				restarts = s.RestartCount + 1
			}
			s = corev1.ContainerStatus{
				Name: c.Name, Image: c.Image, ImageID: ImageID(c.Image), RestartCount: restarts, Started: ptr.To(true),
				ContainerID: fmt.Sprintf("containerd://%s-%s-%d", pod.UID, c.Name, restarts),
				State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			}
			if unpullable[c.Image] {
				s = corev1.ContainerStatus{Name: c.Name, Image: c.Image, RestartCount: restarts,
					State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}}
			}
		}
		s.Ready = ready && s.State.Running != nil
		containersReady = containersReady && s.Ready
		status.ContainerStatuses = append(status.ContainerStatuses, s)
	}
	gatesReady := true
	for _, gate := range pod.Spec.ReadinessGates {
		gatesReady = gatesReady && PodConditionTrue(pod, gate.ConditionType)
	}
	setPodCondition(status, corev1.PodInitialized, true, now)
	setPodCondition(status, corev1.ContainersReady, containersReady, now)
	setPodCondition(status, corev1.PodReady, containersReady && gatesReady, now)
	return status
}

// ContainerRestarts returns how often the pod's first container restarted, as a Kubelet
// restarts it for every image change it sees.
func ContainerRestarts(pod *corev1.Pod) int32 {
	if len(pod.Status.ContainerStatuses) == 0 {
		return 0
	}
	return pod.Status.ContainerStatuses[0].RestartCount
}

// PodConditionTrue reports whether the pod has a condition of type t whose status is True.
func PodConditionTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// setPodCondition sets the condition of type t, whose lastTransitionTime moves to now only
// when its status changes.
func setPodCondition(status *corev1.PodStatus, t corev1.PodConditionType, value bool, now metav1.Time) {
	want := corev1.ConditionFalse
	if value {
		want = corev1.ConditionTrue
	}
	for i := range status.Conditions {
		if c := &status.Conditions[i]; c.Type == t {
			if c.Status != want {
				c.Status, c.LastTransitionTime = want, now
			}
			return
		}
	}
	status.Conditions = append(status.Conditions, corev1.PodCondition{Type: t, Status: want, LastTransitionTime: now})
}

// ImageID is the image ID a kubelet would report for image: its repository and a digest.
func ImageID(image string) string {
	name, _, _ := strings.Cut(image, ":")
	return fmt.Sprintf("%s@sha256:%x", name, sha256.Sum256([]byte(image)))
}
