package containerrecreaterequest

import (
	"slices"
	"testing"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestPodEventsQueueTheUnfinishedRequestsOfThePod(t *testing.T) {
	other := admitted("other-pod", "")
	other.Labels[appsv1beta1.ContainerRecreateRequestPodUIDKey] = "pod-9"
	f := newFixture(t, runningPod(),
		admitted("open", ""), completedAt(admitted("done", ""), t0, MessagePodGone), other)
	pod := f.pod("web")

	f.queue.Reset()
	f.c.addPod(f.ctx, pod)
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"shop/open"}) {
		t.Errorf("pod added: queued %v, want shop/open", got)
	}

	f.queue.Reset()
	relabelled := pod.DeepCopy()
	relabelled.Labels = map[string]string{"x": "y"}
	f.c.updatePod(f.ctx, pod, relabelled)
	if got := f.queue.AddedKeys(); len(got) != 0 {
		t.Errorf("labels changed: queued %v, want nothing", got)
	}

	for name, change := range map[string]func(*corev1.Pod){
		"container statuses changed": func(p *corev1.Pod) { p.Status.ContainerStatuses[0].Ready = false },
		"deletion started":           func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(t0)) },
	} {
		f.queue.Reset()
		changed := pod.DeepCopy()
		change(changed)
		f.c.updatePod(f.ctx, pod, changed)
		if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"shop/open"}) {
			t.Errorf("%s: queued %v, want shop/open", name, got)
		}
	}

	f.queue.Reset()
	f.c.deletePod(f.ctx, pod)
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"shop/open"}) {
		t.Errorf("pod deleted: queued %v, want shop/open", got)
	}
}
