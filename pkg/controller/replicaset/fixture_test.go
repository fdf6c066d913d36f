package replicaset

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/bosun-dev/bosun/pkg/controller/expectations"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/podcontrol"
	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
	"github.com/bosun-dev/bosun/pkg/features"
)

const testNamespace = "ns"

// t0 is the fake clock's start time.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fixture is a controller on hand-filled informer caches and a fake clientset.
type fixture struct {
	t          *testing.T
	ctx        context.Context
	client     *fake.Clientset
	rsIndexer  cache.Indexer
	podIndexer cache.Indexer
	clock      *clocktesting.FakeClock
	recorder   *record.FakeRecorder
	queue      *queuetest.Recorder
	store      *expectations.Store // the counters behind c.expectations
	c          *Controller
}

type fixtureOption struct {
	gates   map[featuregate.Feature]bool
	objects []runtime.Object // given to the clientset only
	// burst is the burst size; 0 leaves the controller's default.
	burst int
	// podControl, when set, wraps the controller's pod control.
	podControl func(podcontrol.Interface) podcontrol.Interface
}

// newFixture builds a controller. rss and pods are put into both the caches and the
// clientset (so that live GETs and status updates find them).
func newFixture(t *testing.T, opt fixtureOption, rss []*appsv1.ReplicaSet, pods []*corev1.Pod) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)

	objects := slices.Clone(opt.objects)
	for _, rs := range rss {
		objects = append(objects, rs)
	}
	for _, pod := range pods {
		objects = append(objects, pod)
	}
	client := fake.NewClientset(objects...)
	factory := informers.NewSharedInformerFactory(client, 0)
	rsInformer := factory.Apps().V1().ReplicaSets()
	podInformer := factory.Core().V1().Pods()

	gates := features.NewFeatureGate()
	for name, on := range opt.gates {
		if err := gates.SetFromMap(map[string]bool{string(name): on}); err != nil {
			t.Fatal(err)
		}
	}
	clk := clocktesting.NewFakeClock(t0)
	recorder := record.NewFakeRecorder(1000)
	q, wrapQueue := queuetest.Wrapping()
	opts := []options.Option{options.WithFeatureGate(gates), options.WithClock(clk), options.WithBurstReplicas(opt.burst), wrapQueue}
	if opt.podControl != nil {
		opts = append(opts, options.WithPodControlWrapper(opt.podControl))
	}
	c, err := NewController(ctx, rsInformer, podInformer, client, recorder, opts...)
	if err != nil {
		t.Fatalf("NewController: %v", err)
	}
	t.Cleanup(q.ShutDown)
	// Keep the untracked store at hand so tests can set arbitrary counters.
	store := c.expectations.Counters()

	f := &fixture{
		t: t, ctx: ctx, client: client,
		rsIndexer:  rsInformer.Informer().GetIndexer(),
		podIndexer: podInformer.Informer().GetIndexer(),
		clock:      clk, recorder: recorder, queue: q, c: c, store: store,
	}
	for _, rs := range rss {
		f.cacheAdd(f.rsIndexer, rs)
	}
	for _, pod := range pods {
		f.cacheAdd(f.podIndexer, pod)
	}
	return f
}

func (f *fixture) cacheAdd(indexer cache.Indexer, obj any) {
	f.t.Helper()
	if err := indexer.Add(obj); err != nil {
		f.t.Fatal(err)
	}
}

// actions returns the clientset actions with the given verb and resource.
func (f *fixture) actions(verb, resource string) []clienttesting.Action {
	var matched []clienttesting.Action
	for _, a := range f.client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			matched = append(matched, a)
		}
	}
	return matched
}

// statusUpdates returns the ReplicaSets sent to the status subresource.
func (f *fixture) statusUpdates() []*appsv1.ReplicaSet {
	var updates []*appsv1.ReplicaSet
	for _, a := range f.actions("update", "replicasets") {
		if a.GetSubresource() != "status" {
			continue
		}
		updates = append(updates, a.(clienttesting.UpdateAction).GetObject().(*appsv1.ReplicaSet))
	}
	return updates
}

// events drains the recorded events.
func (f *fixture) events() []string {
	var events []string
	for {
		select {
		case e := <-f.recorder.Events:
			events = append(events, e)
		default:
			return events
		}
	}
}

// newRS returns a ReplicaSet selecting app=<name> with the given replicas.
func newRS(name string, replicas int32) *appsv1.ReplicaSet {
	labels := map[string]string{"app": name}
	return &appsv1.ReplicaSet{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: testNamespace, UID: types.UID("uid-" + name),
			Generation: 1, ResourceVersion: "1",
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}}},
			},
		},
		Status: appsv1.ReplicaSetStatus{ObservedGeneration: 1},
	}
}

// ownedBy makes rs's controller the object ref.
func ownedBy(rs *appsv1.ReplicaSet, kind, name string, uid types.UID) *appsv1.ReplicaSet {
	rs.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)}}
	return rs
}

// newPod returns a running, unready pod labelled for rs and controlled by it (rs nil:
// an orphan labelled app=x).
func newPod(name string, rs *appsv1.ReplicaSet) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: testNamespace, UID: types.UID("uid-" + name),
			ResourceVersion: "1", Labels: map[string]string{"app": "x"},
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)),
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if rs != nil {
		pod.Labels = map[string]string{"app": rs.Name}
		pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rs, controllerKind)}
	}
	return pod
}

// ready marks pod ready since readySince.
func ready(pod *corev1.Pod, readySince time.Time) *corev1.Pod {
	pod.Status.Conditions = []corev1.PodCondition{{
		Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(readySince),
	}}
	return pod
}

func onNode(pod *corev1.Pod, node string) *corev1.Pod {
	pod.Spec.NodeName = node
	return pod
}

func deleting(pod *corev1.Pod) *corev1.Pod {
	pod.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	return pod
}

func withPhase(pod *corev1.Pod, phase corev1.PodPhase) *corev1.Pod {
	pod.Status.Phase = phase
	return pod
}

func key(obj metav1.Object) string {
	return fmt.Sprintf("%s/%s", obj.GetNamespace(), obj.GetName())
}

// podCreateReactor answers pod creates without storing them (the fake clientset does not
// implement generateName), counting calls; fail decides the error of the n-th call
// (1-based), nil for success.
type podCreateReactor struct {
	mu    sync.Mutex
	calls int
	fail  func(n int) error
	pods  []*corev1.Pod
}

func (r *podCreateReactor) install(client *fake.Clientset) {
	client.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls++
		if r.fail != nil {
			if err := r.fail(r.calls); err != nil {
				return true, nil, err
			}
		}
		pod := action.(clienttesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		// Like the API server: name from generateName, namespace from the request.
		pod.Name = fmt.Sprintf("%s%d", pod.GenerateName, r.calls)
		pod.Namespace = action.GetNamespace()
		pod.ResourceVersion = fmt.Sprintf("%d", 100+r.calls)
		r.pods = append(r.pods, pod)
		return true, pod, nil
	})
}

func (r *podCreateReactor) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}
