package containerrecreaterequest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ---- After completion ----

func TestFinishedRequestLosesItsActiveLabelThenExpires(t *testing.T) {
	r := completedAt(admitted("r", ""), t0.Add(time.Minute), MessageNoResponse)
	r.Spec.TTLSecondsAfterFinished = ptr.To[int32](5)
	f := newFixture(t, runningPod(), r)
	f.clock.SetTime(t0.Add(time.Minute))

	f.sync("r")
	if _, active := f.crr("r").Labels[appsv1alpha1.ContainerRecreateRequestActiveKey]; active {
		t.Fatal("the active label is still there")
	}
	if got := f.crr("r").Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey]; got != "pod-1" {
		t.Errorf("the pod-uid label is %q; the patch must remove the active label only", got)
	}

	f.clock.Step(2 * time.Second)
	f.sync("r")
	f.expectDelay(3 * time.Second)
	if f.crr("r") == nil {
		t.Fatal("deleted before its ttlSecondsAfterFinished")
	}

	f.clock.Step(3 * time.Second)
	f.sync("r")
	if f.crr("r") != nil {
		t.Fatal("not deleted after its ttlSecondsAfterFinished")
	}
	// A request gone is nothing to do.
	f.sync("r")
	if len(f.writes()) != 0 {
		t.Errorf("wrote %v for a request that is gone", f.writes())
	}
}

func TestFinishedRequestWithoutTTLIsKept(t *testing.T) {
	r := completedAt(admitted("r", appsv1alpha1.ContainerRecreateRequestRecreating), t0, "")
	delete(r.Labels, appsv1alpha1.ContainerRecreateRequestActiveKey)
	f := newFixture(t, runningPod(), r)
	f.clock.Step(time.Hour)
	f.sync("r")
	if len(f.writes()) != 0 || len(f.queue.Delayed()) != 0 {
		t.Errorf("wrote %v, requeued %v; want nothing", f.writes(), f.queue.Delayed())
	}
}

// ---- Container statuses ----

func TestSyncContainerStatuses(t *testing.T) {
	f := newFixture(t, runningPod(), admitted("r", appsv1alpha1.ContainerRecreateRequestRecreating))
	f.sync("r")
	if _, ok := f.crr("r").Annotations[appsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey]; ok {
		t.Fatal("annotation written although no target container restarted")
	}

	// The kubelet reports app under a new ID, started after the request was created; the
	// non-target container restarting too is none of the request's business.
	pod := f.pod("web")
	pod.Status.ContainerStatuses[0] = runningStatus("app", "containerd://new", 1, t0.Add(3*time.Second))
	pod.Status.ContainerStatuses[0].Ready = false
	pod.Status.ContainerStatuses[1] = runningStatus("other", "containerd://other2", 1, t0.Add(3*time.Second))
	if _, err := f.kube.CoreV1().Pods(ns).UpdateStatus(f.ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sync("r")
	want := `[{"name":"app","ready":false,"restartCount":1,"containerID":"containerd://new"}]`
	if got := f.crr("r").Annotations[appsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey]; got != want {
		t.Errorf("annotation = %s, want %s", got, want)
	}

	// Unchanged: no write.
	f.sync("r")
	if len(f.writes()) != 0 {
		t.Errorf("wrote %v although nothing changed", f.writes())
	}
	var statuses []appsv1alpha1.ContainerRecreateRequestSyncContainerStatus
	if err := json.Unmarshal([]byte(f.crr("r").Annotations[appsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey]), &statuses); err != nil {
		t.Fatalf("the annotation is not the documented JSON: %v", err)
	}
}

// A container that is still the admitted one is not reported, whatever the node's clock
// says about when it started.
func TestSyncContainerStatusesIgnoresTheAdmittedContainer(t *testing.T) {
	pod := runningPod()
	// A node clock ahead of the control plane's.
	pod.Status.ContainerStatuses[0] = runningStatus("app", "containerd://old", 0, t0.Add(30*time.Second))
	f := newFixture(t, pod, admitted("r", appsv1alpha1.ContainerRecreateRequestRecreating))
	f.sync("r")
	if got, ok := f.crr("r").Annotations[appsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey]; ok {
		t.Errorf("annotation %s written for the admitted container", got)
	}
}

// ---- Unready grace ----

func TestUnreadyGrace(t *testing.T) {
	r := admitted("r", appsv1alpha1.ContainerRecreateRequestRecreating)
	r.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To[int64](3)
	f := newFixture(t, withKruisePodReady(runningPod()), r)
	f.clock.Step(time.Second)
	f.sync("r")

	got := f.crr("r")
	if !slices.Contains(got.Finalizers, appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey) {
		t.Errorf("finalizers = %v, want %s", got.Finalizers, appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey)
	}
	if at := got.Annotations[appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey]; at != "2026-03-01T12:00:01Z" {
		t.Errorf("unready-acquired = %q, want the sync's time", at)
	}
	pod := f.pod("web")
	cond := podCondition(pod, appsv1alpha1.KruisePodReadyConditionType)
	if cond == nil || cond.Status != corev1.ConditionFalse || cond.Message != `[{"userAgent":"ContainerRecreateRequest","key":"shop/r"}]` {
		t.Errorf("KruisePodReady = %+v, want False with the request's mark", cond)
	}
	if c := podCondition(pod, corev1.PodReady); c.Status != corev1.ConditionFalse {
		t.Errorf("Ready = %s, want False", c.Status)
	}

	// Acquired once: the time does not move.
	f.clock.Step(time.Second)
	f.sync("r")
	if len(f.writes()) != 0 {
		t.Errorf("wrote %v once the grace period was acquired", f.writes())
	}

	// Another party marks the pod too; when the request completes, only its own mark goes.
	pod = f.pod("web")
	podCondition(pod, appsv1alpha1.KruisePodReadyConditionType).Message =
		`[{"userAgent":"ContainerRecreateRequest","key":"shop/r"},{"userAgent":"Lifecycle","key":"preDeleteHook"}]`
	if _, err := f.kube.CoreV1().Pods(ns).UpdateStatus(f.ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	done := f.crr("r")
	completedAt(done, f.clock.Now(), "")
	if _, err := f.bosun.AppsV1alpha1().ContainerRecreateRequests(ns).UpdateStatus(f.ctx, done, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sync("r")
	cond = podCondition(f.pod("web"), appsv1alpha1.KruisePodReadyConditionType)
	if cond.Status != corev1.ConditionFalse || cond.Message != `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]` {
		t.Errorf("KruisePodReady = %+v, want False with only the other mark left", cond)
	}
	if fin := f.crr("r").Finalizers; len(fin) != 0 {
		t.Errorf("finalizers = %v after release", fin)
	}
}

func TestUnreadyGraceReleasedWhenTheLastMarkGoes(t *testing.T) {
	r := admitted("r", appsv1alpha1.ContainerRecreateRequestRecreating)
	r.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To[int64](3)
	f := newFixture(t, withKruisePodReady(runningPod()), r)
	f.sync("r")

	// Deleted rather than completed: the finalizer still makes the mark go first.
	deleting := f.crr("r")
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(f.clock.Now()))
	if err := f.bosun.Tracker().Update(crrResource, deleting, ns); err != nil {
		t.Fatal(err)
	}
	f.sync("r")
	pod := f.pod("web")
	if cond := podCondition(pod, appsv1alpha1.KruisePodReadyConditionType); cond.Status != corev1.ConditionTrue || cond.Message != "" {
		t.Errorf("KruisePodReady = %+v, want True without marks", cond)
	}
	if c := podCondition(pod, corev1.PodReady); c.Status != corev1.ConditionTrue {
		t.Errorf("Ready = %s, want True again", c.Status)
	}
	if r := f.crr("r"); r != nil && len(r.Finalizers) != 0 {
		t.Errorf("finalizers = %v after release", r.Finalizers)
	}
}

// Without the KruisePodReady gate the condition would not matter: no mark and no
// finalizer, but the agent still gets its start time.
func TestUnreadyGraceWithoutTheGate(t *testing.T) {
	r := admitted("r", appsv1alpha1.ContainerRecreateRequestRecreating)
	r.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To[int64](3)
	f := newFixture(t, runningPod(), r)
	f.sync("r")
	got := f.crr("r")
	if len(got.Finalizers) != 0 || got.Annotations[appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey] == "" {
		t.Errorf("finalizers %v, annotations %v; want no finalizer and the acquired time", got.Finalizers, got.Annotations)
	}
	if c := podCondition(f.pod("web"), appsv1alpha1.KruisePodReadyConditionType); c != nil {
		t.Errorf("pod got condition %+v without the gate", c)
	}
}
