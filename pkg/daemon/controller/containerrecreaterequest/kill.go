package containerrecreaterequest

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/daemon/containerstop"
	"github.com/bosun-dev/bosun/pkg/daemon/cri"
)

const (
	// defaultStopGraceSeconds is the grace period of a request that sets none (admission
	// normally copies the pod's).
	defaultStopGraceSeconds = 30
	// minStopGraceSeconds is the least the runtime is given between the stop signal and the
	// kill, whatever the preStop hook took: the kubelet's floor.
	minStopGraceSeconds = containerstop.MinGraceSeconds
)

// kill stops container (the current instance of the target called name) the way the kubelet
// stops a container: event, preStop hook within the grace period, then StopContainer with
// what is left of the grace period. The kubelet starts the replacement.
func (c *Controller) kill(ctx context.Context, crr *appsv1beta1.ContainerRecreateRequest, podUID, name string, container cri.Container, rt *cri.Runtime) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("container", name))
	grace := int64(defaultStopGraceSeconds)
	if crr.Spec.Strategy != nil && crr.Spec.Strategy.TerminationGracePeriodSeconds != nil {
		grace = *crr.Spec.Strategy.TerminationGracePeriodSeconds
	}
	ref := c.containerReference(crr, podUID, name)
	c.recorder.Event(ref, corev1.EventTypeNormal, KillingReason, fmt.Sprintf("Stopping container %s by ContainerRecreateRequest %s", name, crr.Name))

	stop := containerstop.Container{
		PodUID: podUID, ID: container.ID, GraceSeconds: grace,
		HookFailed: func(error) {
			// As the kubelet: the event does not carry the hook's output, which may hold secrets.
			c.recorder.Event(ref, corev1.EventTypeWarning, FailedPreStopHookReason, "PreStopHook failed")
		},
	}
	if target := specContainer(crr, name); target != nil && target.PreStop != nil {
		stop.PreStop = &corev1.LifecycleHandler{Exec: target.PreStop.Exec, HTTPGet: target.PreStop.HTTPGet, TCPSocket: target.PreStop.TCPSocket}
		stop.Ports = target.Ports
	}
	return c.stopper.Stop(ctx, rt, stop)
}

// specContainer returns the request's entry for the container called name.
func specContainer(crr *appsv1beta1.ContainerRecreateRequest, name string) *appsv1beta1.ContainerRecreateRequestContainer {
	for i := range crr.Spec.Containers {
		if crr.Spec.Containers[i].Name == name {
			return &crr.Spec.Containers[i]
		}
	}
	return nil
}

// containerReference names the container called name of crr's pod, for events, as the
// kubelet's container events do. The pod comes from the informer when it is there (and is
// the request's pod), otherwise from what the request says about it.
func (c *Controller) containerReference(crr *appsv1beta1.ContainerRecreateRequest, podUID, name string) *corev1.ObjectReference {
	ref := &corev1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: crr.Namespace, Name: crr.Spec.PodName, UID: types.UID(podUID),
		FieldPath: fmt.Sprintf("spec.containers{%s}", name),
	}
	if pod, err := c.pods.Pods(crr.Namespace).Get(crr.Spec.PodName); err == nil && string(pod.UID) == podUID {
		ref.ResourceVersion = pod.ResourceVersion
	}
	return ref
}
