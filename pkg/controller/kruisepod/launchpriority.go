package kruisepod

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Container launch priority: the containers of a pod start one priority at a time, highest
// first. The pod webhook gives every container of such a pod an env read from one key of
// the pod's barrier ConfigMap, and the kubelet cannot start a container before that key
// exists; the container-launch-priority controller adds the keys as the containers of
// higher priority become ready. In-place updates go through the same order (batches.go).
// The names are OpenKruise's.
const (
	// LaunchPriorityEnv is the env in which a container declares its launch priority, an
	// integer (0 when absent); the higher, the earlier.
	LaunchPriorityEnv = "KRUISE_CONTAINER_PRIORITY"
	// LaunchBarrierEnv is the env the pod webhook adds to each container of a pod with
	// launch priorities, read from the key of the container's priority in the pod's
	// barrier ConfigMap.
	LaunchBarrierEnv = "KRUISE_CONTAINER_BARRIER"
	// LaunchPriorityAnnotation set to LaunchOrdered on a pod gives its containers
	// descending priorities in the order of the pod spec, whatever their env says.
	LaunchPriorityAnnotation = "apps.kruise.io/container-launch-priority"
	// LaunchOrdered is the value of LaunchPriorityAnnotation that orders the containers.
	LaunchOrdered = "Ordered"
	// LaunchPriorityCompletedAnnotation ("true") marks a pod whose barrier holds every key
	// its containers wait for: the controller has nothing more to do for it.
	LaunchPriorityCompletedAnnotation = "apps.kruise.io/container-launch-priority-completed"

	barrierSuffix    = "-barrier"
	barrierKeyPrefix = "p_"
)

// BarrierName is the name of the barrier ConfigMap of the pod named podName, in the pod's
// namespace.
func BarrierName(podName string) string { return podName + barrierSuffix }

// BarrierKey is the key of the barrier ConfigMap that the containers of priority priority
// wait for.
func BarrierKey(priority int) string { return barrierKeyPrefix + strconv.Itoa(priority) }

// BarrierEnv is the env that makes a container of pod podName with priority priority wait
// for its key in the pod's barrier.
func BarrierEnv(podName string, priority int) corev1.EnvVar {
	return corev1.EnvVar{
		Name: LaunchBarrierEnv,
		ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: BarrierName(podName)},
			Key:                  BarrierKey(priority),
		}},
	}
}

// LaunchPriority returns the launch priority container waits with, read from the key of
// its barrier env, and false when it has none (it starts without waiting). A key that is
// not p_<integer> reads as priority 0, as OpenKruise reads it.
func LaunchPriority(container *corev1.Container) (int, bool) {
	for _, env := range container.Env {
		if env.Name != LaunchBarrierEnv {
			continue
		}
		if env.ValueFrom == nil || env.ValueFrom.ConfigMapKeyRef == nil {
			return 0, false
		}
		priority, err := strconv.Atoi(strings.TrimPrefix(env.ValueFrom.ConfigMapKeyRef.Key, barrierKeyPrefix))
		if err != nil {
			return 0, true
		}
		return priority, true
	}
	return 0, false
}
