package containerlaunchpriority

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
)

const ns = "shop"

// fixture is the controller on a pod cache filled by hand from a fake clientset.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	client *fake.Clientset
	pods   cache.Indexer
	queue  *queuetest.Recorder
	c      *Controller
}

func newFixture(t *testing.T, objects ...runtime.Object) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	client := fake.NewClientset(objects...)
	factory := informers.NewSharedInformerFactory(client, 0)
	podInformer := factory.Core().V1().Pods()
	q, wrapQueue := queuetest.Wrapping()
	c, err := NewController(ctx, podInformer, client, wrapQueue)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.ShutDown)
	f := &fixture{t: t, ctx: ctx, client: client, pods: podInformer.Informer().GetIndexer(), queue: q, c: c}
	f.refreshCache()
	return f
}

// refreshCache makes the pod cache hold what the fake API server holds, without calling
// the handlers.
func (f *fixture) refreshCache() {
	f.t.Helper()
	pods, err := f.client.CoreV1().Pods(ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var objs []any
	for i := range pods.Items {
		objs = append(objs, &pods.Items[i])
	}
	if err := f.pods.Replace(objs, ""); err != nil {
		f.t.Fatal(err)
	}
}

// sync syncs pod name after refreshing the cache and clearing the recorded actions, and
// fails the test on an error.
func (f *fixture) sync(name string) {
	f.t.Helper()
	if err := f.trySync(name); err != nil {
		f.t.Fatalf("syncing %s: %v", name, err)
	}
}

func (f *fixture) trySync(name string) error {
	f.refreshCache()
	f.client.ClearActions()
	return f.c.syncPod(f.ctx, ns+"/"+name)
}

// writes are the create, update, patch and delete actions since the last sync, as
// "<verb> <resource>".
func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.client.Actions() {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}

// barrier returns the barrier of pod name, or nil when there is none.
func (f *fixture) barrier(name string) *corev1.ConfigMap {
	f.t.Helper()
	cm, err := f.client.CoreV1().ConfigMaps(ns).Get(f.ctx, kruisepod.BarrierName(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return cm
}

func (f *fixture) pod(name string) *corev1.Pod {
	f.t.Helper()
	pod, err := f.client.CoreV1().Pods(ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return pod
}

// setReady sets the readiness of container of pod name in the fake API server.
func (f *fixture) setReady(name, container string, ready bool) {
	f.t.Helper()
	pod := f.pod(name)
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == container {
			pod.Status.ContainerStatuses[i].Ready = ready
		}
	}
	if err := f.client.Tracker().Update(podsResource, pod, ns); err != nil {
		f.t.Fatal(err)
	}
}

var podsResource = corev1.SchemeGroupVersion.WithResource("pods")

// failOn makes the fake API server answer verb on resource with err.
func (f *fixture) failOn(verb, resource string, err error) {
	f.client.PrependReactor(verb, resource, func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, err
	})
}

// ---- Builders ----

// launchPod is pod name (uid uid-<name>) as the webhook leaves it: containers with the
// barrier envs of the given priorities (in spec order, named c0, c1, ...), none ready yet.
func launchPod(name string, priorities ...int) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name)}}
	for i, p := range priorities {
		container := corev1.Container{Name: "c" + string(rune('0'+i)), Image: "img", Env: []corev1.EnvVar{kruisepod.BarrierEnv(name, p)}}
		pod.Spec.Containers = append(pod.Spec.Containers, container)
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: container.Name})
	}
	return pod
}
