package pod

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func resources(kv ...string) corev1.ResourceList {
	list := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		list[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return list
}

// sized is a pod with one container "app" of the given requests and limits.
func sized(requests, limits corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "nginx",
			Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits},
		}}},
	}
}

func withResizePolicy(name corev1.ResourceName, policy corev1.ResourceResizeRestartPolicy, pods ...*corev1.Pod) {
	for _, p := range pods {
		p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: name, RestartPolicy: policy}}
	}
}

func TestIsResize(t *testing.T) {
	burstable := sized(resources("cpu", "100m", "memory", "64Mi"), resources("cpu", "1", "memory", "128Mi"))
	tests := []struct {
		name   string
		change func(old, pod *corev1.Pod)
		want   bool
	}{
		{name: "cpu request", want: true, change: func(_, p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
		}},
		{name: "memory limit", want: true, change: func(_, p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("256Mi")
		}},
		{name: "same quantity spelled differently", change: func(_, p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("0.1")
		}},
		{name: "explicit NotRequired policy", want: true, change: func(old, p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
			withResizePolicy(corev1.ResourceCPU, corev1.NotRequired, old, p)
		}},
		{name: "restart policy on the changed resource", change: func(old, p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("96Mi")
			withResizePolicy(corev1.ResourceMemory, corev1.RestartContainer, old, p)
		}},
		{name: "restart policy on another resource", want: true, change: func(old, p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
			withResizePolicy(corev1.ResourceMemory, corev1.RestartContainer, old, p)
		}},
		{name: "resize policy changed", change: func(_, p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
			withResizePolicy(corev1.ResourceCPU, corev1.NotRequired, p)
		}},
		{name: "not resizable resource", change: func(_, p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceEphemeralStorage] = resource.MustParse("1Gi")
		}},
		{name: "resources and image", change: func(_, p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
			p.Spec.Containers[0].Image = "nginx:2"
		}},
		{name: "image only", change: func(_, p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:2" }},
		{name: "nothing", change: func(_, _ *corev1.Pod) {}},
		{name: "QoS class changes", change: func(_, p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = resources("cpu", "1", "memory", "128Mi")
		}},
		{name: "static pod", change: func(old, p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
			old.Annotations = map[string]string{configSourceAnnotation: "file"}
			p.Annotations = map[string]string{configSourceAnnotation: "file"}
		}},
		{name: "mirror pod", change: func(old, p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
			p.Annotations = map[string]string{configMirrorAnnotation: "abc"}
		}},
		{name: "config source api", want: true, change: func(old, p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
			p.Annotations = map[string]string{configSourceAnnotation: "api"}
		}},
		{name: "container added", change: func(_, p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "side", Image: "busybox"})
		}},
		{name: "init container resources", change: func(old, p *corev1.Pod) {
			old.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: resources("cpu", "100m")}}}
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: resources("cpu", "200m")}}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, pod := burstable.DeepCopy(), burstable.DeepCopy()
			tt.change(old, pod)
			if got := isResize(old, pod); got != tt.want {
				t.Errorf("isResize = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestQoSClass(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want corev1.PodQOSClass
	}{
		{"nothing", sized(nil, nil), corev1.PodQOSBestEffort},
		{"only other resources", sized(resources("ephemeral-storage", "1Gi"), nil), corev1.PodQOSBestEffort},
		{"zero requests", sized(resources("cpu", "0"), nil), corev1.PodQOSBestEffort},
		{"requests only", sized(resources("cpu", "100m"), nil), corev1.PodQOSBurstable},
		{"requests below limits", sized(resources("cpu", "100m", "memory", "64Mi"), resources("cpu", "1", "memory", "64Mi")), corev1.PodQOSBurstable},
		{"requests equal limits", sized(resources("cpu", "1", "memory", "64Mi"), resources("cpu", "1", "memory", "64Mi")), corev1.PodQOSGuaranteed},
		{"equal, spelled differently", sized(resources("cpu", "1000m", "memory", "64Mi"), resources("cpu", "1", "memory", "64Mi")), corev1.PodQOSGuaranteed},
		{"cpu limit only", sized(resources("cpu", "1"), resources("cpu", "1")), corev1.PodQOSBurstable},
		{"one container not limited", func() *corev1.Pod {
			p := sized(resources("cpu", "1", "memory", "64Mi"), resources("cpu", "1", "memory", "64Mi"))
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "side"})
			return p
		}(), corev1.PodQOSBurstable},
		{"init container counts", func() *corev1.Pod {
			p := sized(nil, nil)
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: resources("memory", "1Mi")}}}
			return p
		}(), corev1.PodQOSBurstable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := qosClass(tt.pod); got != tt.want {
				t.Errorf("qosClass = %s, want %s", got, tt.want)
			}
		})
	}
}
