package containerrecreaterequest

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	bosunfake "github.com/bosun-dev/client-go/clientset/versioned/fake"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
)

const ns = "shop"

// t0 is when the test requests are created; the fake clock starts there.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var crrResource = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "containerrecreaterequests"}

// fixture is the controller on informer caches that are kept equal to fake clientsets.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	kube  *fake.Clientset
	bosun *bosunfake.Clientset
	clock *clocktesting.FakeClock
	queue *queuetest.Recorder
	c     *Controller

	podInformer informers.SharedInformerFactory
	crrFactory  bosuninformers.SharedInformerFactory
}

func newFixture(t *testing.T, objects ...runtime.Object) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	var kubeObjects, bosunObjects []runtime.Object
	for _, obj := range objects {
		if _, ok := obj.(*corev1.Pod); ok {
			kubeObjects = append(kubeObjects, obj)
		} else {
			bosunObjects = append(bosunObjects, obj)
		}
	}
	f := &fixture{
		t:     t,
		ctx:   ctx,
		kube:  fake.NewClientset(kubeObjects...),
		bosun: bosunfake.NewClientset(bosunObjects...),
		clock: clocktesting.NewFakeClock(t0),
	}
	f.podInformer = informers.NewSharedInformerFactory(f.kube, 0)
	f.crrFactory = bosuninformers.NewSharedInformerFactory(f.bosun, 0)
	c, err := NewController(ctx, f.crrFactory.Apps().V1alpha1().ContainerRecreateRequests(), f.podInformer.Core().V1().Pods(),
		f.kube, f.bosun, options.WithClock(f.clock))
	if err != nil {
		t.Fatal(err)
	}
	f.queue = queuetest.NewRecorder(c.queue)
	c.queue = f.queue
	f.c = c
	f.refreshCaches()
	return f
}

// refreshCaches makes the informer caches hold what the fake API server holds, as if
// every event had been delivered, without calling the handlers.
func (f *fixture) refreshCaches() {
	f.t.Helper()
	pods, err := f.kube.CoreV1().Pods(ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	podStore := f.podInformer.Core().V1().Pods().Informer().GetStore()
	var podObjs []any
	for i := range pods.Items {
		podObjs = append(podObjs, &pods.Items[i])
	}
	if err := podStore.Replace(podObjs, ""); err != nil {
		f.t.Fatal(err)
	}
	crrs, err := f.bosun.AppsV1alpha1().ContainerRecreateRequests(ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var crrObjs []any
	for i := range crrs.Items {
		crrObjs = append(crrObjs, &crrs.Items[i])
	}
	if err := f.c.requestsIndexer.Replace(crrObjs, ""); err != nil {
		f.t.Fatal(err)
	}
}

// sync syncs one request, after refreshing the caches, and fails the test on an error.
func (f *fixture) sync(name string) {
	f.t.Helper()
	f.refreshCaches()
	f.queue.Reset()
	f.bosun.ClearActions()
	f.kube.ClearActions()
	if err := f.c.syncRequest(f.ctx, ns+"/"+name); err != nil {
		f.t.Fatalf("syncing %s: %v", name, err)
	}
}

func (f *fixture) crr(name string) *crr {
	f.t.Helper()
	r, err := f.bosun.AppsV1alpha1().ContainerRecreateRequests(ns).Get(f.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

func (f *fixture) pod(name string) *corev1.Pod {
	f.t.Helper()
	p, err := f.kube.CoreV1().Pods(ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return p
}

// writes are the create, update, patch and delete actions on requests since the last sync.
func (f *fixture) writes() []clienttesting.Action {
	var out []clienttesting.Action
	for _, a := range f.bosun.Actions() {
		if a.GetResource() == crrResource && a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			out = append(out, a)
		}
	}
	return out
}

// expectDelay checks that the request was requeued exactly once, after want.
func (f *fixture) expectDelay(want time.Duration) {
	f.t.Helper()
	delayed := f.queue.Delayed()
	if len(delayed) != 1 || delayed[0].Delay != want {
		f.t.Errorf("requeued %+v, want once after %v", delayed, want)
	}
}

// ---- Builders ----

// runningPod is pod web, uid pod-1, with container app (ID containerd://old) running since
// before t0.
func runningPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, UID: "pod-1"},
		Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "app"}, {Name: "other"}}},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			},
			ContainerStatuses: []corev1.ContainerStatus{
				runningStatus("app", "containerd://old", 0, t0.Add(-time.Hour)),
				runningStatus("other", "containerd://other", 0, t0.Add(-time.Hour)),
			},
		},
	}
}

func runningStatus(name, id string, restarts int32, since time.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name: name, ContainerID: id, RestartCount: restarts, Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(since)}},
	}
}

// withKruisePodReady gives the pod the KruisePodReady gate and a True condition.
func withKruisePodReady(pod *corev1.Pod) *corev1.Pod {
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: appsv1alpha1.KruisePodReadyConditionType}}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: appsv1alpha1.KruisePodReadyConditionType, Status: corev1.ConditionTrue})
	return pod
}

// admitted is request name for container app of pod web as admission left it, created at
// t0, in phase phase.
func admitted(name string, phase appsv1alpha1.ContainerRecreateRequestPhase) *crr {
	return &crr{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, UID: "crr-" + "uid", CreationTimestamp: metav1.NewTime(t0),
			Labels: map[string]string{
				appsv1alpha1.ContainerRecreateRequestPodUIDKey:   "pod-1",
				appsv1alpha1.ContainerRecreateRequestNodeNameKey: "node-a",
				appsv1alpha1.ContainerRecreateRequestActiveKey:   "true",
			},
		},
		Spec: appsv1alpha1.ContainerRecreateRequestSpec{
			PodName: "web",
			Containers: []appsv1alpha1.ContainerRecreateRequestContainer{{Name: "app",
				StatusContext: &appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://old"}}},
			Strategy: &appsv1alpha1.ContainerRecreateRequestStrategy{FailurePolicy: appsv1alpha1.ContainerRecreateRequestFailurePolicyFail},
		},
		Status: appsv1alpha1.ContainerRecreateRequestStatus{Phase: phase},
	}
}

func completedAt(r *crr, at time.Time, message string) *crr {
	r.Status.Phase = appsv1alpha1.ContainerRecreateRequestCompleted
	r.Status.CompletionTime = ptr.To(metav1.NewTime(at))
	r.Status.Message = message
	return r
}

func expectCompleted(t *testing.T, r *crr, message string, at time.Time) {
	t.Helper()
	if r.Status.Phase != appsv1alpha1.ContainerRecreateRequestCompleted || r.Status.Message != message ||
		r.Status.CompletionTime == nil || !r.Status.CompletionTime.Time.Equal(at) {
		t.Errorf("status = %+v, want Completed at %v with %q", r.Status, at, message)
	}
}

// ---- Completion by the manager ----

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
			objects := []runtime.Object{admitted("r", appsv1alpha1.ContainerRecreateRequestRecreating)}
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
	for _, phase := range []appsv1alpha1.ContainerRecreateRequestPhase{appsv1alpha1.ContainerRecreateRequestPending, appsv1alpha1.ContainerRecreateRequestRecreating} {
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
	r := admitted("r", appsv1alpha1.ContainerRecreateRequestRecreating)
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

// ---- Handlers ----

func TestPodEventsQueueTheUnfinishedRequestsOfThePod(t *testing.T) {
	other := admitted("other-pod", "")
	other.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey] = "pod-9"
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

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
