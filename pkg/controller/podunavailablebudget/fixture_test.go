package podunavailablebudget

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	scalefake "k8s.io/client-go/scale/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	kruiseappsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"

	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/budget"
	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/budget/budgettest"
	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
	"github.com/bosun-dev/bosun/pkg/controller/workload"
	"github.com/bosun-dev/bosun/pkg/features"
)

const testNamespace = "ns"

// t0 is the fake clock's start time.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// widgetKind is a scalable custom workload kind bosun has no informer for; the test API
// server serves its metadata and /scale.
var widgetKind = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}

// fixture is a controller on hand-filled informer caches, a fake Kubernetes clientset and
// a fake bosun clientset whose budgets get resource versions and conflicts like the API
// server's.
type fixture struct {
	t          *testing.T
	ctx        context.Context
	kubeClient *fake.Clientset
	server     *budgettest.Server
	cache      *budget.Cache
	indexers   map[string]cache.Indexer
	metadata   *metadatafake.FakeMetadataClient
	scales     *scalefake.FakeScaleClient
	clock      *clocktesting.FakeClock
	recorder   *eventRecorder
	queue      *queuetest.Recorder
	c          *Controller
}

type fixtureOption struct {
	gates map[featuregate.Feature]bool
	// resync is the resync period; 0 leaves it off.
	resync time.Duration
	// noDaemonSets builds the controller without the Advanced DaemonSet informer, as when
	// apps.kruise.io is not served.
	noDaemonSets bool
	// scales are the /scale answers of live (Widget) objects, by name.
	scales map[string]*autoscalingv1.Scale
	// live are the Widget objects the metadata client serves.
	live []*metav1.PartialObjectMetadata
}

// newFixture builds a controller. Budgets go into the fake API server and, with the
// resource version it gives them, into the informer cache; every other object goes into its
// informer cache only (pods into the clientset as well, for the tagging patches).
func newFixture(t *testing.T, opt fixtureOption, objects ...runtime.Object) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	kubeClient := fake.NewClientset()
	server := budgettest.NewServer()
	factory := informers.NewSharedInformerFactory(kubeClient, 0)
	bosunFactory := bosuninformers.NewSharedInformerFactory(server, 0)

	budgetInformer := bosunFactory.Policy().V1beta1().PodUnavailableBudgets()
	podInformer := factory.Core().V1().Pods()
	deployInformer := factory.Apps().V1().Deployments()
	stsInformer := factory.Apps().V1().StatefulSets()
	rsInformer := factory.Apps().V1().ReplicaSets()
	rcInformer := factory.Core().V1().ReplicationControllers()
	dsInformer := bosunFactory.Apps().V1beta1().DaemonSets()

	gates := features.NewFeatureGate()
	for name, on := range opt.gates {
		if err := gates.SetFromMap(map[string]bool{string(name): on}); err != nil {
			t.Fatal(err)
		}
	}
	listers := workload.Listers{
		ReplicaSets:            rsInformer.Lister(),
		Deployments:            deployInformer.Lister(),
		StatefulSets:           stsInformer.Lister(),
		ReplicationControllers: rcInformer.Lister(),
	}
	if !opt.noDaemonSets {
		listers.DaemonSets = dsInformer.Lister()
	}
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var live []runtime.Object
	for _, obj := range opt.live {
		live = append(live, obj.DeepCopy())
	}
	md := metadatafake.NewSimpleMetadataClient(scheme, live...)
	scales := &scalefake.FakeScaleClient{}
	scales.AddReactor("get", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		get := action.(clienttesting.GetAction)
		if s, ok := opt.scales[get.GetName()]; ok {
			return true, s.DeepCopy(), nil
		}
		return true, nil, apierrors.NewNotFound(get.GetResource().GroupResource(), get.GetName())
	})
	finder := workload.NewFinder(listers, scales, md, testMapper(),
		workload.WithOwnerChain(gates.Enabled(features.PodUnavailableBudgetOwnerChain)),
		workload.WithDaemonSetReplicas(gates.Enabled(features.PodUnavailableBudgetDaemonSetReplicas)))

	clk := clocktesting.NewFakeClock(t0)
	recorder := &eventRecorder{}
	budgetCache := budget.NewCache()
	var daemonSets = dsInformer
	if opt.noDaemonSets {
		daemonSets = nil
	}
	q, wrapQueue := queuetest.Wrapping()
	c, err := NewController(ctx, budgetInformer, podInformer, deployInformer, rsInformer, stsInformer, daemonSets, finder,
		kubeClient, server, budgetCache, recorder,
		options.WithClock(clk), options.WithFeatureGate(gates), options.WithResyncPeriod(opt.resync), wrapQueue)
	if err != nil {
		t.Fatalf("NewController: %v", err)
	}
	t.Cleanup(q.ShutDown)
	t.Cleanup(c.chains.ShutDown)

	f := &fixture{
		t: t, ctx: ctx, kubeClient: kubeClient, server: server, cache: budgetCache,
		indexers: map[string]cache.Indexer{
			"budget": budgetInformer.Informer().GetIndexer(), "pod": podInformer.Informer().GetIndexer(),
			"deployment": deployInformer.Informer().GetIndexer(), "statefulset": stsInformer.Informer().GetIndexer(),
			"replicaset": rsInformer.Informer().GetIndexer(), "rc": rcInformer.Informer().GetIndexer(),
			"daemonset": dsInformer.Informer().GetIndexer(),
		},
		metadata: md, scales: scales, clock: clk, recorder: recorder, queue: q, c: c,
	}
	for _, obj := range objects {
		f.add(obj)
	}
	return f
}

// add puts obj into its informer cache (a budget first into the API server, which gives it
// a resource version) and returns what was cached.
func (f *fixture) add(obj runtime.Object) runtime.Object {
	f.t.Helper()
	var indexer string
	switch o := obj.(type) {
	case *policyv1beta1.PodUnavailableBudget:
		obj, indexer = f.server.Put(o), "budget"
	case *corev1.Pod:
		indexer = "pod"
		// The tagging patches need the pod in the clientset.
		if _, err := f.kubeClient.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), o.Namespace, o.Name); apierrors.IsNotFound(err) {
			if err := f.kubeClient.Tracker().Add(o); err != nil {
				f.t.Fatal(err)
			}
		}
	case *appsv1.Deployment:
		indexer = "deployment"
	case *appsv1.StatefulSet:
		indexer = "statefulset"
	case *appsv1.ReplicaSet:
		indexer = "replicaset"
	case *kruiseappsv1beta1.DaemonSet:
		indexer = "daemonset"
	default:
		f.t.Fatalf("no cache for %T", obj)
	}
	if err := f.indexers[indexer].Update(obj); err != nil {
		f.t.Fatal(err)
	}
	return obj
}

// remove deletes obj from its informer cache (and a budget from the API server).
func (f *fixture) remove(obj runtime.Object) {
	f.t.Helper()
	var indexer string
	switch o := obj.(type) {
	case *policyv1beta1.PodUnavailableBudget:
		f.server.Delete(o.Namespace, o.Name)
		indexer = "budget"
	case *corev1.Pod:
		indexer = "pod"
	case *appsv1.Deployment:
		indexer = "deployment"
	case *appsv1.ReplicaSet:
		indexer = "replicaset"
	default:
		f.t.Fatalf("remove of %T", obj)
	}
	if err := f.indexers[indexer].Delete(obj); err != nil {
		f.t.Fatal(err)
	}
}

// refreshBudget copies the API server's budget into the informer cache, as a watch
// event would.
func (f *fixture) refreshBudget(name string) *policyv1beta1.PodUnavailableBudget {
	f.t.Helper()
	pub := f.server.Budget(testNamespace, name)
	if pub == nil {
		f.t.Fatalf("budget %s is not in the API server", name)
	}
	if err := f.indexers["budget"].Update(pub); err != nil {
		f.t.Fatal(err)
	}
	return pub
}

// sync runs one sync of the budget name and fails the test on error.
func (f *fixture) sync(name string) {
	f.t.Helper()
	if err := f.c.syncBudget(f.ctx, testNamespace+"/"+name); err != nil {
		f.t.Fatalf("sync %s: %v", name, err)
	}
}

// status returns the stored status of the budget name.
func (f *fixture) status(name string) policyv1beta1.PodUnavailableBudgetStatus {
	f.t.Helper()
	pub := f.server.Budget(testNamespace, name)
	if pub == nil {
		f.t.Fatalf("budget %s is not in the API server", name)
	}
	return pub.Status
}

// statusWrites returns the number of successful status writes so far.
func (f *fixture) statusWrites() int {
	writes, _, _ := f.server.Counts()
	return writes
}

// patchedPods returns the names of the pods patched, each with the annotations its patch
// set.
func (f *fixture) patchedPods() map[string]map[string]string {
	f.t.Helper()
	patched := map[string]map[string]string{}
	for _, a := range f.kubeClient.Actions() {
		patch, ok := a.(clienttesting.PatchAction)
		if !ok || a.GetResource().Resource != "pods" {
			continue
		}
		if patch.GetPatchType() != types.StrategicMergePatchType {
			f.t.Errorf("pod %s patched with %s, want a strategic merge patch", patch.GetName(), patch.GetPatchType())
		}
		var body struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(patch.GetPatch(), &body); err != nil {
			f.t.Fatal(err)
		}
		patched[patch.GetName()] = body.Metadata.Annotations
	}
	return patched
}

// counts are the four numbers of a budget's status, for comparisons.
type counts struct {
	Total, Desired, Current, Allowed int32
}

func countsOf(s policyv1beta1.PodUnavailableBudgetStatus) counts {
	return counts{Total: s.TotalReplicas, Desired: s.DesiredAvailable, Current: s.CurrentAvailable, Allowed: s.UnavailableAllowed}
}

// testMapper knows the cached kinds and Widget.
func testMapper() meta.RESTMapper {
	kinds := []schema.GroupVersionKind{
		appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
		appsv1.SchemeGroupVersion.WithKind("Deployment"),
		appsv1.SchemeGroupVersion.WithKind("StatefulSet"),
		corev1.SchemeGroupVersion.WithKind("ReplicationController"),
		kruiseappsv1beta1.SchemeGroupVersion.WithKind("DaemonSet"),
		widgetKind,
	}
	var preferred []schema.GroupVersion
	for _, gvk := range kinds {
		preferred = append(preferred, gvk.GroupVersion())
	}
	mapper := meta.NewDefaultRESTMapper(preferred)
	for _, gvk := range kinds {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	return mapper
}

// event is one recorded event.
type event struct {
	object              runtime.Object
	eventType, reason   string
	message             string
	objectName, objKind string
}

func (e event) String() string {
	return fmt.Sprintf("%s %s %s/%s: %s", e.eventType, e.reason, e.objKind, e.objectName, e.message)
}

// eventRecorder records events with the object they are about.
type eventRecorder struct {
	mu     sync.Mutex
	events []event
}

func (r *eventRecorder) Event(object runtime.Object, eventType, reason, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	accessor, _ := meta.Accessor(object)
	kind := fmt.Sprintf("%T", object)
	switch object.(type) {
	case *corev1.Pod:
		kind = "Pod"
	case *policyv1beta1.PodUnavailableBudget:
		kind = "PodUnavailableBudget"
	}
	r.events = append(r.events, event{object: object, eventType: eventType, reason: reason, message: message, objectName: accessor.GetName(), objKind: kind})
}

func (r *eventRecorder) Eventf(object runtime.Object, eventType, reason, messageFmt string, args ...any) {
	r.Event(object, eventType, reason, fmt.Sprintf(messageFmt, args...))
}

func (r *eventRecorder) AnnotatedEventf(object runtime.Object, _ map[string]string, eventType, reason, messageFmt string, args ...any) {
	r.Eventf(object, eventType, reason, messageFmt, args...)
}

// take returns the events recorded since the last call, as strings.
func (r *eventRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, e.String())
	}
	r.events = nil
	return out
}

// Objects.

func controllerRef(gvk schema.GroupVersionKind, name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: name, UID: uid, Controller: ptr.To(true)}
}

var (
	deploymentGVK  = appsv1.SchemeGroupVersion.WithKind("Deployment")
	replicaSetGVK  = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	statefulSetGVK = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	daemonSetGVK   = kruiseappsv1beta1.SchemeGroupVersion.WithKind("DaemonSet")
)

// newDeployment returns Deployment name with replicas, selecting and templating app=name.
func newDeployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace, UID: types.UID("uid-" + name), ResourceVersion: "1"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}},
		},
	}
}

// newReplicaSet returns ReplicaSet name with replicas, controlled by owner when it is set.
func newReplicaSet(name string, replicas int32, owner *metav1.OwnerReference) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace, UID: types.UID("uid-" + name), ResourceVersion: "1"},
		Spec:       appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas)},
	}
	if owner != nil {
		rs.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return rs
}

// newStatefulSet returns StatefulSet name with replicas, templating app=name.
func newStatefulSet(name string, replicas int32) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace, UID: types.UID("uid-" + name), ResourceVersion: "1"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}},
		},
	}
}

// newDaemonSet returns Advanced DaemonSet name wanting desired pods, templating app=name.
func newDaemonSet(name string, desired int32) *kruiseappsv1beta1.DaemonSet {
	labels := map[string]string{"app": name}
	return &kruiseappsv1beta1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace, UID: types.UID("uid-" + name), ResourceVersion: "1"},
		Spec: kruiseappsv1beta1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}},
		},
		Status: kruiseappsv1beta1.DaemonSetStatus{DesiredNumberScheduled: desired},
	}
}

// newPod returns a running, ready pod with labels, controlled by owner when it is set.
func newPod(name string, labels map[string]string, owner *metav1.OwnerReference) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: testNamespace, UID: types.UID("uid-" + name), ResourceVersion: "10",
			Labels: labels,
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:v1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		}},
	}
	if owner != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return pod
}

// podsOf returns n ready pods name-0..name-(n-1) labelled app=app and controlled by owner.
func podsOf(prefix, app string, n int, owner *metav1.OwnerReference) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range n {
		pods = append(pods, newPod(fmt.Sprintf("%s-%d", prefix, i), map[string]string{"app": app}, owner))
	}
	return pods
}

// tagged returns pod annotated with both related-pub keys naming pub.
func tagged(pod *corev1.Pod, pub string) *corev1.Pod {
	pod.Annotations = map[string]string{
		policyv1beta1.PodRelatedPubAnnotation:    pub,
		policyv1beta1.PodRelatedPubAnnotationNew: pub,
	}
	return pod
}

func notReady(pod *corev1.Pod) *corev1.Pod {
	pod.Status.Conditions[0].Status = corev1.ConditionFalse
	return pod
}

// newBudget returns budget name with maxUnavailable (an int or "N%") selecting app=app.
func selectorBudget(name, app string, maxUnavailable intstr.IntOrString) *policyv1beta1.PodUnavailableBudget {
	return &policyv1beta1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace, UID: types.UID("uid-" + name), Generation: 1},
		Spec: policyv1beta1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			MaxUnavailable: ptr.To(maxUnavailable),
		},
	}
}

// targetBudget returns budget name with maxUnavailable targeting the workload gvk/target.
func targetBudget(name string, gvk schema.GroupVersionKind, target string, maxUnavailable intstr.IntOrString) *policyv1beta1.PodUnavailableBudget {
	return &policyv1beta1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace, UID: types.UID("uid-" + name), Generation: 1},
		Spec: policyv1beta1.PodUnavailableBudgetSpec{
			TargetReference: &policyv1beta1.TargetReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: target},
			MaxUnavailable:  ptr.To(maxUnavailable),
		},
	}
}

// withAnnotation sets annotation key=value on pub.
func withAnnotation(pub *policyv1beta1.PodUnavailableBudget, key, value string) *policyv1beta1.PodUnavailableBudget {
	if pub.Annotations == nil {
		pub.Annotations = map[string]string{}
	}
	pub.Annotations[key] = value
	return pub
}

// liveWidget is a Widget object served by the metadata client.
func liveWidget(name string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: widgetKind.GroupVersion().String(), Kind: widgetKind.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace, UID: types.UID("uid-" + name)},
	}
}

func scaleOf(replicas int32, selector string) *autoscalingv1.Scale {
	return &autoscalingv1.Scale{
		Spec:   autoscalingv1.ScaleSpec{Replicas: replicas},
		Status: autoscalingv1.ScaleStatus{Selector: selector},
	}
}
