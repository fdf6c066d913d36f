package podreadiness

import (
	"context"
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
)

const ns = "shop"

// t0 is the fake clock's time; whole seconds, as status timestamps are.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fixture is the controller on a pod cache filled by hand from a fake clientset.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	client *fake.Clientset
	pods   cache.Indexer
	queue  *queuetest.Recorder
	c      *Controller
}

func newFixture(t *testing.T, pods ...*corev1.Pod) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	objects := make([]runtime.Object, 0, len(pods))
	for _, pod := range pods {
		objects = append(objects, pod)
	}
	client := fake.NewClientset(objects...)
	podInformer := informers.NewSharedInformerFactory(client, 0).Core().V1().Pods()
	q, wrapQueue := queuetest.Wrapping()
	c, err := NewController(ctx, podInformer, client, options.WithClock(clocktesting.NewFakeClock(t0)), wrapQueue)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: ctx, client: client, pods: podInformer.Informer().GetIndexer(), queue: q, c: c}
	for _, pod := range pods {
		if err := f.pods.Add(pod); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// sync syncs the pod named name and returns its error.
func (f *fixture) sync(name string) error {
	f.t.Helper()
	f.client.ClearActions()
	return f.c.syncHandler(f.ctx, ns+"/"+name)
}

// statusWrites are the pods written through pods/status since the last sync.
func (f *fixture) statusWrites() []*corev1.Pod {
	var written []*corev1.Pod
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "update" && a.GetResource().Resource == "pods" && a.GetSubresource() == "status" {
			written = append(written, a.(clienttesting.UpdateAction).GetObject().(*corev1.Pod))
		}
	}
	return written
}

// stored is the pod the fake API server holds.
func (f *fixture) stored(name string) *corev1.Pod {
	f.t.Helper()
	pod, err := f.client.CoreV1().Pods(ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return pod
}

// ---- Builders ----

type podOption func(*corev1.Pod)

// newPod is a pending pod of a CloneSet, with the KruisePodReady gate (from the webhook)
// and the InPlaceUpdateReady one before it, and no conditions yet.
func newPod(name string, opts ...podOption) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "uid-web", Controller: ptr.To(true)}},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "nginx"}},
			ReadinessGates: []corev1.PodReadinessGate{
				{ConditionType: appsv1beta1.InPlaceUpdateReady},
				{ConditionType: appsv1beta1.KruisePodReadyConditionType},
			},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	for _, opt := range opts {
		opt(pod)
	}
	return pod
}

func ungated(pod *corev1.Pod) {
	pod.Spec.ReadinessGates = pod.Spec.ReadinessGates[:1]
}

func deleting(pod *corev1.Pod) {
	pod.DeletionTimestamp = ptr.To(metav1.NewTime(t0.Add(-time.Second)))
}

func withCondition(cond corev1.PodCondition) podOption {
	return func(pod *corev1.Pod) { pod.Status.Conditions = append(pod.Status.Conditions, cond) }
}

// notReadyMark is a KruisePodReady condition False with the preDelete hook's mark.
var notReadyMark = corev1.PodCondition{
	Type: appsv1beta1.KruisePodReadyConditionType, Status: corev1.ConditionFalse,
	Message: `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`, LastTransitionTime: metav1.NewTime(t0.Add(-time.Minute)),
}

// kruisePodReady returns pod's KruisePodReady condition, nil without one.
func kruisePodReady(pod *corev1.Pod) *corev1.PodCondition {
	return kruisepod.PodCondition(pod, appsv1beta1.KruisePodReadyConditionType)
}
