package daemonsetutil

import (
	"context"
	"encoding/json"
	"slices"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/util/retry"
)

// The KruisePodReady condition is shared by every party that may want a pod out of
// service (a DaemonSet's preDelete hook, a ContainerRecreateRequest's unready grace): each
// adds its own mark to the condition's message and removes only its own, and the
// condition is True only once no mark is left. The writers below are what they all use.

// RemoveNotReadyMark returns the KruisePodReady message with mark removed, how many marks
// remain, and whether mark was there. A message that is not a mark list holds no mark.
func RemoveNotReadyMark(message string, mark NotReadyMark) (string, int, bool) {
	var marks []NotReadyMark
	if message == "" || json.Unmarshal([]byte(message), &marks) != nil {
		return message, 0, false
	}
	kept := slices.DeleteFunc(slices.Clone(marks), func(m NotReadyMark) bool { return m == mark })
	if len(kept) == len(marks) {
		return message, len(marks), false
	}
	if len(kept) == 0 {
		return "", 0, true
	}
	encoded, _ := json.Marshal(kept)
	return string(encoded), len(kept), true
}

// MarkPodNotReady adds mark to pod's KruisePodReady condition, turning it False, and
// recomputes Ready, retrying on conflicts with the live pod. It returns the written pod,
// or nil when the mark was there already. The caller checks that the
// pod has the KruisePodReady readiness gate: without it the kubelet ignores the condition.
func MarkPodNotReady(ctx context.Context, pods corev1client.PodsGetter, pod *corev1.Pod, mark NotReadyMark, now metav1.Time) (*corev1.Pod, error) {
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
func UnmarkPodNotReady(ctx context.Context, pods corev1client.PodsGetter, pod *corev1.Pod, mark NotReadyMark, now metav1.Time) (*corev1.Pod, error) {
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
func updateReadyCondition(ctx context.Context, pods corev1client.PodsGetter, pod *corev1.Pod, now metav1.Time,
	change func(*corev1.Pod) bool) (*corev1.Pod, error) {
	var written *corev1.Pod
	current := pod.DeepCopy()
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if !change(current) {
			return nil
		}
		RecomputeReady(current, now)
		updated, err := pods.Pods(current.Namespace).UpdateStatus(ctx, current, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			live, getErr := pods.Pods(current.Namespace).Get(ctx, current.Name, metav1.GetOptions{})
			if getErr != nil {
				return getErr
			}
			current = live
			return err
		}
		written = updated
		return err
	})
	return written, err
}
