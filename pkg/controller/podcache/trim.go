// Package podcache decides what of a pod the controller manager keeps in its informer
// cache. Every pod of the cluster is cached, so what a cached pod carries that no
// controller or webhook of the manager reads is paid for once per pod: on 25,000 pods the
// containers' resource requirements alone were a sixth of the manager's heap.
//
// Trim is the transform the manager's pod informer runs on every object before caching it.
// A trimmed pod keeps its metadata, its status (but for the container statuses' resource
// and mount reports) and the parts of its spec that bosun reads: node name, node selector
// and node affinity, readiness gates, the containers' names, images, env, ports and
// lifecycle hooks, the claims among its volumes, and every scalar of the spec. It loses the
// containers' resources, probes, mounts, commands and security context, the pod's other
// volumes, tolerations, inter-pod affinity, spread constraints and DNS settings.
//
// What is left is then shared among the cached pods where they hold equal values (see
// intern.go): one copy of each string that repeats across pods, and of equal label and
// annotation maps.
//
// A trimmed pod cannot be written back whole: an Update would ask the API server to drop
// what was trimmed. Trimmed tells such a pod apart, and podcontrol's writers, the only
// place where bosun updates whole pods, write the live pod instead. Reading a trimmed field
// of a cached pod is a bug that returns zero values; readers_test.go fails on any new read
// of one in the manager's packages.
package podcache

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	toolkitinformers "github.com/bosun-dev/bosun/pkg/controller/informers"
)

// trimmedMark is the terminationMessagePolicy of a trimmed pod's containers. The API server
// defaults the field on every container and refuses this value, so a pod carrying it is
// known to be a trimmed copy, and an Update of it would fail validation rather than store
// it.
const trimmedMark corev1.TerminationMessagePolicy = "bosun.dev/trimmed"

// ErrTrimmed is returned for a whole-pod write of a trimmed pod.
var ErrTrimmed = errors.New("the pod is a trimmed cached copy and cannot be written whole")

// Trim is a cache.TransformFunc: it drops metadata.managedFields from every object and, from
// pods, what the manager does not read (see the package comment), then swaps the pod's
// repeated strings and maps for the copies other pods hold. The informer hands it a freshly
// decoded object it owns, so it changes the object in place.
func Trim(obj any) (any, error) {
	obj, err := toolkitinformers.StripManagedFields(obj)
	if pod, ok := obj.(*corev1.Pod); ok && err == nil {
		trimPod(pod)
	}
	return obj, err
}

var _ cache.TransformFunc = Trim

// Trimmed reports whether pod is a trimmed cached copy.
func Trimmed(pod *corev1.Pod) bool {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].TerminationMessagePolicy == trimmedMark {
			return true
		}
	}
	return false
}

func trimPod(pod *corev1.Pod) {
	spec := &pod.Spec
	for i := range spec.InitContainers {
		trimContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		trimContainer(&spec.Containers[i])
	}
	spec.Volumes = claimVolumes(spec.Volumes)
	spec.Tolerations = nil
	spec.SecurityContext = nil
	spec.DNSConfig = nil
	spec.HostAliases = nil
	spec.TopologySpreadConstraints = nil
	spec.Overhead = nil
	spec.Resources = nil
	spec.ResourceClaims = nil
	if spec.Affinity != nil {
		spec.Affinity.PodAffinity, spec.Affinity.PodAntiAffinity = nil, nil
	}
	for i := range pod.Status.InitContainerStatuses {
		trimContainerStatus(&pod.Status.InitContainerStatuses[i])
	}
	for i := range pod.Status.ContainerStatuses {
		trimContainerStatus(&pod.Status.ContainerStatuses[i])
	}
	sharedStrings.sharePodStrings(pod)
}

// trimContainer keeps what in-place updates, container recreation and launch priority
// read: name, image, env, ports, lifecycle hooks and the scalars.
func trimContainer(c *corev1.Container) {
	c.Command, c.Args = nil, nil
	c.Resources = corev1.ResourceRequirements{}
	c.ResizePolicy = nil
	c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = nil, nil, nil
	c.VolumeMounts, c.VolumeDevices = nil, nil
	c.SecurityContext = nil
	c.EnvFrom = nil
	c.TerminationMessagePath = ""
	c.TerminationMessagePolicy = trimmedMark
}

func trimContainerStatus(s *corev1.ContainerStatus) {
	s.AllocatedResources = nil
	s.Resources = nil
	s.VolumeMounts = nil
	s.User = nil
	s.AllocatedResourcesStatus = nil
}

// claimVolumes keeps the volumes backed by a PersistentVolumeClaim, reduced to the claim's
// name: which claims a pod uses is all a workload controller asks of its volumes.
func claimVolumes(volumes []corev1.Volume) []corev1.Volume {
	var kept []corev1.Volume
	for _, v := range volumes {
		if v.PersistentVolumeClaim != nil {
			kept = append(kept, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.PersistentVolumeClaim.ClaimName, ReadOnly: v.PersistentVolumeClaim.ReadOnly},
			}})
		}
	}
	return kept
}
