package advanceddaemonset

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunfake "github.com/bosun-dev/client-go/clientset/versioned/fake"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"
	appsv1beta1informers "github.com/bosun-dev/client-go/informers/externalversions/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/advanceddaemonset/daemonsetutil"
	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
	"github.com/bosun-dev/bosun/pkg/features"
)

const testNamespace = "ns"

// t0 is the fake clock's start time.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fixture is a controller on hand-filled informer caches and fake clientsets.
type fixture struct {
	t           *testing.T
	ctx         context.Context
	kubeClient  *fake.Clientset
	bosunClient *bosunfake.Clientset
	dsIndexer   cache.Indexer
	revIndexer  cache.Indexer
	podIndexer  cache.Indexer
	nodeIndexer cache.Indexer
	clock       *clocktesting.FakeClock
	recorder    *record.FakeRecorder
	queue       *queuetest.Recorder
	c           *Controller
	created     *podCreateReactor

	// jobIndexer is the ImagePullJob cache; nil unless fixtureOption.imagePullJobs.
	jobIndexer cache.Indexer
}

type fixtureOption struct {
	gates map[featuregate.Feature]bool
	burst int
	// imagePullJobs hands the controller an ImagePullJob informer, as the manager does
	// when the API server serves ImagePullJobs and the pre-download gate is on.
	imagePullJobs bool
}

// newFixture builds a controller; every object goes into the caches and the clientsets.
func newFixture(t *testing.T, opt fixtureOption, objects ...runtime.Object) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	var kubeObjects, bosunObjects []runtime.Object
	for _, obj := range objects {
		switch obj.(type) {
		case *appsv1beta1.DaemonSet, *appsv1beta1.ImagePullJob:
			bosunObjects = append(bosunObjects, obj)
		default:
			kubeObjects = append(kubeObjects, obj)
		}
	}
	kubeClient := fake.NewClientset(kubeObjects...)
	// The simple clientset: the generated field-managed one has no schema for ImagePullJobs.
	bosunClient := bosunfake.NewSimpleClientset(bosunObjects...)
	factory := informers.NewSharedInformerFactory(kubeClient, 0)
	bosunFactory := bosuninformers.NewSharedInformerFactory(bosunClient, 0)
	dsInformer := bosunFactory.Apps().V1beta1().DaemonSets()
	revInformer := factory.Apps().V1().ControllerRevisions()
	podInformer := factory.Core().V1().Pods()
	nodeInformer := factory.Core().V1().Nodes()

	gates := features.NewFeatureGate()
	for name, on := range opt.gates {
		if err := gates.SetFromMap(map[string]bool{string(name): on}); err != nil {
			t.Fatal(err)
		}
	}
	clk := clocktesting.NewFakeClock(t0)
	recorder := record.NewFakeRecorder(1000)
	q, wrapQueue := queuetest.Wrapping()
	opts := []options.Option{options.WithFeatureGate(gates), options.WithClock(clk), wrapQueue}
	if opt.burst > 0 {
		opts = append(opts, options.WithBurstReplicas(opt.burst))
	}
	var jobInformer appsv1beta1informers.ImagePullJobInformer
	if opt.imagePullJobs {
		jobInformer = bosunFactory.Apps().V1beta1().ImagePullJobs()
	}
	c, err := NewController(ctx, dsInformer, revInformer, podInformer, nodeInformer, jobInformer, kubeClient, bosunClient, recorder, opts...)
	if err != nil {
		t.Fatalf("NewController: %v", err)
	}
	var jobIndexer cache.Indexer
	if jobInformer != nil {
		jobIndexer = jobInformer.Informer().GetIndexer()
	}
	t.Cleanup(q.ShutDown)

	f := &fixture{
		t: t, ctx: ctx, kubeClient: kubeClient, bosunClient: bosunClient,
		dsIndexer: dsInformer.Informer().GetIndexer(), revIndexer: revInformer.Informer().GetIndexer(),
		podIndexer: podInformer.Informer().GetIndexer(), nodeIndexer: nodeInformer.Informer().GetIndexer(),
		clock: clk, recorder: recorder, queue: q, c: c, created: &podCreateReactor{}, jobIndexer: jobIndexer,
	}
	f.created.install(kubeClient)
	bumpPodVersions(kubeClient)
	for _, obj := range objects {
		f.cacheAdd(obj)
	}
	return f
}

func (f *fixture) cacheAdd(obj runtime.Object) {
	f.t.Helper()
	var indexer cache.Indexer
	switch obj.(type) {
	case *appsv1beta1.DaemonSet:
		indexer = f.dsIndexer
	case *appsv1.ControllerRevision:
		indexer = f.revIndexer
	case *corev1.Pod:
		indexer = f.podIndexer
	case *corev1.Node:
		indexer = f.nodeIndexer
	case *appsv1beta1.ImagePullJob:
		indexer = f.jobIndexer
	default:
		f.t.Fatalf("no cache for %T", obj)
	}
	if err := indexer.Add(obj); err != nil {
		f.t.Fatal(err)
	}
}

// sync runs one sync of ds and fails the test on error.
func (f *fixture) sync(ds *appsv1beta1.DaemonSet) {
	f.t.Helper()
	if err := f.c.syncDaemonSet(f.ctx, key(ds)); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
}

// actions returns the clientset actions with the given verb and resource.
func (f *fixture) actions(verb, resource string) []clienttesting.Action {
	var matched []clienttesting.Action
	for _, a := range append(f.kubeClient.Actions(), f.bosunClient.Actions()...) {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			matched = append(matched, a)
		}
	}
	return matched
}

// createdPods returns the pods sent to the API server.
func (f *fixture) createdPods() []*corev1.Pod {
	return f.created.all()
}

// createdNodes returns the nodes the created pods are bound to, sorted.
func (f *fixture) createdNodes() []string {
	var nodes []string
	for _, pod := range f.createdPods() {
		node, _ := daemonsetutil.TargetNodeName(pod)
		nodes = append(nodes, node)
	}
	slices.Sort(nodes)
	return nodes
}

// deletedPods returns the names of deleted pods, sorted.
func (f *fixture) deletedPods() []string {
	var names []string
	for _, a := range f.actions("delete", "pods") {
		names = append(names, a.(clienttesting.DeleteAction).GetName())
	}
	slices.Sort(names)
	return names
}

// lastStatus returns the last status written, or nil.
func (f *fixture) lastStatus() *appsv1beta1.DaemonSetStatus {
	var last *appsv1beta1.DaemonSetStatus
	for _, a := range f.actions("update", "daemonsets") {
		if a.GetSubresource() == "status" {
			last = &a.(clienttesting.UpdateAction).GetObject().(*appsv1beta1.DaemonSet).Status
		}
	}
	return last
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

// hasEvent reports whether an event starting with prefix was recorded.
func hasEvent(events []string, prefix string) bool {
	return slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, prefix) })
}

// podCreateReactor names created pods like the API server (the fake clientset does not
// implement generateName) and remembers them.
type podCreateReactor struct {
	mu   sync.Mutex
	pods []*corev1.Pod
}

func (r *podCreateReactor) install(client *fake.Clientset) {
	client.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		pod := action.(clienttesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		pod.Name = fmt.Sprintf("%s%d", pod.GenerateName, len(r.pods)+1)
		pod.Namespace = action.GetNamespace()
		r.pods = append(r.pods, pod)
		return true, pod, nil
	})
}

// bumpPodVersions gives every pod written through an update or a patch a new resource
// version, as the API server does (the fake clientset keeps the one it was sent), so that
// a written pod can be told from the cached copy it replaced.
func bumpPodVersions(client *fake.Clientset) {
	var version atomic.Int64
	version.Store(1000)
	write := clienttesting.ObjectReaction(client.Tracker())
	bump := func(action clienttesting.Action) (bool, runtime.Object, error) {
		handled, obj, err := write(action)
		pod, ok := obj.(*corev1.Pod)
		if err != nil || !ok {
			return handled, obj, err
		}
		pod.ResourceVersion = strconv.FormatInt(version.Add(1), 10)
		return true, pod, client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), pod, pod.Namespace)
	}
	client.PrependReactor("update", "pods", bump)
	client.PrependReactor("patch", "pods", bump)
}

func (r *podCreateReactor) all() []*corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.pods)
}

func key(obj metav1.Object) string {
	return obj.GetNamespace() + "/" + obj.GetName()
}

// newDS returns a rolling DaemonSet "ds" selecting app=ds, with OpenKruise's defaults.
func newDS() *appsv1beta1.DaemonSet {
	labels := map[string]string{"app": "ds"}
	return &appsv1beta1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "ds", Namespace: testNamespace, UID: "uid-ds", Generation: 1, ResourceVersion: "1"},
		Spec: appsv1beta1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:v1"}}},
			},
			UpdateStrategy: appsv1beta1.DaemonSetUpdateStrategy{
				Type: appsv1beta1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateDaemonSet{
					Type:           appsv1beta1.StandardRollingUpdateType,
					MaxUnavailable: ptr.To(intstr.FromInt32(1)),
					MaxSurge:       ptr.To(intstr.FromInt32(0)),
				},
			},
			BurstReplicas:        ptr.To(intstr.FromInt32(250)),
			RevisionHistoryLimit: ptr.To[int32](10),
		},
	}
}

func newNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
}

// revisionOf returns the ControllerRevision recording ds's current template, numbered n.
func revisionOf(t *testing.T, ds *appsv1beta1.DaemonSet, n int64) *appsv1.ControllerRevision {
	t.Helper()
	data, err := kruisepod.RevisionData(&ds.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	h := hashOf(ds)
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: ds.Name + "-" + h, Namespace: ds.Namespace, ResourceVersion: "1",
			Labels:          map[string]string{"app": "ds", appsv1beta1.ControllerRevisionHashLabelKey: h},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, controllerKind)},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: n,
	}
}

// hashOf returns a stand-in hash for ds's template: its image, which the tests vary.
func hashOf(ds *appsv1beta1.DaemonSet) string {
	return "h-" + strings.NewReplacer(":", "-", ".", "-").Replace(ds.Spec.Template.Spec.Containers[0].Image)
}

// newPod returns a running, ready (since an hour) pod of ds at revision hash on node.
func newPod(name string, ds *appsv1beta1.DaemonSet, hash, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: testNamespace, UID: types.UID("uid-" + name), ResourceVersion: "10",
			Labels:            map[string]string{"app": "ds", appsv1beta1.ControllerRevisionHashLabelKey: hash},
			CreationTimestamp: metav1.NewTime(t0.Add(-2 * time.Hour)),
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(ds, controllerKind)},
		},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "img:v1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))},
		}},
	}
}

// withAlphaOwner makes obj's owner references name their owners in apps.kruise.io/v1alpha1,
// as OpenKruise before 1.9 and earlier bosun releases wrote them, and returns obj.
func withAlphaOwner[T metav1.Object](obj T) T {
	refs := obj.GetOwnerReferences()
	for i := range refs {
		refs[i].APIVersion = "apps.kruise.io/v1alpha1"
	}
	obj.SetOwnerReferences(refs)
	return obj
}

func notReady(pod *corev1.Pod) *corev1.Pod {
	pod.Status.Conditions[0].Status = corev1.ConditionFalse
	return pod
}
