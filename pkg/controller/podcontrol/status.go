package podcontrol

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// StatusUpdater writes pod status through Client: the kruisepod.PodStatusUpdater a
// controller passes to the writers of pod conditions (kruisepod.MarkPodNotReady and
// UnmarkPodNotReady), and the kruisepod.PodUpdater it passes to the writer of in-place
// update batches (kruisepod.UpdateNextBatch). It records no events: a condition or a batch
// is not a pod the owner made or removed.
type StatusUpdater struct {
	Client kubernetes.Interface
}

// UpdatePodStatus writes pod's status and returns the pod the server stored.
func (s StatusUpdater) UpdatePodStatus(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	return s.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
}

// UpdatePod writes pod and returns the pod the server stored.
func (s StatusUpdater) UpdatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	return s.Client.CoreV1().Pods(pod.Namespace).Update(ctx, pod, metav1.UpdateOptions{})
}

// GetPod reads the pod from the server, not from a cache.
func (s StatusUpdater) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return s.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}
