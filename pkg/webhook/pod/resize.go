package pod

import (
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Annotations the kubelet puts on the mirror pods of static pods.
const (
	configSourceAnnotation = "kubernetes.io/config.source"
	configMirrorAnnotation = "kubernetes.io/config.mirror"
	apiConfigSource        = "api"
)

// isResize reports whether an update only resizes containers in place: nothing but the
// resources of regular containers changed, only CPU and memory (the resources the kubelet
// resizes in place), each under a resize policy that does not restart the container, on a
// pod that is not static and keeps its QoS class. Such an update disrupts nothing, so a
// budget may treat it apart from UPDATE (operation RESIZE).
func isResize(old, pod *corev1.Pod) bool {
	if isStatic(old) || isStatic(pod) || qosClass(old) != qosClass(pod) {
		return false
	}
	before, after := old.Spec.DeepCopy(), pod.Spec.DeepCopy()
	if len(before.Containers) != len(after.Containers) {
		return false
	}
	resized := false
	for i := range after.Containers {
		b, a := &before.Containers[i], &after.Containers[i]
		if b.Name != a.Name {
			return false
		}
		for _, name := range changedResources(b.Resources, a.Resources) {
			if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
				return false
			}
			if policy := resizePolicy(a, name); policy != "" && policy != corev1.NotRequired {
				return false
			}
			resized = true
		}
		b.Resources, a.Resources = corev1.ResourceRequirements{}, corev1.ResourceRequirements{}
	}
	return resized && apiequality.Semantic.DeepEqual(before, after)
}

// changedResources returns the resources whose request or limit differs.
func changedResources(before, after corev1.ResourceRequirements) []corev1.ResourceName {
	var changed []corev1.ResourceName
	seen := map[corev1.ResourceName]bool{}
	for _, lists := range [][2]corev1.ResourceList{{before.Requests, after.Requests}, {before.Limits, after.Limits}} {
		for _, list := range lists {
			for name := range list {
				if seen[name] {
					continue
				}
				seen[name] = true
				if !sameQuantity(before.Requests, after.Requests, name) || !sameQuantity(before.Limits, after.Limits, name) {
					changed = append(changed, name)
				}
			}
		}
	}
	return changed
}

func sameQuantity(a, b corev1.ResourceList, name corev1.ResourceName) bool {
	qa, inA := a[name]
	qb, inB := b[name]
	return inA == inB && qa.Cmp(qb) == 0
}

// resizePolicy returns the container's restart policy for resizing the resource, "" when
// it has none (which means NotRequired).
func resizePolicy(c *corev1.Container, name corev1.ResourceName) corev1.ResourceResizeRestartPolicy {
	for _, p := range c.ResizePolicy {
		if p.ResourceName == name {
			return p.RestartPolicy
		}
	}
	return ""
}

// isStatic reports whether the pod is the mirror of a static pod, which the kubelet does
// not resize.
func isStatic(pod *corev1.Pod) bool {
	if _, mirror := pod.Annotations[configMirrorAnnotation]; mirror {
		return true
	}
	source, ok := pod.Annotations[configSourceAnnotation]
	return ok && source != apiConfigSource
}

// qosClass computes a pod's QoS class from its spec as the kubelet does for container
// resources: BestEffort without any CPU or memory request or limit, Guaranteed when every
// container limits both and requests (where set) equal the limits, else Burstable.
func qosClass(pod *corev1.Pod) corev1.PodQOSClass {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	guaranteed := true
	containers := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, c := range containers {
		for name, q := range c.Resources.Requests {
			if isQoSResource(name) && q.Sign() > 0 {
				add(requests, name, q)
			}
		}
		limited := 0
		for name, q := range c.Resources.Limits {
			if isQoSResource(name) && q.Sign() > 0 {
				add(limits, name, q)
				limited++
			}
		}
		if limited != 2 {
			guaranteed = false
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if limit, ok := limits[name]; !ok || limit.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

func isQoSResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory
}

func add(list corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	sum := list[name]
	sum.Add(q)
	list[name] = sum
}
