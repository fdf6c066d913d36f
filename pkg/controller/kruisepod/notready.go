package kruisepod

import (
	"context"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bosun-dev/bosun/pkg/controller/podcontrol"
)

// PodStatusUpdater is how MarkPodNotReady and UnmarkPodNotReady reach the API server. The
// calling controller supplies it (podcontrol.StatusUpdater over its clientset), so that
// this package holds no client and its callers' tests choose what the server answers.
type PodStatusUpdater interface {
	// UpdatePodStatus writes pod's status and returns the pod the server stored.
	UpdatePodStatus(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	// GetPod reads the live pod, not a cached copy: it is what a write that met a
	// conflict is tried again on.
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
}

// MarkPodNotReady adds mark to pod's KruisePodReady condition, turning it False, and
// recomputes Ready, retrying on conflicts with the live pod. It returns the written pod,
// or nil when the mark was there already. The caller checks that the
// pod has the KruisePodReady readiness gate: without it the kubelet ignores the condition.
func MarkPodNotReady(ctx context.Context, pods PodStatusUpdater, pod *corev1.Pod, mark NotReadyMark, now metav1.Time) (*corev1.Pod, error) {
	return updateReadyCondition(ctx, pods, pod, now, func(current *corev1.Pod) bool {
		cond := PodCondition(current, appsv1alpha1.KruisePodReadyConditionType)
		message := ""
		if cond != nil {
			message = cond.Message
		}
		marked, added := AddNotReadyMark(message, mark)
		if !added && cond != nil && cond.Status == corev1.ConditionFalse {
			return false
		}
		SetPodCondition(current, corev1.PodCondition{
			Type: appsv1alpha1.KruisePodReadyConditionType, Status: corev1.ConditionFalse, Message: marked, LastTransitionTime: now,
		})
		return true
	})
}

// UnmarkPodNotReady removes mark from pod's KruisePodReady condition, turning it True when
// no other mark is left, and recomputes Ready, retrying on conflicts with the live pod. It
// returns the written pod, or nil when the mark was not there.
func UnmarkPodNotReady(ctx context.Context, pods PodStatusUpdater, pod *corev1.Pod, mark NotReadyMark, now metav1.Time) (*corev1.Pod, error) {
	return updateReadyCondition(ctx, pods, pod, now, func(current *corev1.Pod) bool {
		cond := PodCondition(current, appsv1alpha1.KruisePodReadyConditionType)
		if cond == nil {
			return false
		}
		message, remaining, removed := RemoveNotReadyMark(cond.Message, mark)
		if !removed {
			return false
		}
		status := corev1.ConditionFalse
		if remaining == 0 {
			status = corev1.ConditionTrue
		}
		SetPodCondition(current, corev1.PodCondition{
			Type: appsv1alpha1.KruisePodReadyConditionType, Status: status, Message: message, LastTransitionTime: now,
		})
		return true
	})
}

// updateReadyCondition applies change to a copy of pod and, when it reports a change,
// recomputes Ready and writes the status; on a conflict it reads the live pod and tries
// again. It returns the written pod, or nil when nothing changed.
func updateReadyCondition(ctx context.Context, pods PodStatusUpdater, pod *corev1.Pod, now metav1.Time,
	change func(*corev1.Pod) bool) (*corev1.Pod, error) {
	var written *corev1.Pod
	_, err := podcontrol.RewritePod(ctx, pods.GetPod, pod, func(current *corev1.Pod) (*corev1.Pod, error) {
		if !change(current) {
			return nil, nil
		}
		RecomputeReady(current, now)
		stored, err := pods.UpdatePodStatus(ctx, current)
		if err == nil {
			written = stored
		}
		return stored, err
	})
	return written, err
}
