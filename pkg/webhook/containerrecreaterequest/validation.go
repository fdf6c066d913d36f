package containerrecreaterequest

import (
	"fmt"
	"slices"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
)

// MinActiveDeadlineSeconds is the shortest activeDeadlineSeconds admitted: a shorter one
// would expire before the node agent could pick the request up.
const MinActiveDeadlineSeconds = 3

// DefaultAndValidateSpec applies the defaults a new request gets without looking at its
// pod (strategy {} with failurePolicy Fail, the active label) and returns what is wrong
// with its spec on its own.
func DefaultAndValidateSpec(obj *appsv1beta1.ContainerRecreateRequest) field.ErrorList {
	spec := field.NewPath("spec")
	if obj.Spec.PodName == "" {
		return field.ErrorList{field.Required(spec.Child("podName"), "the name of the pod whose containers to recreate")}
	}
	appsv1beta1.SetDefaults_ContainerRecreateRequest(obj)
	setLabel(obj, appsv1beta1.ContainerRecreateRequestActiveKey, "true")

	var errs field.ErrorList
	if len(obj.Spec.Containers) == 0 {
		errs = append(errs, field.Required(spec.Child("containers"), "at least one container to recreate"))
	}
	if d := obj.Spec.ActiveDeadlineSeconds; d != nil && *d < MinActiveDeadlineSeconds {
		errs = append(errs, field.Invalid(spec.Child("activeDeadlineSeconds"), *d, fmt.Sprintf("must be at least %d", MinActiveDeadlineSeconds)))
	}
	strategy := spec.Child("strategy")
	if g := obj.Spec.Strategy.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(strategy.Child("terminationGracePeriodSeconds"), *g, "must not be negative"))
	}
	if g := obj.Spec.Strategy.UnreadyGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(strategy.Child("unreadyGracePeriodSeconds"), *g, "must not be negative"))
	}
	switch p := obj.Spec.Strategy.FailurePolicy; p {
	case appsv1beta1.ContainerRecreateRequestFailurePolicyFail, appsv1beta1.ContainerRecreateRequestFailurePolicyIgnore:
	default:
		errs = append(errs, field.NotSupported(strategy.Child("failurePolicy"), p, []string{
			string(appsv1beta1.ContainerRecreateRequestFailurePolicyFail), string(appsv1beta1.ContainerRecreateRequestFailurePolicyIgnore)}))
	}
	return errs
}

// ValidateAgainstPod returns why the request cannot be admitted for pod: the pod must be
// active and bound to a node, and every container must be named once, be one of the pod's
// containers, have a status with a container ID, and carry none of the fields admission
// fills in.
func ValidateAgainstPod(obj *appsv1beta1.ContainerRecreateRequest, pod *corev1.Pod) field.ErrorList {
	podName := field.NewPath("spec", "podName")
	if !podutil.IsPodActive(pod) {
		return field.ErrorList{field.Invalid(podName, obj.Spec.PodName, "the pod is not active (it has finished or is being deleted)")}
	}
	if pod.Spec.NodeName == "" {
		return field.ErrorList{field.Invalid(podName, obj.Spec.PodName, "the pod is not scheduled to a node yet")}
	}
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, c := range obj.Spec.Containers {
		path := field.NewPath("spec", "containers").Index(i)
		if seen[c.Name] {
			errs = append(errs, field.Duplicate(path.Child("name"), c.Name))
			continue
		}
		seen[c.Name] = true
		if c.PreStop != nil {
			errs = append(errs, field.Forbidden(path.Child("preStop"), "is copied from the pod and must not be set"))
		}
		if len(c.Ports) > 0 {
			errs = append(errs, field.Forbidden(path.Child("ports"), "are copied from the pod and must not be set"))
		}
		if c.StatusContext != nil {
			errs = append(errs, field.Forbidden(path.Child("statusContext"), "is taken from the pod's status and must not be set"))
		}
		if !slices.ContainsFunc(pod.Spec.Containers, func(pc corev1.Container) bool { return pc.Name == c.Name }) {
			errs = append(errs, field.NotFound(path.Child("name"), c.Name))
			continue
		}
		status := containerStatus(pod, c.Name)
		switch {
		case status == nil:
			errs = append(errs, field.Invalid(path.Child("name"), c.Name, "the container has no status in the pod yet"))
		case status.ContainerID == "":
			errs = append(errs, field.Invalid(path.Child("name"), c.Name, "the container has no containerID in the pod's status yet"))
		}
	}
	return errs
}

// InjectPodFacts completes a request that ValidateAgainstPod accepted: the labels naming
// the pod's UID and node (and the virtual-kubelet label of such a node), the grace period
// from the pod, and each container's preStop hook, ports and current status.
func InjectPodFacts(obj *appsv1beta1.ContainerRecreateRequest, pod *corev1.Pod, node *corev1.Node) {
	setLabel(obj, appsv1beta1.ContainerRecreateRequestPodUIDKey, string(pod.UID))
	setLabel(obj, appsv1beta1.ContainerRecreateRequestNodeNameKey, pod.Spec.NodeName)
	if node.Labels[appsv1beta1.VirtualKubeletLabelKey] == appsv1beta1.VirtualKubeletLabelValue {
		setLabel(obj, appsv1beta1.VirtualKubeletLabelKey, appsv1beta1.VirtualKubeletLabelValue)
	}
	if obj.Spec.Strategy.TerminationGracePeriodSeconds == nil && pod.Spec.TerminationGracePeriodSeconds != nil {
		grace := *pod.Spec.TerminationGracePeriodSeconds
		obj.Spec.Strategy.TerminationGracePeriodSeconds = &grace
	}
	for i := range obj.Spec.Containers {
		c := &obj.Spec.Containers[i]
		i := slices.IndexFunc(pod.Spec.Containers, func(pc corev1.Container) bool { return pc.Name == c.Name })
		podContainer := &pod.Spec.Containers[i]
		if lc := podContainer.Lifecycle; lc != nil && lc.PreStop != nil {
			hook := lc.PreStop.DeepCopy()
			// A sleep hook has no counterpart in the request's hook type: the node agent
			// cannot run it, so it is left out rather than turned into something else.
			if hook.Exec != nil || hook.HTTPGet != nil || hook.TCPSocket != nil {
				c.PreStop = &appsv1beta1.ProbeHandler{Exec: hook.Exec, HTTPGet: hook.HTTPGet, TCPSocket: hook.TCPSocket}
			}
			if hook.HTTPGet != nil {
				for _, p := range podContainer.Ports {
					c.Ports = append(c.Ports, *p.DeepCopy())
				}
			}
		}
		status := containerStatus(pod, c.Name)
		c.StatusContext = &appsv1beta1.ContainerRecreateRequestContainerContext{
			ContainerID:  status.ContainerID,
			RestartCount: status.RestartCount,
		}
	}
}

func containerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

func specEqual(a, b *appsv1beta1.ContainerRecreateRequestSpec) bool {
	return apiequality.Semantic.DeepEqual(a, b)
}
