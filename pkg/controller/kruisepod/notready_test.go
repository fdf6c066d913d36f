package kruisepod

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
)

// fakeStatusUpdater plays the API server: it holds the live pod, answers a write whose
// resourceVersion is stale with a conflict, and counts the requests.
type fakeStatusUpdater struct {
	live          *corev1.Pod
	updates, gets int
	failUpdate    error
}

func (f *fakeStatusUpdater) UpdatePodStatus(_ context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	f.updates++
	if f.failUpdate != nil {
		return nil, f.failUpdate
	}
	if pod.ResourceVersion != f.live.ResourceVersion {
		return nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, pod.Name, errors.New("stale"))
	}
	f.live = pod.DeepCopy()
	f.live.ResourceVersion += "+"
	return f.live.DeepCopy(), nil
}

func (f *fakeStatusUpdater) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	f.gets++
	if namespace != f.live.Namespace || name != f.live.Name {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
	}
	return f.live.DeepCopy(), nil
}

func gatedPod(version string, conditions ...corev1.PodCondition) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: version},
		Spec:       corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: appsv1alpha1.KruisePodReadyConditionType}}},
		Status: corev1.PodStatus{Conditions: append([]corev1.PodCondition{
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		}, conditions...)},
	}
}

var crrMark = NotReadyMark{UserAgent: appsv1alpha1.KruisePodReadyUserAgentContainerRecreateRequest, Key: "ns/r"}

func TestMarkPodNotReady(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	kruiseReady := corev1.PodCondition{Type: appsv1alpha1.KruisePodReadyConditionType, Status: corev1.ConditionTrue}
	for _, tc := range []struct {
		name string
		// cached is the pod the caller passes, live the server's.
		cached, live  *corev1.Pod
		wantWrite     bool
		wantMessage   string
		updates, gets int
	}{
		{"marks a ready pod", gatedPod("1", kruiseReady), gatedPod("1", kruiseReady), true,
			`[{"userAgent":"ContainerRecreateRequest","key":"ns/r"}]`, 1, 0},
		{"no condition yet", gatedPod("1"), gatedPod("1"), true,
			`[{"userAgent":"ContainerRecreateRequest","key":"ns/r"}]`, 1, 0},
		{"already marked", gatedPod("1", corev1.PodCondition{Type: appsv1alpha1.KruisePodReadyConditionType, Status: corev1.ConditionFalse,
			Message: `[{"userAgent":"ContainerRecreateRequest","key":"ns/r"}]`}), nil, false, "", 0, 0},
		{"retries on the live pod after a conflict", gatedPod("1", kruiseReady),
			gatedPod("2", corev1.PodCondition{Type: appsv1alpha1.KruisePodReadyConditionType, Status: corev1.ConditionFalse,
				Message: `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`}), true,
			`[{"userAgent":"Lifecycle","key":"preDeleteHook"},{"userAgent":"ContainerRecreateRequest","key":"ns/r"}]`, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := &fakeStatusUpdater{live: tc.live}
			if server.live == nil {
				server.live = tc.cached.DeepCopy()
			}
			cached := tc.cached.DeepCopy()
			written, err := MarkPodNotReady(context.Background(), server, tc.cached, crrMark, now)
			if err != nil {
				t.Fatal(err)
			}
			if (written != nil) != tc.wantWrite || server.updates != tc.updates || server.gets != tc.gets {
				t.Fatalf("written %v, %d updates, %d gets; want written %v, %d updates, %d gets",
					written != nil, server.updates, server.gets, tc.wantWrite, tc.updates, tc.gets)
			}
			if !tc.wantWrite {
				return
			}
			cond := PodCondition(written, appsv1alpha1.KruisePodReadyConditionType)
			if cond == nil || cond.Status != corev1.ConditionFalse || cond.Message != tc.wantMessage {
				t.Errorf("KruisePodReady = %+v, want False with %s", cond, tc.wantMessage)
			}
			if ready := PodCondition(written, corev1.PodReady); ready.Status != corev1.ConditionFalse || !ready.LastTransitionTime.Equal(&now) {
				t.Errorf("Ready = %+v, want False since now", ready)
			}
			if !apiequality.Semantic.DeepEqual(cached, tc.cached) {
				t.Error("the caller's pod was changed")
			}
		})
	}
}

func TestUnmarkPodNotReady(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	marked := func(version, message string) *corev1.Pod {
		pod := gatedPod(version, corev1.PodCondition{Type: appsv1alpha1.KruisePodReadyConditionType, Status: corev1.ConditionFalse, Message: message})
		SetPodCondition(pod, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse})
		return pod
	}
	const ours = `[{"userAgent":"ContainerRecreateRequest","key":"ns/r"}]`
	const both = `[{"userAgent":"Lifecycle","key":"preDeleteHook"},{"userAgent":"ContainerRecreateRequest","key":"ns/r"}]`
	const theirs = `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`
	for _, tc := range []struct {
		name                  string
		cached, live          *corev1.Pod
		wantWrite             bool
		wantStatus, wantReady corev1.ConditionStatus
		wantMessage           string
		updates, gets         int
	}{
		{"the last mark", marked("1", ours), nil, true, corev1.ConditionTrue, corev1.ConditionTrue, "", 1, 0},
		{"another mark stays", marked("1", both), nil, true, corev1.ConditionFalse, corev1.ConditionFalse, theirs, 1, 0},
		{"not ours", marked("1", theirs), nil, false, "", "", "", 0, 0},
		{"no condition", gatedPod("1"), nil, false, "", "", "", 0, 0},
		{"retries on the live pod after a conflict", marked("1", ours), marked("2", both), true,
			corev1.ConditionFalse, corev1.ConditionFalse, theirs, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := &fakeStatusUpdater{live: tc.live}
			if server.live == nil {
				server.live = tc.cached.DeepCopy()
			}
			written, err := UnmarkPodNotReady(context.Background(), server, tc.cached, crrMark, now)
			if err != nil {
				t.Fatal(err)
			}
			if (written != nil) != tc.wantWrite || server.updates != tc.updates || server.gets != tc.gets {
				t.Fatalf("written %v, %d updates, %d gets; want written %v, %d updates, %d gets",
					written != nil, server.updates, server.gets, tc.wantWrite, tc.updates, tc.gets)
			}
			if !tc.wantWrite {
				return
			}
			cond := PodCondition(written, appsv1alpha1.KruisePodReadyConditionType)
			if cond.Status != tc.wantStatus || cond.Message != tc.wantMessage {
				t.Errorf("KruisePodReady = %+v, want %s with %q", cond, tc.wantStatus, tc.wantMessage)
			}
			if ready := PodCondition(written, corev1.PodReady); ready.Status != tc.wantReady {
				t.Errorf("Ready = %+v, want %s", ready, tc.wantReady)
			}
		})
	}
}

func TestMarkPodNotReadyReturnsWriteErrors(t *testing.T) {
	pod := gatedPod("1")
	server := &fakeStatusUpdater{live: pod.DeepCopy(), failUpdate: apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("no"))}
	written, err := MarkPodNotReady(context.Background(), server, pod, crrMark, metav1.Now())
	if !apierrors.IsForbidden(err) || written != nil || server.updates != 1 || server.gets != 0 {
		t.Errorf("MarkPodNotReady = %v, %v after %d updates and %d gets; want the forbidden error after one update", written, err, server.updates, server.gets)
	}
}
