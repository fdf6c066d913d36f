package containermeta

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
	"github.com/bosun-dev/bosun/pkg/daemon/cri/crifake"
	"github.com/bosun-dev/bosun/pkg/features"
)

// Env hashes of OpenKruise's algorithm (kruisepod's golden tests): TEST_ENV=foo, TEST_ENV=bar
// and no env from metadata.
const (
	envHashFoo  = 27323935
	envHashBar  = 3944769931
	envHashNone = 86995377
)

// The report has OpenKruise's shape: per container status, name, container ID, restart
// count, the kubelet's hash and the env hash of what the container runs with. A container
// whose env reads no metadata is hashed without asking the runtime.
func TestReportsTheRuntimeContainers(t *testing.T) {
	f := newFixture(t)
	pod := f.start(clonePod())
	f.sync()

	want := fmt.Sprintf(`{"containers":[`+
		`{"name":"app","containerID":"%s","restartCount":0,"hashes":{"plainHash":%d,"extractedEnvFromMetadataHash":%d}},`+
		`{"name":"side","containerID":"%s","restartCount":0,"hashes":{"plainHash":%d,"extractedEnvFromMetadataHash":%d}}]}`,
		f.containerID("app"), kruisepod.ContainerHash(&pod.Spec.Containers[0]), envHashFoo,
		f.containerID("side"), kruisepod.ContainerHash(&pod.Spec.Containers[1]), envHashNone)
	if got := f.get().Annotations[appsv1beta1.RuntimeContainersMetaKey]; got != want {
		t.Errorf("report:\n got %s\nwant %s", got, want)
	}
	if f.execs() != 0 {
		t.Errorf("ran %d commands in containers; the runtime reports their environment", f.execs())
	}
	if got := f.reportWrites(); got != 1 {
		t.Errorf("%d report writes, want 1", got)
	}

	// Nothing changed: nothing is written.
	f.sync()
	if got := f.reportWrites(); got != 1 {
		t.Errorf("%d report writes after a sync that found nothing new, want 1", got)
	}
	if stops := f.stops(); len(stops) != 0 {
		t.Errorf("stopped %v", stops)
	}
}

// Only pods of OpenKruise workloads, or injected by a SidecarSet, get a report.
func TestReportsOnlyOnKruisePods(t *testing.T) {
	tests := []struct {
		name  string
		owner *metav1.OwnerReference
		annot map[string]string
		want  bool
	}{
		{"CloneSet v1beta1", &metav1.OwnerReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "CloneSet", Name: "web", UID: "u", Controller: ptr.To(true)}, nil, true},
		{"ReplicaSet", &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "u", Controller: ptr.To(true)}, nil, false},
		{"not the controller", &metav1.OwnerReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "u"}, nil, false},
		{"SidecarSet injected", nil, map[string]string{sidecarSetHashKey: "{}"}, true},
		{"bare", nil, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			pod := clonePod()
			pod.OwnerReferences = nil
			if tc.owner != nil {
				pod.OwnerReferences = []metav1.OwnerReference{*tc.owner}
			}
			pod.Annotations = tc.annot
			f.start(pod)
			f.sync()
			if got := f.report() != nil; got != tc.want {
				t.Errorf("reported = %v, want %v", got, tc.want)
			}
		})
	}
}

// During an in-place update that changed the label the env reads, the container is stopped
// (preStop hook, the pod's grace period) so that the kubelet starts it with the new value;
// the new container's report then completes the update.
func TestRestartsContainersWhoseEnvFromMetadataChanged(t *testing.T) {
	f := newFixture(t)
	pod := clonePod()
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/drain"}}}}
	pod = f.start(pod)
	f.sync()
	oldApp, _ := f.runtime.Container(testPodUID, "app")

	// The controller takes the pod out of service, then relabels it.
	pod = f.get()
	kruisepod.SetPodCondition(pod, corev1.PodCondition{Type: appsv1beta1.InPlaceUpdateReady, Status: corev1.ConditionFalse, Reason: "StartInPlaceUpdate"})
	f.update(pod)
	f.sync()
	if stops := f.stops(); len(stops) != 0 {
		t.Fatalf("stopped %v before the label changed", stops)
	}
	pod = f.get()
	pod.Labels["test-env"] = "bar"
	state := &kruisepod.InPlaceUpdateState{Revision: "r2", UpdateEnvFromMetadata: true}
	pod.Annotations[appsv1beta1.InPlaceUpdateStateKey] = `{"revision":"r2","updateTimestamp":null,"lastContainerStatuses":null,"updateEnvFromMetadata":true}`
	f.update(pod)
	if !f.c.needsReport(nil, f.get()) {
		t.Error("a pod whose labels no longer fit its report does not need a report")
	}
	f.sync()

	if want := []string{oldApp.ID + "/5s"}; !slices.Equal(f.stops(), want) {
		t.Errorf("stops %v, want only app's old container with the pod's 5 s", f.stops())
	}
	calls := f.runtime.ContainerCalls()
	if len(calls) != 2 || calls[0].Method != "ExecSync" || !slices.Equal(calls[0].Cmd, []string{"/drain"}) {
		t.Errorf("calls %+v, want the preStop hook, then the stop", calls)
	}
	events := f.events()
	if len(events) != 1 || !strings.HasPrefix(events[0], "Normal Killing Stopping container app: ") {
		t.Errorf("events %q, want one Killing", events)
	}
	if kruisepod.ContainersUpdated(f.get(), state) {
		t.Error("the update counts as done before the container was started again")
	}

	// The kubelet starts app again, with the label's new value.
	pod = f.get()
	f.runtime.RestartContainer(testPodUID, "app")
	f.kubeletStarted(pod, &pod.Spec.Containers[0])
	f.setStatuses(pod)
	f.sync()
	app := f.report().Container("app")
	if app == nil || app.ContainerID != f.containerID("app") || app.RestartCount != 1 || app.Hashes.ExtractedEnvFromMetadataHash != envHashBar {
		t.Errorf("app's report after the restart: %+v, want %s, restart count 1, env hash %d", app, f.containerID("app"), uint64(envHashBar))
	}
	if len(f.stops()) != 1 {
		t.Errorf("stops %v, want no other", f.stops())
	}
	if !kruisepod.ContainersUpdated(f.get(), state) {
		t.Error("the update is not done after the container runs with the new env")
	}
}

// Outside an in-place update nothing is restarted: the label may change, the report keeps
// what the container runs with, and the update (if one comes) restarts it.
func TestNoRestartOutsideAnInPlaceUpdate(t *testing.T) {
	for name, cond := range map[string]*corev1.PodCondition{
		"no condition":   nil,
		"condition True": {Type: appsv1beta1.InPlaceUpdateReady, Status: corev1.ConditionTrue},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.start(clonePod())
			f.sync()
			pod := f.get()
			pod.Labels["test-env"] = "bar"
			if cond != nil {
				kruisepod.SetPodCondition(pod, *cond)
			}
			f.update(pod)
			f.sync()
			if stops := f.stops(); len(stops) != 0 {
				t.Errorf("stopped %v", stops)
			}
			if app := f.report().Container("app"); app == nil || app.Hashes.ExtractedEnvFromMetadataHash != envHashFoo {
				t.Errorf("app's report %+v, want the env it runs with (hash %d)", app, envHashFoo)
			}
		})
	}
}

// A runtime that reports no runtime spec is asked to run env in the container; when that
// fails the report goes without the env hash and the pod is looked at again 3 s later.
func TestEnvReadThroughExecAndRetried(t *testing.T) {
	f := newFixture(t)
	f.start(clonePod())
	f.runtime.SetContainerEnv(testPodUID, "app", nil)
	f.runtime.SetExecSyncHandler(func(crifake.ExecCall) (*runtimeapi.ExecSyncResponse, error) {
		return &runtimeapi.ExecSyncResponse{ExitCode: 127, Stderr: []byte("env: not found")}, nil
	})
	f.sync()
	if app := f.report().Container("app"); app == nil || app.Hashes.ExtractedEnvFromMetadataHash != 0 {
		t.Errorf("app's report %+v, want no env hash", app)
	}
	if want := []queuetest.Delayed{{Key: podQueueKey, Delay: envRetryDelay}}; !slices.Equal(f.queue.Delayed(), want) {
		t.Errorf("delayed %v, want %v", f.queue.Delayed(), want)
	}

	f.runtime.SetExecSyncHandler(func(call crifake.ExecCall) (*runtimeapi.ExecSyncResponse, error) {
		return &runtimeapi.ExecSyncResponse{Stdout: []byte("PATH=/bin\nTEST_ENV=foo\n")}, nil
	})
	f.sync()
	if app := f.report().Container("app"); app == nil || app.Hashes.ExtractedEnvFromMetadataHash != envHashFoo {
		t.Errorf("app's report %+v, want env hash %d", app, envHashFoo)
	}
	if execs := f.execs(); execs != 2 {
		t.Errorf("%d execs, want 2: side's env reads no metadata", execs)
	}
}

// A sync that comes before the informer shows the agent's last report waits for it instead
// of writing the same report again.
func TestWaitsForItsOwnWrite(t *testing.T) {
	f := newFixture(t)
	f.start(clonePod())
	if err := f.c.syncPod(f.ctx, podQueueKey); err != nil {
		t.Fatal(err)
	}
	f.queue.Reset()
	// No refresh: the cache still has the pod without the report.
	if err := f.c.syncPod(f.ctx, podQueueKey); err != nil {
		t.Fatal(err)
	}
	if got := f.reportWrites(); got != 1 {
		t.Errorf("%d report writes, want 1", got)
	}
	delayed := f.queue.Delayed()
	if len(delayed) != 1 || delayed[0].Key != podQueueKey || delayed[0].Delay <= 0 || delayed[0].Delay > writtenVersionWait {
		t.Errorf("delayed %v, want the pod again within %v", delayed, writtenVersionWait)
	}
}

// A pod whose containers run in another runtime than the agent's is left alone.
func TestOtherRuntimeIsLeftAlone(t *testing.T) {
	f := newFixture(t)
	pod := f.start(clonePod())
	for i := range pod.Status.ContainerStatuses {
		pod.Status.ContainerStatuses[i].ContainerID = strings.Replace(pod.Status.ContainerStatuses[i].ContainerID, crifake.RuntimeName, "cri-o", 1)
	}
	f.update(pod)
	f.sync()
	if f.report() != nil {
		t.Error("reported on a pod of another runtime")
	}
}

// With gate InPlaceUpdateEnvFromMetadata off the report carries the kubelet's hashes only,
// and nothing is restarted.
func TestEnvFromMetadataGateOff(t *testing.T) {
	gate := features.NewFeatureGate()
	if err := gate.Set(string(features.InPlaceUpdateEnvFromMetadata) + "=false"); err != nil {
		t.Fatal(err)
	}
	f := newFixtureWithGate(t, gate)
	f.start(clonePod())
	f.sync()
	pod := f.get()
	pod.Labels["test-env"] = "bar"
	kruisepod.SetPodCondition(pod, corev1.PodCondition{Type: appsv1beta1.InPlaceUpdateReady, Status: corev1.ConditionFalse})
	f.update(pod)
	f.sync()
	report := f.report()
	if report == nil || len(report.Containers) != 2 || report.Containers[0].Hashes.ExtractedEnvFromMetadataHash != 0 {
		t.Errorf("report %+v, want both containers without env hashes", report)
	}
	if len(f.stops()) != 0 {
		t.Errorf("stopped %v", f.stops())
	}
}

func TestHandlersQueueWhenTheReportIsOutOfDate(t *testing.T) {
	f := newFixture(t)
	pod := f.start(clonePod())
	f.sync()
	reported := f.get()

	withStatus := func(mutate func(*corev1.Pod)) *corev1.Pod {
		p := reported.DeepCopy()
		mutate(p)
		return p
	}
	tests := []struct {
		name     string
		old, cur *corev1.Pod
		want     bool
	}{
		{"added without a report", nil, pod, false},
		{"added with an up-to-date report", nil, reported, false},
		{"added with a stale report", nil, withStatus(func(p *corev1.Pod) { p.Status.ContainerStatuses[0].ContainerID = "fake-runtime://other" }), true},
		{"container restarted", reported, withStatus(func(p *corev1.Pod) { p.Status.ContainerStatuses[1].ContainerID = "fake-runtime://other" }), true},
		{"first container ID", pod.DeepCopy(), withStatus(func(p *corev1.Pod) {
			delete(p.Annotations, appsv1beta1.RuntimeContainersMetaKey)
		}), true},
		{"label the env reads", reported, withStatus(func(p *corev1.Pod) { p.Labels["test-env"] = "bar" }), true},
		{"another label", reported, withStatus(func(p *corev1.Pod) { p.Labels["other"] = "x" }), false},
		{"no container ID yet", nil, withStatus(func(p *corev1.Pod) {
			delete(p.Annotations, appsv1beta1.RuntimeContainersMetaKey)
			for i := range p.Status.ContainerStatuses {
				p.Status.ContainerStatuses[i].ContainerID = ""
			}
		}), false},
		{"not a Kruise pod", reported, withStatus(func(p *corev1.Pod) {
			p.OwnerReferences = nil
			p.Status.ContainerStatuses[1].ContainerID = "fake-runtime://other"
		}), false},
		{"going away", reported, withStatus(func(p *corev1.Pod) {
			p.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
			p.Status.ContainerStatuses[1].ContainerID = "fake-runtime://other"
		}), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f.queue.Reset()
			if tc.old == nil {
				f.c.addPod(f.ctx, tc.cur)
			} else {
				f.c.updatePod(f.ctx, tc.old, tc.cur)
			}
			queued := slices.Contains(f.queue.Delayed(), queuetest.Delayed{Key: podQueueKey, Delay: eventDelay})
			if queued != tc.want {
				t.Errorf("queued = %v (%v), want %v", queued, f.queue.Delayed(), tc.want)
			}
		})
	}
}

// Deleting a pod forgets the write the agent waits to see.
func TestDeleteForgetsTheWrite(t *testing.T) {
	f := newFixture(t)
	f.start(clonePod())
	if err := f.c.syncPod(f.ctx, podQueueKey); err != nil {
		t.Fatal(err)
	}
	if _, pending := f.c.written.Pending(podQueueKey); !pending {
		t.Fatal("no write to wait for after the report")
	}
	f.c.deletePod(f.ctx, f.get())
	if _, pending := f.c.written.Pending(podQueueKey); pending {
		t.Error("still waiting for a write to a deleted pod")
	}
}
