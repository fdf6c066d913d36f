package podcontrol

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/bosun-dev/bosun/pkg/controller/podcache"
)

// StatusUpdater writes pod status through Client: the kruisepod.PodStatusUpdater a
// controller passes to the writers of pod conditions (kruisepod.MarkPodNotReady and
// UnmarkPodNotReady), and the kruisepod.PodUpdater it passes to the writer of in-place
// update batches (kruisepod.UpdateNextBatch); Rewrite retries a controller's own pod
// writes on conflict. It records no events: a condition or a batch is not a pod the owner
// made or removed.
type StatusUpdater struct {
	Client kubernetes.Interface
}

// UpdatePodStatus writes pod's status and returns the pod the server stored.
func (s StatusUpdater) UpdatePodStatus(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	return s.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
}

// UpdatePod writes pod and returns the pod the server stored. A trimmed cached copy is not
// sent: it fails with podcache.ErrTrimmed, on which Rewrite writes the live pod instead.
func (s StatusUpdater) UpdatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	if podcache.Trimmed(pod) {
		return nil, fmt.Errorf("updating pod %s/%s: %w", pod.Namespace, pod.Name, podcache.ErrTrimmed)
	}
	return s.Client.CoreV1().Pods(pod.Namespace).Update(ctx, pod, metav1.UpdateOptions{})
}

// GetPod reads the pod from the server, not from a cache.
func (s StatusUpdater) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return s.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}

// Rewrite changes pod through write, which is given a copy of the pod to change and write
// (with UpdatePod or UpdatePodStatus), and returns the pod the server stored, or nil when
// the pod it was given needs no write. When the server reports a conflict, the live pod is
// read and write runs again on a copy of it, with client-go's default backoff; when write
// was given a trimmed cached copy to write whole (podcache.ErrTrimmed), it runs again at
// once on the live pod. Rewrite
// returns the pod as last stored, or as last read when the last write call wrote nothing.
func (s StatusUpdater) Rewrite(ctx context.Context, pod *corev1.Pod, write func(pod *corev1.Pod) (*corev1.Pod, error)) (*corev1.Pod, error) {
	return RewritePod(ctx, s.GetPod, pod, write)
}

// LivePodGetter reads a pod from the server, not from a cache.
type LivePodGetter func(ctx context.Context, namespace, name string) (*corev1.Pod, error)

// RewritePod is Rewrite for writers that reach the server through an interface of their
// own (the pod protocol's writers take one, to hold no client): get reads the live pod
// after a conflict.
func RewritePod(ctx context.Context, get LivePodGetter, pod *corev1.Pod, write func(pod *corev1.Pod) (*corev1.Pod, error)) (*corev1.Pod, error) {
	current := pod
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		stored, err := write(current.DeepCopy())
		if errors.Is(err, podcache.ErrTrimmed) {
			live, getErr := get(ctx, current.Namespace, current.Name)
			if getErr != nil {
				return getErr
			}
			current = live
			stored, err = write(current.DeepCopy())
		}
		if err == nil {
			if stored != nil {
				current = stored
			}
			return nil
		}
		if !apierrors.IsConflict(err) {
			return err
		}
		live, getErr := get(ctx, current.Namespace, current.Name)
		if getErr != nil {
			return getErr
		}
		current = live
		return err
	})
	return current, err
}
