package containerlaunchpriority

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
)

// Handlers queue pods whose containers wait for their launch, and no others.
func TestHandlersQueueWaitingPods(t *testing.T) {
	waiting := launchPod("waiting", 0, 10)
	halfReady := launchPod("half", 0, 10)
	halfReady.Status.ContainerStatuses[1].Ready = true
	done := launchPod("done", 0, 10)
	done.Annotations = map[string]string{kruisepod.LaunchPriorityCompletedAnnotation: "true"}
	ready := launchPod("ready", 0, 10)
	ready.Status.Conditions = []corev1.PodCondition{{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}}
	deleting := launchPod("deleting", 0, 10)
	deleting.DeletionTimestamp = &metav1.Time{}
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}}}

	f := newFixture(t)
	pods := []*corev1.Pod{waiting, halfReady, done, ready, deleting, plain}
	want := []string{ns + "/half", ns + "/waiting"}
	for _, pod := range pods {
		f.c.addPod(f.ctx, pod)
	}
	f.c.addPod(f.ctx, "not a pod")
	if got := f.queue.AddedKeys(); !slices.Equal(got, want) {
		t.Errorf("adds queued %v, want %v", got, want)
	}
	f.queue.Reset()
	for _, pod := range pods {
		f.c.updatePod(f.ctx, plain, pod)
	}
	if got := f.queue.AddedKeys(); !slices.Equal(got, want) {
		t.Errorf("updates queued %v, want %v", got, want)
	}
}

func TestWaitingPriorities(t *testing.T) {
	pod := launchPod("web", 3, -1, 7, 3)
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "plain"})
	pod.Status.ContainerStatuses[2].Ready = true
	if got := waitingPriorities(pod); !slices.Equal(got, []int{-1, 3, 3}) {
		t.Errorf("waitingPriorities = %v, want [-1 3 3]", got)
	}
}
