package containerrecreaterequest

import (
	"context"
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
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

var crrResource = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "containerrecreaterequests"}

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
	q, wrapQueue := queuetest.Wrapping()
	c, err := NewController(ctx, f.crrFactory.Apps().V1beta1().ContainerRecreateRequests(), f.podInformer.Core().V1().Pods(),
		f.kube, f.bosun, options.WithClock(f.clock), wrapQueue)
	if err != nil {
		t.Fatal(err)
	}
	f.queue = q
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
	crrs, err := f.bosun.AppsV1beta1().ContainerRecreateRequests(ns).List(f.ctx, metav1.ListOptions{})
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
	r, err := f.bosun.AppsV1beta1().ContainerRecreateRequests(ns).Get(f.ctx, name, metav1.GetOptions{})
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
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: appsv1beta1.KruisePodReadyConditionType}}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: appsv1beta1.KruisePodReadyConditionType, Status: corev1.ConditionTrue})
	return pod
}

// admitted is request name for container app of pod web as admission left it, created at
// t0, in phase phase.
func admitted(name string, phase appsv1beta1.ContainerRecreateRequestPhase) *crr {
	return &crr{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, UID: "crr-" + "uid", CreationTimestamp: metav1.NewTime(t0),
			Labels: map[string]string{
				appsv1beta1.ContainerRecreateRequestPodUIDKey:   "pod-1",
				appsv1beta1.ContainerRecreateRequestNodeNameKey: "node-a",
				appsv1beta1.ContainerRecreateRequestActiveKey:   "true",
			},
		},
		Spec: appsv1beta1.ContainerRecreateRequestSpec{
			PodName: "web",
			Containers: []appsv1beta1.ContainerRecreateRequestContainer{{Name: "app",
				StatusContext: &appsv1beta1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://old"}}},
			Strategy: &appsv1beta1.ContainerRecreateRequestStrategy{FailurePolicy: appsv1beta1.ContainerRecreateRequestFailurePolicyFail},
		},
		Status: appsv1beta1.ContainerRecreateRequestStatus{Phase: phase},
	}
}

func completedAt(r *crr, at time.Time, message string) *crr {
	r.Status.Phase = appsv1beta1.ContainerRecreateRequestCompleted
	r.Status.CompletionTime = ptr.To(metav1.NewTime(at))
	r.Status.Message = message
	return r
}

func expectCompleted(t *testing.T, r *crr, message string, at time.Time) {
	t.Helper()
	if r.Status.Phase != appsv1beta1.ContainerRecreateRequestCompleted || r.Status.Message != message ||
		r.Status.CompletionTime == nil || !r.Status.CompletionTime.Time.Equal(at) {
		t.Errorf("status = %+v, want Completed at %v with %q", r.Status, at, message)
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
