package containerrecreaterequest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/containerrecreaterequest/crrutil"
)

// ---- After completion ----

func TestFinishedRequestLosesItsActiveLabelThenExpires(t *testing.T) {
	r := completedAt(admitted("r", ""), t0.Add(time.Minute), MessageNoResponse)
	r.Spec.TTLSecondsAfterFinished = ptr.To[int32](5)
	f := newFixture(t, runningPod(), r)
	f.clock.SetTime(t0.Add(time.Minute))

	f.sync("r")
	if _, active := f.crr("r").Labels[appsv1beta1.ContainerRecreateRequestActiveKey]; active {
		t.Fatal("the active label is still there")
	}
	if got := f.crr("r").Labels[appsv1beta1.ContainerRecreateRequestPodUIDKey]; got != "pod-1" {
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
	r := completedAt(admitted("r", appsv1beta1.ContainerRecreateRequestRecreating), t0, "")
	delete(r.Labels, appsv1beta1.ContainerRecreateRequestActiveKey)
	f := newFixture(t, runningPod(), r)
	f.clock.Step(time.Hour)
	f.sync("r")
	if len(f.writes()) != 0 || len(f.queue.Delayed()) != 0 {
		t.Errorf("wrote %v, requeued %v; want nothing", f.writes(), f.queue.Delayed())
	}
}

// ---- Container statuses ----

func TestSyncContainerStatuses(t *testing.T) {
	f := newFixture(t, runningPod(), admitted("r", appsv1beta1.ContainerRecreateRequestRecreating))
	f.sync("r")
	if got := f.crr("r").Status.ContainerStatusSnapshot; got != nil {
		t.Fatalf("snapshot %+v written although no target container restarted", got)
	}
	if len(f.writes()) != 0 {
		t.Errorf("wrote %v although no target container restarted", f.writes())
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
	got := f.crr("r")
	if encoded, _ := json.Marshal(got.Status.ContainerStatusSnapshot); string(encoded) != want {
		t.Errorf("snapshot = %s, want %s", encoded, want)
	}
	expectStatusWritesOnly(t, f.writes())
	if _, ok := got.Annotations[appsv1beta1.ContainerRecreateRequestSyncContainerStatusesKey]; ok {
		t.Errorf("the v1alpha1 annotation was written: %v", got.Annotations)
	}

	// Unchanged: no write.
	f.sync("r")
	if len(f.writes()) != 0 {
		t.Errorf("wrote %v although nothing changed", f.writes())
	}
	var statuses []appsv1beta1.ContainerRecreateRequestSyncContainerStatus
	encoded, _ := json.Marshal(f.crr("r").Status.ContainerStatusSnapshot)
	if err := json.Unmarshal(encoded, &statuses); err != nil || len(statuses) != 1 {
		t.Fatalf("the snapshot is not the documented JSON: %s (%v)", encoded, err)
	}

	// The new container stops running: the snapshot is cleared.
	pod = f.pod("web")
	pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	if _, err := f.kube.CoreV1().Pods(ns).UpdateStatus(f.ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sync("r")
	if got := f.crr("r").Status.ContainerStatusSnapshot; len(got) != 0 {
		t.Errorf("snapshot = %+v, want it cleared", got)
	}
	expectStatusWritesOnly(t, f.writes())
}

// A request whose v1alpha1 annotation already holds the statuses (a v1alpha1 client's
// write, or OpenKruise's) is not written again; one whose annotation is stale or does not
// parse gets the field.
func TestSyncContainerStatusesHonoursTheAnnotation(t *testing.T) {
	restarted := func() *corev1.Pod {
		pod := runningPod()
		pod.Status.ContainerStatuses[0] = runningStatus("app", "containerd://new", 1, t0.Add(3*time.Second))
		return pod
	}
	current := `[{"name":"app","ready":true,"restartCount":1,"containerID":"containerd://new"}]`
	for _, tt := range []struct {
		name       string
		annotation string
		wantWrite  bool
	}{
		{"the annotation holds the statuses", current, false},
		{"the annotation holds older statuses", `[{"name":"app","ready":false,"restartCount":1,"containerID":"containerd://new"}]`, true},
		{"the annotation does not parse", `[{"name":`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := admitted("r", appsv1beta1.ContainerRecreateRequestRecreating)
			r.Annotations = map[string]string{appsv1beta1.ContainerRecreateRequestSyncContainerStatusesKey: tt.annotation}
			f := newFixture(t, restarted(), r)
			f.sync("r")
			if !tt.wantWrite {
				if len(f.writes()) != 0 {
					t.Errorf("wrote %v although the annotation holds the statuses", f.writes())
				}
				return
			}
			expectStatusWritesOnly(t, f.writes())
			got := f.crr("r")
			if encoded, _ := json.Marshal(got.Status.ContainerStatusSnapshot); string(encoded) != current {
				t.Errorf("snapshot = %s, want %s", encoded, current)
			}
			if a := got.Annotations[appsv1beta1.ContainerRecreateRequestSyncContainerStatusesKey]; a != tt.annotation {
				t.Errorf("the annotation changed to %q", a)
			}
		})
	}

	// Nothing restarted, but an annotation lists a container: there is no field to clear,
	// and the annotation is never written.
	r := admitted("r", appsv1beta1.ContainerRecreateRequestRecreating)
	r.Annotations = map[string]string{appsv1beta1.ContainerRecreateRequestSyncContainerStatusesKey: current}
	f := newFixture(t, runningPod(), r)
	f.sync("r")
	if len(f.writes()) != 0 {
		t.Errorf("wrote %v with nothing to clear", f.writes())
	}
}

// expectStatusWritesOnly checks that writes are patches of the status subresource.
func expectStatusWritesOnly(t *testing.T, writes []clienttesting.Action) {
	t.Helper()
	if len(writes) == 0 {
		t.Error("nothing written")
	}
	for _, w := range writes {
		if w.GetVerb() != "patch" || w.GetSubresource() != "status" {
			t.Errorf("wrote %s %q, want only patches of status", w.GetVerb(), w.GetSubresource())
		}
	}
}

// A container that is still the admitted one is not reported, whatever the node's clock
// says about when it started.
func TestSyncContainerStatusesIgnoresTheAdmittedContainer(t *testing.T) {
	pod := runningPod()
	// A node clock ahead of the control plane's.
	pod.Status.ContainerStatuses[0] = runningStatus("app", "containerd://old", 0, t0.Add(30*time.Second))
	f := newFixture(t, pod, admitted("r", appsv1beta1.ContainerRecreateRequestRecreating))
	f.sync("r")
	if got := f.crr("r").Status.ContainerStatusSnapshot; got != nil {
		t.Errorf("snapshot %+v written for the admitted container", got)
	}
	if len(f.writes()) != 0 {
		t.Errorf("wrote %v for the admitted container", f.writes())
	}
}

// ---- Unready grace ----

func TestUnreadyGrace(t *testing.T) {
	r := admitted("r", appsv1beta1.ContainerRecreateRequestRecreating)
	r.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To[int64](3)
	f := newFixture(t, withKruisePodReady(runningPod()), r)
	f.clock.Step(time.Second)
	f.sync("r")

	got := f.crr("r")
	if !slices.Contains(got.Finalizers, appsv1beta1.ContainerRecreateRequestUnreadyAcquiredKey) {
		t.Errorf("finalizers = %v, want %s", got.Finalizers, appsv1beta1.ContainerRecreateRequestUnreadyAcquiredKey)
	}
	grace := crrutil.PreRecreateGrace(got.Status.Conditions)
	if grace == nil || grace.LastTransitionTime.UTC().Format(time.RFC3339) != "2026-03-01T12:00:01Z" ||
		grace.Reason != "PreRecreateGrace" || grace.Message != "" || grace.ObservedGeneration != 0 {
		t.Errorf("PreRecreateGrace = %+v, want True since the sync's time, reason PreRecreateGrace", grace)
	}
	if _, ok := got.Annotations[appsv1beta1.ContainerRecreateRequestUnreadyAcquiredKey]; ok {
		t.Errorf("the v1alpha1 annotation was written: %v", got.Annotations)
	}
	pod := f.pod("web")
	cond := podCondition(pod, appsv1beta1.KruisePodReadyConditionType)
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
	podCondition(pod, appsv1beta1.KruisePodReadyConditionType).Message =
		`[{"userAgent":"ContainerRecreateRequest","key":"shop/r"},{"userAgent":"Lifecycle","key":"preDeleteHook"}]`
	if _, err := f.kube.CoreV1().Pods(ns).UpdateStatus(f.ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	done := f.crr("r")
	completedAt(done, f.clock.Now(), "")
	if _, err := f.bosun.AppsV1beta1().ContainerRecreateRequests(ns).UpdateStatus(f.ctx, done, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sync("r")
	cond = podCondition(f.pod("web"), appsv1beta1.KruisePodReadyConditionType)
	if cond.Status != corev1.ConditionFalse || cond.Message != `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]` {
		t.Errorf("KruisePodReady = %+v, want False with only the other mark left", cond)
	}
	if fin := f.crr("r").Finalizers; len(fin) != 0 {
		t.Errorf("finalizers = %v after release", fin)
	}
}

func TestUnreadyGraceReleasedWhenTheLastMarkGoes(t *testing.T) {
	r := admitted("r", appsv1beta1.ContainerRecreateRequestRecreating)
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
	if cond := podCondition(pod, appsv1beta1.KruisePodReadyConditionType); cond.Status != corev1.ConditionTrue || cond.Message != "" {
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
	r := admitted("r", appsv1beta1.ContainerRecreateRequestRecreating)
	r.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To[int64](3)
	f := newFixture(t, runningPod(), r)
	f.sync("r")
	got := f.crr("r")
	if len(got.Finalizers) != 0 || crrutil.PreRecreateGrace(got.Status.Conditions) == nil {
		t.Errorf("finalizers %v, conditions %+v; want no finalizer and the acquired time", got.Finalizers, got.Status.Conditions)
	}
	if c := podCondition(f.pod("web"), appsv1beta1.KruisePodReadyConditionType); c != nil {
		t.Errorf("pod got condition %+v without the gate", c)
	}
}

// The condition is added beside the conditions others wrote, which stay as they are.
func TestUnreadyGraceKeepsOtherConditions(t *testing.T) {
	r := admitted("r", appsv1beta1.ContainerRecreateRequestRecreating)
	r.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To[int64](3)
	other := metav1.Condition{Type: "Audited", Status: metav1.ConditionTrue, Reason: "Seen", Message: "by the auditor", LastTransitionTime: metav1.NewTime(t0)}
	r.Status.Conditions = []metav1.Condition{other}
	f := newFixture(t, runningPod(), r)
	f.clock.Step(2 * time.Second)
	f.sync("r")
	expectStatusWritesOnly(t, f.writes())
	conds := f.crr("r").Status.Conditions
	if len(conds) != 2 || !apiequality.Semantic.DeepEqual(conds[0], other) || crrutil.PreRecreateGrace(conds) == nil {
		t.Errorf("conditions = %+v, want %+v and PreRecreateGrace", conds, other)
	}
}

// A request whose v1alpha1 annotation records the acquisition (from a v1alpha1 client or
// OpenKruise) has started its grace period: no finalizer, no mark, no condition; an
// annotation that does not parse counts too, and the agent reports it.
func TestUnreadyGraceHonoursTheAnnotation(t *testing.T) {
	for _, value := range []string{"2026-03-01T11:59:59Z", "yesterday"} {
		t.Run(value, func(t *testing.T) {
			r := admitted("r", appsv1beta1.ContainerRecreateRequestRecreating)
			r.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To[int64](3)
			r.Annotations = map[string]string{appsv1beta1.ContainerRecreateRequestUnreadyAcquiredKey: value}
			f := newFixture(t, withKruisePodReady(runningPod()), r)
			f.sync("r")
			if len(f.writes()) != 0 {
				t.Errorf("wrote %v for a request whose annotation records the acquisition", f.writes())
			}
			if c := podCondition(f.pod("web"), appsv1beta1.KruisePodReadyConditionType); c.Status != corev1.ConditionTrue {
				t.Errorf("KruisePodReady = %+v, want the pod left alone", c)
			}
		})
	}
}

// A PreRecreateGrace condition that is not True does not count: the grace period starts.
func TestUnreadyGraceReplacesAConditionNotTrue(t *testing.T) {
	r := admitted("r", appsv1beta1.ContainerRecreateRequestRecreating)
	r.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To[int64](3)
	r.Status.Conditions = []metav1.Condition{{Type: "PreRecreateGrace", Status: metav1.ConditionFalse, Reason: "NotYet", LastTransitionTime: metav1.NewTime(t0)}}
	f := newFixture(t, runningPod(), r)
	f.clock.Step(time.Second)
	f.sync("r")
	conds := f.crr("r").Status.Conditions
	if len(conds) != 1 || crrutil.PreRecreateGrace(conds) == nil || !conds[0].LastTransitionTime.Time.Equal(t0.Add(time.Second)) {
		t.Errorf("conditions = %+v, want PreRecreateGrace True since the sync", conds)
	}
}
