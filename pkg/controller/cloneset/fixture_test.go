package cloneset

import (
	"context"
	"slices"
	"strconv"
	"strings"
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

	"github.com/bosun-dev/bosun/pkg/controller/cloneset/clonesetutil"
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
	t            *testing.T
	ctx          context.Context
	kubeClient   *fake.Clientset
	bosunClient  *bosunfake.Clientset
	csIndexer    cache.Indexer
	revIndexer   cache.Indexer
	podIndexer   cache.Indexer
	claimIndexer cache.Indexer
	nodeIndexer  cache.Indexer
	clock        *clocktesting.FakeClock
	recorder     *record.FakeRecorder
	queue        *queuetest.Recorder
	c            *Controller

	// jobIndexer is the ImagePullJob cache; nil without fixtureOption.imagePullJobs.
	jobIndexer cache.Indexer
}

type fixtureOption struct {
	gates map[featuregate.Feature]bool
	// excludePreparingDelete is --cloneset-scaling-exclude-preparing-delete.
	excludePreparingDelete bool
	// opts are further options of NewController.
	opts []options.Option
	// imagePullJobs gives NewController an ImagePullJob informer, as the manager does when
	// the API server serves them and gate PreDownloadImageForInPlaceUpdate is on.
	imagePullJobs bool
}

// newFixture builds a controller; every object goes into the caches and the clientsets.
func newFixture(t *testing.T, opt fixtureOption, objects ...runtime.Object) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	var kubeObjects, bosunObjects []runtime.Object
	for _, obj := range objects {
		switch obj.(type) {
		case *appsv1beta1.CloneSet, *appsv1beta1.ImagePullJob:
			bosunObjects = append(bosunObjects, obj)
		default:
			kubeObjects = append(kubeObjects, obj)
		}
	}
	kubeClient := fake.NewClientset(kubeObjects...)
	bosunClient := bosunfake.NewSimpleClientset(bosunObjects...)
	factory := informers.NewSharedInformerFactory(kubeClient, 0)
	bosunFactory := bosuninformers.NewSharedInformerFactory(bosunClient, 0)
	csInformer := bosunFactory.Apps().V1beta1().CloneSets()
	revInformer := factory.Apps().V1().ControllerRevisions()
	podInformer := factory.Core().V1().Pods()
	claimInformer := factory.Core().V1().PersistentVolumeClaims()
	nodeInformer := factory.Core().V1().Nodes()
	var jobInformer appsv1beta1informers.ImagePullJobInformer
	if opt.imagePullJobs {
		jobInformer = bosunFactory.Apps().V1beta1().ImagePullJobs()
	}

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
	if opt.excludePreparingDelete {
		opts = append(opts, WithScalingExcludePreparingDelete(true))
	}
	opts = append(opts, opt.opts...)
	c, err := NewController(ctx, csInformer, revInformer, podInformer, claimInformer, nodeInformer, jobInformer, kubeClient, bosunClient, recorder, opts...)
	if err != nil {
		t.Fatalf("NewController: %v", err)
	}
	t.Cleanup(q.ShutDown)
	f := &fixture{
		t: t, ctx: ctx, kubeClient: kubeClient, bosunClient: bosunClient,
		csIndexer: csInformer.Informer().GetIndexer(), revIndexer: revInformer.Informer().GetIndexer(),
		podIndexer: podInformer.Informer().GetIndexer(), claimIndexer: claimInformer.Informer().GetIndexer(),
		nodeIndexer: nodeInformer.Informer().GetIndexer(),
		clock:       clk, recorder: recorder, queue: q, c: c,
	}
	if jobInformer != nil {
		f.jobIndexer = jobInformer.Informer().GetIndexer()
	}
	bumpVersions(kubeClient)
	for _, obj := range objects {
		f.cacheAdd(obj)
	}
	return f
}

func (f *fixture) cacheAdd(obj runtime.Object) {
	f.t.Helper()
	var indexer cache.Indexer
	switch obj.(type) {
	case *appsv1beta1.CloneSet:
		indexer = f.csIndexer
	case *appsv1.ControllerRevision:
		indexer = f.revIndexer
	case *corev1.Pod:
		indexer = f.podIndexer
	case *corev1.PersistentVolumeClaim:
		indexer = f.claimIndexer
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

// sync runs one sync of cs and fails the test on error.
func (f *fixture) sync(cs *appsv1beta1.CloneSet) {
	f.t.Helper()
	if err := f.c.syncCloneSet(f.ctx, key(cs)); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
}

// actions returns the clientset actions with the given verb and resource (and, for
// "status", that subresource; other subresources are left out).
func (f *fixture) actions(verb, resource string) []clienttesting.Action {
	var matched []clienttesting.Action
	for _, a := range append(f.kubeClient.Actions(), f.bosunClient.Actions()...) {
		if a.GetVerb() == verb && a.GetResource().Resource == resource && a.GetSubresource() == "" {
			matched = append(matched, a)
		}
	}
	return matched
}

// writes returns every create, update, patch and delete sent to the API servers.
func (f *fixture) writes() []clienttesting.Action {
	var writes []clienttesting.Action
	for _, a := range append(f.kubeClient.Actions(), f.bosunClient.Actions()...) {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			writes = append(writes, a)
		}
	}
	return writes
}

// createdPods returns the pods sent to the API server, in order.
func (f *fixture) createdPods() []*corev1.Pod {
	var pods []*corev1.Pod
	for _, a := range f.actions("create", "pods") {
		pods = append(pods, a.(clienttesting.CreateAction).GetObject().(*corev1.Pod))
	}
	return pods
}

// createdClaims returns the claims sent to the API server, in order.
func (f *fixture) createdClaims() []*corev1.PersistentVolumeClaim {
	var claims []*corev1.PersistentVolumeClaim
	for _, a := range f.actions("create", "persistentvolumeclaims") {
		claims = append(claims, a.(clienttesting.CreateAction).GetObject().(*corev1.PersistentVolumeClaim))
	}
	return claims
}

// deleted returns the names of the objects of resource deleted, sorted.
func (f *fixture) deleted(resource string) []string {
	var names []string
	for _, a := range f.actions("delete", resource) {
		names = append(names, a.(clienttesting.DeleteAction).GetName())
	}
	slices.Sort(names)
	return names
}

// podPatches returns the bodies of the pod patches sent, by pod name.
func (f *fixture) podPatches() map[string][]string {
	patches := map[string][]string{}
	for _, a := range f.actions("patch", "pods") {
		p := a.(clienttesting.PatchAction)
		patches[p.GetName()] = append(patches[p.GetName()], string(p.GetPatch()))
	}
	return patches
}

// podStatusUpdates returns the pods whose status was written, in order.
func (f *fixture) podStatusUpdates() []*corev1.Pod {
	var pods []*corev1.Pod
	for _, a := range f.kubeClient.Actions() {
		if a.GetVerb() == "update" && a.GetResource().Resource == "pods" && a.GetSubresource() == "status" {
			pods = append(pods, a.(clienttesting.UpdateAction).GetObject().(*corev1.Pod))
		}
	}
	return pods
}

// wantInPlaceUpdateDone checks that the sync ended an in-place update in one write: the
// pod's status with InPlaceUpdateReady True, carrying the pod back to lifecycle state Normal
// with the sync's time, and no patch.
func (f *fixture) wantInPlaceUpdateDone(t *testing.T) {
	t.Helper()
	writes := f.podStatusUpdates()
	if len(writes) != 1 {
		t.Fatalf("%d pod status writes, want 1 with InPlaceUpdateReady True and state Normal", len(writes))
	}
	pod := writes[0]
	if c := kruisepod.PodCondition(pod, appsv1beta1.InPlaceUpdateReady); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("written pod's InPlaceUpdateReady condition %+v, want True", c)
	}
	if got := pod.Labels[appsv1beta1.LifecycleStateKey]; got != string(appsv1beta1.LifecycleStateNormal) {
		t.Errorf("written pod's lifecycle state %q, want Normal", got)
	}
	if got, want := pod.Annotations[appsv1beta1.LifecycleTimestampKey], f.clock.Now().UTC().Format(time.RFC3339); got != want {
		t.Errorf("written pod's lifecycle timestamp %q, want %q", got, want)
	}
	if patches := f.podPatches(); len(patches) != 0 {
		t.Errorf("pod patches %v, want none: the state goes with the condition", patches)
	}
}

// lastStatus returns the last CloneSet status written, or nil.
func (f *fixture) lastStatus() *appsv1beta1.CloneSetStatus {
	var last *appsv1beta1.CloneSetStatus
	for _, a := range f.bosunClient.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			last = &a.(clienttesting.UpdateAction).GetObject().(*appsv1beta1.CloneSet).Status
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

// countEvents returns how many of events start with prefix.
func countEvents(events []string, prefix string) int {
	n := 0
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

// bumpVersions gives every pod, claim and revision written through an update or a patch
// a new resource version, as the API server does (the fake clientset keeps the one it was
// sent), so that a written object can be told from the cached copy it replaced.
func bumpVersions(client *fake.Clientset) {
	var version atomic.Int64
	version.Store(1000)
	write := clienttesting.ObjectReaction(client.Tracker())
	bump := func(action clienttesting.Action) (bool, runtime.Object, error) {
		handled, obj, err := write(action)
		if err != nil {
			return handled, obj, err
		}
		accessor, ok := obj.(metav1.Object)
		if !ok {
			return handled, obj, err
		}
		accessor.SetResourceVersion(strconv.FormatInt(version.Add(1), 10))
		return true, obj, client.Tracker().Update(action.GetResource(), obj, accessor.GetNamespace())
	}
	for _, resource := range []string{"pods", "persistentvolumeclaims", "controllerrevisions"} {
		client.PrependReactor("update", resource, bump)
		client.PrependReactor("patch", resource, bump)
	}
}

func key(obj metav1.Object) string {
	return obj.GetNamespace() + "/" + obj.GetName()
}

// newCS returns a CloneSet "cs" selecting app=cs with v1beta1's defaults: RollingUpdate,
// ReCreate, partition 0, maxUnavailable 20%, maxSurge 0, revisionHistoryLimit 10.
func newCS(replicas int32) *appsv1beta1.CloneSet {
	labels := map[string]string{"app": "cs"}
	return &appsv1beta1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "cs", Namespace: testNamespace, UID: "uid-cs", Generation: 1, ResourceVersion: "1"},
		Spec: appsv1beta1.CloneSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:v1"}}},
			},
			UpdateStrategy: appsv1beta1.CloneSetUpdateStrategy{
				Type: appsv1beta1.RollingUpdateCloneSetUpdateStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{
					PodUpdatePolicy: appsv1beta1.RecreateCloneSetPodUpdateStrategyType,
					Partition:       ptr.To(intstr.FromInt32(0)),
					MaxUnavailable:  ptr.To(intstr.FromString("20%")),
					MaxSurge:        ptr.To(intstr.FromInt32(0)),
				},
			},
			RevisionHistoryLimit: ptr.To[int32](10),
		},
	}
}

// withImage returns cs with its container's image set to image.
func withImage(cs *appsv1beta1.CloneSet, image string) *appsv1beta1.CloneSet {
	cs.Spec.Template.Spec.Containers[0].Image = image
	return cs
}

// revisionOf returns the ControllerRevision recording cs's current template, numbered n,
// as the controller (and OpenKruise) writes it.
func revisionOf(t *testing.T, cs *appsv1beta1.CloneSet, n int64) *appsv1.ControllerRevision {
	t.Helper()
	revision, err := clonesetutil.NewRevision(cs, n, 0)
	if err != nil {
		t.Fatal(err)
	}
	revision.ResourceVersion = "1"
	revision.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(n) * time.Minute))
	return revision
}

// newPod returns a pod of cs as the controller creates it, with instance ID id, at
// revision, lifecycle Normal, running on node n1, ready (and InPlaceUpdateReady) for an
// hour.
func newPod(cs *appsv1beta1.CloneSet, id string, revision *appsv1.ControllerRevision) *corev1.Pod {
	pod, err := clonesetutil.NewPod(cs, revision.Name, id, false, t0.Add(-2*time.Hour))
	if err != nil {
		panic(err)
	}
	pod.UID = types.UID("uid-" + pod.Name)
	pod.ResourceVersion = "10"
	pod.CreationTimestamp = metav1.NewTime(t0.Add(-2 * time.Hour))
	pod.Labels[appsv1beta1.LifecycleStateKey] = string(appsv1beta1.LifecycleStateNormal)
	pod.Spec.NodeName = "n1"
	readySince := metav1.NewTime(t0.Add(-time.Hour))
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: readySince},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: readySince},
		{Type: appsv1beta1.InPlaceUpdateReady, Status: corev1.ConditionTrue, LastTransitionTime: readySince},
	}}
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "sha-" + c.Image, Ready: true,
		})
	}
	return pod
}

// notReady marks pod not ready.
func notReady(pod *corev1.Pod) *corev1.Pod {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			pod.Status.Conditions[i].Status = corev1.ConditionFalse
		}
	}
	return pod
}

// withLabel sets a label on obj and returns it.
func withLabel[T metav1.Object](obj T, key, value string) T {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[key] = value
	obj.SetLabels(labels)
	return obj
}

// objects gathers the arguments of newFixture.
func objects(items ...runtime.Object) []runtime.Object { return items }

// podsOf turns pods into runtime objects.
func podsOf(pods ...*corev1.Pod) []runtime.Object {
	var out []runtime.Object
	for _, pod := range pods {
		out = append(out, pod)
	}
	return out
}

// metaSelector returns a selector matching key=value.
func metaSelector(key, value string) metav1.LabelSelector {
	return metav1.LabelSelector{MatchLabels: map[string]string{key: value}}
}
