package refmanager

import (
	"context"
	"fmt"
	"reflect"
	"time"
	"unicode"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

// PodHandlers are the pod event handlers of a controller whose objects, the owners here,
// own pods through controller references (a ReplicaSet, an Advanced DaemonSet) or act on
// the pods they select or name (an ImagePullJob, a ContainerRecreateRequest). The
// controller says how a pod's owners are found and what it records about them; its own
// addPod, updatePod and deletePod call Add, Update and Delete. Like every handler, these
// read the informer caches only, record observations through the hooks, and queue owner
// keys.
//
// With ControllerOf set, the owners own pods:
//
//   - a pod added is a creation observed by the owner its controller reference names
//     (Created), or, for an orphan, news for the owners that may adopt it (Selecting). A
//     pod added while already terminating, as a restarted controller lists them, counts as
//     a deletion, never as a creation;
//   - an update that starts a pod's deletion is a deletion observed by its owner (Gone),
//     and by the owner the pod's labels before the update led to, when they changed.
//     Otherwise the owner the pod left is queued, the owner it belongs to observes the
//     change (Updated) and is queued, and an orphan whose labels or controller reference
//     changed is news for the owners that may adopt it;
//   - a pod deleted is a deletion its owner observes (Gone). An orphan's concerns nobody.
//
// With ControllerOf nil, the owners own no pods: every event queues the owners that
// Selecting returns for the pod, for an update those of the pod before and after it.
type PodHandlers[O metav1.Object] struct {
	// Kind is the owners' kind ("ReplicaSet"), for log lines.
	Kind string

	// ControllerOf returns, from the cache, the owner that a pod's controller reference ref
	// names; false when ref is not to an owner or names one that is gone (see
	// ResolveControllerRef). Nil when the owners do not own pods.
	ControllerOf func(namespace string, ref *metav1.OwnerReference) (O, bool)
	// Selecting returns, from the caches, the owners a pod concerns without being
	// controlled by them: with ControllerOf, the owners that may adopt the orphan pod (see
	// AdoptersOf); without, every owner that selects or names the pod. Nil selects none.
	Selecting func(ctx context.Context, pod *corev1.Pod) []O
	// UpdateConcerns reports whether an update of a pod may concern its owners at all. Nil
	// means every update but a periodic resync, which leaves the resource version as it
	// was.
	UpdateConcerns func(old, cur *corev1.Pod) bool

	// Enqueue queues an owner's key. It is called at each event, so it may read the
	// controller's queue then.
	Enqueue func(key string)

	// MinReadySeconds returns how long a pod of owner must stay ready before it counts as
	// available. No pod event marks that moment, so when one of the owner's pods turns
	// ready, the owner's key is queued again through EnqueueAfter that long after. Nil, or
	// zero for an owner, checks availability at the readiness event only.
	MinReadySeconds func(owner O) int32
	// EnqueueAfter queues an owner's key once delay has passed; needed with MinReadySeconds.
	EnqueueAfter func(key string, delay time.Duration)

	// Created, Updated and Gone record, before the owner's key is queued, what an event
	// shows the owner controlling the pod (its expectations); each may be nil, and none is
	// called without ControllerOf. Created: the pod's creation is observed. Updated: the
	// pod changed and is still the owner's and not terminating. Gone: the pod's deletion
	// started, or it is gone.
	Created func(ctx context.Context, key string, owner O, pod *corev1.Pod)
	Updated func(ctx context.Context, key string, owner O, old, cur *corev1.Pod)
	Gone    func(ctx context.Context, key string, owner O, pod *corev1.Pod)
}

// Add handles a pod the informer shows for the first time.
func (h *PodHandlers[O]) Add(ctx context.Context, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if h.ControllerOf == nil {
		h.enqueueSelecting(ctx, "Pod added", pod)
		return
	}
	if pod.DeletionTimestamp != nil {
		h.gone(ctx, pod)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		if owner, ok := h.ControllerOf(pod.Namespace, ref); ok {
			h.observe(ctx, "Pod created", owner, pod, func(key string) {
				if h.Created != nil {
					h.Created(ctx, key, owner, pod)
				}
			})
		}
		return
	}
	// Nobody expected an orphan, so it touches no expectations.
	h.enqueueSelecting(ctx, "Orphan pod may be adopted", pod)
}

// Update handles a change of a pod.
func (h *PodHandlers[O]) Update(ctx context.Context, old, cur any) {
	oldPod, ok1 := old.(*corev1.Pod)
	curPod, ok2 := cur.(*corev1.Pod)
	if !ok1 || !ok2 || !h.updateConcerns(oldPod, curPod) {
		return
	}
	if h.ControllerOf == nil {
		h.enqueueSelecting(ctx, "Pod changed", oldPod, curPod)
		return
	}
	if curPod.DeletionTimestamp != nil {
		// A graceful delete shows first as an update; counting it now lets a replacement be
		// created without waiting out the grace period.
		h.gone(ctx, curPod)
		if !reflect.DeepEqual(oldPod.Labels, curPod.Labels) {
			h.gone(ctx, oldPod)
		}
		return
	}
	change := CompareControllerRefs(oldPod, curPod)
	if change.Former != nil {
		if owner, ok := h.ControllerOf(oldPod.Namespace, change.Former); ok {
			h.observe(ctx, "Pod left its "+h.Kind, owner, curPod, nil)
		}
	}
	if change.Current != nil {
		if owner, ok := h.ControllerOf(curPod.Namespace, change.Current); ok {
			h.observe(ctx, "Pod changed", owner, curPod, func(key string) {
				if h.Updated != nil {
					h.Updated(ctx, key, owner, oldPod, curPod)
				}
				h.recheckAvailability(ctx, key, owner, oldPod, curPod)
			})
		}
	}
	if change.Adoptable {
		h.enqueueSelecting(ctx, "Orphan pod may be adopted", curPod)
	}
}

// Delete handles a deleted pod; obj may be a cache.DeletedFinalStateUnknown tombstone.
func (h *PodHandlers[O]) Delete(ctx context.Context, obj any) {
	pod, ok := queue.FromTombstone[*corev1.Pod](obj)
	if !ok {
		utilruntime.HandleErrorWithContext(ctx, nil, "Pod event carries an unexpected object", "type", fmt.Sprintf("%T", obj))
		return
	}
	if h.ControllerOf == nil {
		h.enqueueSelecting(ctx, "Pod deleted", pod)
		return
	}
	h.gone(ctx, pod)
}

func (h *PodHandlers[O]) updateConcerns(old, cur *corev1.Pod) bool {
	if h.UpdateConcerns != nil {
		return h.UpdateConcerns(old, cur)
	}
	return old.ResourceVersion != cur.ResourceVersion
}

// recheckAvailability queues owner again minReadySeconds after the update that made one of
// its pods ready.
func (h *PodHandlers[O]) recheckAvailability(ctx context.Context, key string, owner O, oldPod, curPod *corev1.Pod) {
	if h.MinReadySeconds == nil || podutil.IsPodReady(oldPod) || !podutil.IsPodReady(curPod) {
		return
	}
	seconds := h.MinReadySeconds(owner)
	if seconds <= 0 {
		return
	}
	delay := time.Duration(seconds) * time.Second
	klog.FromContext(ctx).V(4).Info("Pod turned ready; checking its availability once minReadySeconds have passed",
		"pod", klog.KObj(curPod), h.logKey(), klog.KObj(owner), "after", delay)
	h.EnqueueAfter(key, delay)
}

// gone records that pod is going or gone for the owner controlling it, if any.
func (h *PodHandlers[O]) gone(ctx context.Context, pod *corev1.Pod) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return
	}
	owner, ok := h.ControllerOf(pod.Namespace, ref)
	if !ok {
		return
	}
	h.observe(ctx, "Pod deleted", owner, pod, func(key string) {
		if h.Gone != nil {
			h.Gone(ctx, key, owner, pod)
		}
	})
}

// observe records a pod event through record (nil: nothing to record) and queues owner.
func (h *PodHandlers[O]) observe(ctx context.Context, what string, owner O, pod *corev1.Pod, record func(key string)) {
	key, ok := h.key(ctx, owner)
	if !ok {
		return
	}
	if record != nil {
		record(key)
	}
	klog.FromContext(ctx).V(4).Info(what, "pod", klog.KObj(pod), h.logKey(), klog.KObj(owner))
	h.Enqueue(key)
}

// enqueueSelecting queues, once each, the owners Selecting returns for pods.
func (h *PodHandlers[O]) enqueueSelecting(ctx context.Context, what string, pods ...*corev1.Pod) {
	if h.Selecting == nil {
		return
	}
	queued := map[string]bool{}
	for _, pod := range pods {
		for _, owner := range h.Selecting(ctx, pod) {
			key, ok := h.key(ctx, owner)
			if !ok || queued[key] {
				continue
			}
			queued[key] = true
			klog.FromContext(ctx).V(4).Info(what, "pod", klog.KObj(pod), h.logKey(), klog.KObj(owner))
			h.Enqueue(key)
		}
	}
}

func (h *PodHandlers[O]) key(ctx context.Context, owner O) (string, bool) {
	key, err := queue.KeyFor(owner)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Cannot queue "+h.Kind, h.logKey(), klog.KObj(owner))
		return "", false
	}
	return key, true
}

// logKey names an owner in log lines the way klog keys are spelled: "replicaSet".
func (h *PodHandlers[O]) logKey() string {
	first, size := utf8.DecodeRuneInString(h.Kind)
	if first == utf8.RuneError {
		return "owner"
	}
	return string(unicode.ToLower(first)) + h.Kind[size:]
}
