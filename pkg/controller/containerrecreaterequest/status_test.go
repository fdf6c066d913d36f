package containerrecreaterequest

import (
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// Completion by the manager (completion and complete).

func TestPodGone(t *testing.T) {
	replaced := runningPod()
	replaced.UID = "pod-2"
	terminating := runningPod()
	terminating.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	terminating.Finalizers = []string{"example.com/hold"}
	for _, tt := range []struct {
		name string
		pod  *corev1.Pod
	}{
		{"deleted", nil},
		{"being deleted", terminating},
		{"replaced by a pod of the same name", replaced},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objects := []runtime.Object{admitted("r", appsv1beta1.ContainerRecreateRequestRecreating)}
			if tt.pod != nil {
				objects = append(objects, tt.pod)
			}
			f := newFixture(t, objects...)
			f.clock.Step(time.Second)
			f.sync("r")
			expectCompleted(t, f.crr("r"), MessagePodGone, t0.Add(time.Second))
		})
	}
}

func TestResponseTimeout(t *testing.T) {
	f := newFixture(t, runningPod(), admitted("r", ""))
	f.clock.Step(10 * time.Second)
	f.sync("r")
	if len(f.writes()) != 0 {
		t.Fatalf("wrote %v before the response timeout", f.writes())
	}
	f.expectDelay(50 * time.Second)

	f.clock.SetTime(t0.Add(ResponseTimeout))
	f.sync("r")
	expectCompleted(t, f.crr("r"), MessageNoResponse, t0.Add(ResponseTimeout))
}

// A request the agent picked up is not timed out for want of a response.
func TestNoResponseTimeoutOncePickedUp(t *testing.T) {
	for _, phase := range []appsv1beta1.ContainerRecreateRequestPhase{appsv1beta1.ContainerRecreateRequestPending, appsv1beta1.ContainerRecreateRequestRecreating} {
		t.Run(string(phase), func(t *testing.T) {
			f := newFixture(t, runningPod(), admitted("r", phase))
			f.clock.SetTime(t0.Add(10 * time.Minute))
			f.sync("r")
			if r := f.crr("r"); r.Status.Phase != phase {
				t.Errorf("phase = %q, want %q left alone", r.Status.Phase, phase)
			}
			if d := f.queue.Delayed(); len(d) != 0 {
				t.Errorf("requeued %+v without any timer", d)
			}
		})
	}
}

func TestActiveDeadline(t *testing.T) {
	r := admitted("r", appsv1beta1.ContainerRecreateRequestRecreating)
	r.Spec.ActiveDeadlineSeconds = ptr.To[int64](5)
	f := newFixture(t, runningPod(), r)
	f.clock.Step(2 * time.Second)
	f.sync("r")
	f.expectDelay(3 * time.Second)

	f.clock.Step(3 * time.Second)
	f.sync("r")
	expectCompleted(t, f.crr("r"), MessageDeadlineExceeded, t0.Add(5*time.Second))
}

// An unpicked request waits for the nearer of its two timers.
func TestUnpickedRequeuesAtTheNearestTimer(t *testing.T) {
	r := admitted("r", "")
	r.Spec.ActiveDeadlineSeconds = ptr.To[int64](20)
	f := newFixture(t, runningPod(), r)
	f.sync("r")
	f.expectDelay(20 * time.Second)

	r2 := admitted("r2", "")
	r2.Spec.ActiveDeadlineSeconds = ptr.To[int64](600)
	f = newFixture(t, runningPod(), r2)
	f.sync("r2")
	f.expectDelay(ResponseTimeout)
}

// The reasons to complete a request are checked in order: a request whose pod is gone is
// completed for that, whichever timers passed too, and one never picked up for want of a
// response before its deadline counts.
func TestCompletionOrder(t *testing.T) {
	late := t0.Add(time.Hour)
	overdue := func(phase appsv1beta1.ContainerRecreateRequestPhase) *crr {
		r := admitted("r", phase)
		r.Spec.ActiveDeadlineSeconds = ptr.To[int64](5)
		return r
	}
	for _, tt := range []struct {
		name        string
		request     *crr
		pod         *corev1.Pod
		now         time.Time
		wantMessage string
		wantNext    time.Time
	}{
		{"pod gone and both timers passed", overdue(""), nil, late, MessagePodGone, time.Time{}},
		{"no response and deadline passed", overdue(""), runningPod(), late, MessageNoResponse, time.Time{}},
		{"picked up, deadline passed", overdue(appsv1beta1.ContainerRecreateRequestPending), runningPod(), late, MessageDeadlineExceeded, time.Time{}},
		{"unpicked, deadline first", overdue(""), runningPod(), t0, "", t0.Add(5 * time.Second)},
		{"unpicked, no deadline", admitted("r", ""), runningPod(), t0, "", t0.Add(ResponseTimeout)},
		{"picked up, no deadline", admitted("r", appsv1beta1.ContainerRecreateRequestRecreating), runningPod(), late, "", time.Time{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			message, next := completion(tt.request, tt.pod, tt.now)
			if message != tt.wantMessage || !next.Equal(tt.wantNext) {
				t.Errorf("completion = %q, %v; want %q, %v", message, next, tt.wantMessage, tt.wantNext)
			}
		})
	}
}

// Completing a request deleted since the cache saw it is nothing to retry.
func TestCompletingARequestGoneMeanwhile(t *testing.T) {
	f := newFixture(t, admitted("r", appsv1beta1.ContainerRecreateRequestRecreating))
	if err := f.bosun.AppsV1beta1().ContainerRecreateRequests(ns).Delete(f.ctx, "r", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.queue.Reset()
	f.bosun.ClearActions()
	if err := f.c.syncRequest(f.ctx, ns+"/r"); err != nil {
		t.Fatalf("syncing a request gone from the server: %v", err)
	}
	if w := f.writes(); len(w) != 1 || w[0].GetVerb() != "update" || w[0].GetSubresource() != "status" {
		t.Errorf("writes = %v, want the one status update that found the request gone", w)
	}
	if d := f.queue.Delayed(); len(d) != 0 {
		t.Errorf("requeued %+v", d)
	}
}
