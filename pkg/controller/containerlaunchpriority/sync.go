package containerlaunchpriority

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

// barrierValue is the value of every key of a barrier; the kubelet only needs the key.
const barrierValue = "true"

// completedPatch marks a pod whose barrier holds every key its containers wait for.
var completedPatch = []byte(`{"metadata":{"annotations":{"` + kruisepod.LaunchPriorityCompletedAnnotation + `":"true"}}}`)

// syncPod lets the waiting containers of highest priority of the pod with key start, and
// marks the pod completed once every waiting container may start.
func (c *Controller) syncPod(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx).WithValues("pod", key)
	ctx = klog.NewContext(ctx, logger)
	namespace, name, err := queue.SplitKey(key)
	if err != nil {
		return err
	}
	pod, err := c.pods.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading pod %s from the cache: %w", key, err)
	}
	if !waitsForLaunch(pod) {
		return nil
	}
	waiting := waitingPriorities(pod)
	lowest, highest := waiting[0], waiting[len(waiting)-1]

	barrier, err := c.barrierWith(ctx, pod, highest)
	if err != nil {
		return err
	}
	if _, ok := barrier.Data[kruisepod.BarrierKey(lowest)]; !ok {
		return nil
	}
	if _, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, completedPatch, metav1.PatchOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("marking the launch of pod %s completed: %w", key, err)
	}
	logger.V(2).Info("Every container of the pod may start")
	return nil
}

// barrierWith returns pod's barrier ConfigMap holding the key of priority, after creating
// or patching it as needed. A barrier an earlier pod of the same name left is replaced.
func (c *Controller) barrierWith(ctx context.Context, pod *corev1.Pod, priority int) (*corev1.ConfigMap, error) {
	logger := klog.FromContext(ctx)
	configMaps := c.client.CoreV1().ConfigMaps(pod.Namespace)
	name := kruisepod.BarrierName(pod.Name)
	key := kruisepod.BarrierKey(priority)
	barrier, err := configMaps.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		barrier = nil
	case err != nil:
		return nil, fmt.Errorf("reading barrier %s/%s: %w", pod.Namespace, name, err)
	case leftByEarlierPod(barrier, pod):
		err := configMaps.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &barrier.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("deleting barrier %s/%s of an earlier pod of the same name: %w", pod.Namespace, name, err)
		}
		logger.V(2).Info("Deleted the barrier of an earlier pod of the same name", "configMap", klog.KObj(barrier))
		barrier = nil
	}

	if barrier == nil {
		fresh := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name:      name,
				Namespace: pod.Namespace,
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
				}},
			},
			Data: map[string]string{key: barrierValue},
		}
		created, err := configMaps.Create(ctx, fresh, metav1.CreateOptions{})
		if err != nil {
			// AlreadyExists too: the next sync reads what is there.
			return nil, fmt.Errorf("creating barrier %s/%s: %w", pod.Namespace, name, err)
		}
		logger.V(2).Info("Created the barrier; containers may start", "configMap", klog.KObj(created), "priority", priority)
		return created, nil
	}
	if _, ok := barrier.Data[key]; ok {
		return barrier, nil
	}
	patch, err := json.Marshal(map[string]any{"data": map[string]string{key: barrierValue}})
	if err != nil {
		return nil, err
	}
	patched, err := configMaps.Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("adding key %s to barrier %s/%s: %w", key, pod.Namespace, name, err)
	}
	logger.V(2).Info("Containers of the next priority may start", "configMap", klog.KObj(patched), "priority", priority)
	return patched, nil
}

// leftByEarlierPod reports whether barrier belongs to another pod of pod's name: owned by
// a Pod of that name, but not by pod's UID.
func leftByEarlierPod(barrier *corev1.ConfigMap, pod *corev1.Pod) bool {
	earlier := false
	for _, ref := range barrier.OwnerReferences {
		if ref.Kind != "Pod" || ref.APIVersion != "v1" || ref.Name != pod.Name {
			continue
		}
		if ref.UID == pod.UID {
			return false
		}
		earlier = true
	}
	return earlier
}
