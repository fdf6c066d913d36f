package pod

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/webhook"
)

// LaunchPriority is the mutation that makes the containers of a new pod start in the order
// of their launch priorities, which the container-launch-priority controller then lets them
// start in.
func LaunchPriority() Mutation {
	return Mutation{Name: "container launch priority", Mutate: injectLaunchBarriers}
}

// injectLaunchBarriers gives each container of a new pod that asks for a launch order the
// barrier env of its priority (replacing one it carries already, say from a copied pod
// spec, which would name another pod's barrier). A pod asks for an order with the
// annotation apps.kruise.io/container-launch-priority: Ordered (the containers in spec
// order) or with KRUISE_CONTAINER_PRIORITY env values that are not all equal; a pod with
// one container, or without either, is left as it is. The barrier is named after the pod,
// so a pod that has only a generateName gets its name here. An env value that is not an
// integer refuses the pod, as OpenKruise refuses it.
func injectLaunchBarriers(ctx context.Context, _ *admissionv1.AdmissionRequest, pod *corev1.Pod) ([]webhook.Addition, error) {
	if len(pod.Spec.Containers) <= 1 {
		return nil, nil
	}
	priorities, err := declaredLaunchPriorities(pod)
	if err != nil || priorities == nil {
		return nil, err
	}
	var additions []webhook.Addition
	if pod.Name == "" && pod.GenerateName != "" {
		pod.Name = names.SimpleNameGenerator.GenerateName(pod.GenerateName)
		additions = append(additions, webhook.Addition{Path: "/metadata/name", Value: pod.Name})
	}
	for i := range pod.Spec.Containers {
		container := &pod.Spec.Containers[i]
		container.Env = slices.DeleteFunc(container.Env, func(e corev1.EnvVar) bool { return e.Name == kruisepod.LaunchBarrierEnv })
		container.Env = append(container.Env, kruisepod.BarrierEnv(pod.Name, priorities[i]))
		// "add" on a member that exists replaces it, so one operation covers containers
		// with and without an env list.
		additions = append(additions, webhook.Addition{Path: fmt.Sprintf("/spec/containers/%d/env", i), Value: slices.Clone(container.Env)})
	}
	klog.FromContext(ctx).V(4).Info("Ordering the launch of a new pod's containers", "pod", klog.KObj(pod), "priorities", priorities)
	return additions, nil
}

// declaredLaunchPriorities returns the launch priority of each container of pod, in spec
// order, or nil when the pod asks for no order: no Ordered annotation and no two different
// KRUISE_CONTAINER_PRIORITY values (a missing one counts as 0).
func declaredLaunchPriorities(pod *corev1.Pod) ([]int, error) {
	priorities := make([]int, len(pod.Spec.Containers))
	if pod.Annotations[kruisepod.LaunchPriorityAnnotation] == kruisepod.LaunchOrdered {
		for i := range priorities {
			priorities[i] = -i
		}
		return priorities, nil
	}
	for i, container := range pod.Spec.Containers {
		for _, env := range container.Env {
			if env.Name != kruisepod.LaunchPriorityEnv {
				continue
			}
			priority, err := strconv.Atoi(env.Value)
			if err != nil {
				return nil, fmt.Errorf("container %s: %s must be an integer, not %q", container.Name, kruisepod.LaunchPriorityEnv, env.Value)
			}
			priorities[i] = priority
		}
	}
	for _, priority := range priorities[1:] {
		if priority != priorities[0] {
			return priorities, nil
		}
	}
	return nil, nil
}
