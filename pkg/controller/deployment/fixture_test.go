package deployment

import (
	"context"
	"fmt"
	"slices"
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
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/conditions"
	"github.com/bosun-dev/bosun/pkg/controller/deployment/deploymentutil"
	"github.com/bosun-dev/bosun/pkg/controller/hash"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/features"
)

// testNow is the fake clock's start; conditions written by the controller carry it.
var testNow = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// fixture is a controller wired to a fake clientset and to informer indexers filled by hand
// (the informers never run), so a test controls exactly what the caches show.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	client   *fake.Clientset
	recorder *record.FakeRecorder
	clock    *clocktesting.FakeClock
	c        *Controller

	dIndexer, rsIndexer, podIndexer cache.Indexer
}

// newFixture puts objs (Deployments, ReplicaSets, Pods) into both the fake API server and
// the informer caches.
func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	return newFixtureWithQueue(t, nil, objs...)
}

// newFixtureWithQueue is newFixture with the controller's work queue passed through wrap,
// which also gets the fixture's clock; nil leaves the queue alone.
func newFixtureWithQueue(t *testing.T,
	wrap func(clk *clocktesting.FakeClock, q workqueue.TypedRateLimitingInterface[string]) workqueue.TypedRateLimitingInterface[string],
	objs ...runtime.Object) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	dInformer := factory.Apps().V1().Deployments()
	rsInformer := factory.Apps().V1().ReplicaSets()
	podInformer := factory.Core().V1().Pods()
	recorder := record.NewFakeRecorder(100)
	clk := clocktesting.NewFakeClock(testNow)
	opts := []options.Option{options.WithClock(clk), options.WithFeatureGate(features.NewFeatureGate())}
	if wrap != nil {
		opts = append(opts, options.WithQueueWrapper(func(q workqueue.TypedRateLimitingInterface[string]) workqueue.TypedRateLimitingInterface[string] {
			return wrap(clk, q)
		}))
	}
	c, err := NewController(ctx, dInformer, rsInformer, podInformer, client, recorder, opts...)
	if err != nil {
		t.Fatalf("NewController: %v", err)
	}
	t.Cleanup(c.queue.ShutDown)

	f := &fixture{
		t: t, ctx: ctx, client: client, recorder: recorder, clock: clk, c: c,
		dIndexer:   dInformer.Informer().GetIndexer(),
		rsIndexer:  rsInformer.Informer().GetIndexer(),
		podIndexer: podInformer.Informer().GetIndexer(),
	}
	for _, obj := range objs {
		f.cache(obj)
	}
	return f
}

// cache adds obj to its informer's indexer only (not to the fake API server).
func (f *fixture) cache(obj runtime.Object) {
	f.t.Helper()
	var err error
	switch o := obj.(type) {
	case *appsv1.Deployment:
		err = f.dIndexer.Add(o)
	case *appsv1.ReplicaSet:
		err = f.rsIndexer.Add(o)
	case *corev1.Pod:
		err = f.podIndexer.Add(o)
	default:
		f.t.Fatalf("cannot cache %T", obj)
	}
	if err != nil {
		f.t.Fatalf("caching %T: %v", obj, err)
	}
}

// sync runs syncDeployment for d's key and resets nothing: the actions and events it
// caused are read with writes and events.
func (f *fixture) sync(d *appsv1.Deployment) error {
	f.t.Helper()
	return f.c.syncDeployment(f.ctx, d.Namespace+"/"+d.Name)
}

// writes returns the mutating actions the controller sent (reads are left out).
func (f *fixture) writes() []core.Action {
	var out []core.Action
	for _, a := range f.client.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		out = append(out, a)
	}
	return out
}

// writesTo returns the writes with the given verb on resource (and subresource, "" for the
// object itself).
func (f *fixture) writesTo(verb, resource, subresource string) []core.Action {
	var out []core.Action
	for _, a := range f.writes() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource && a.GetSubresource() == subresource {
			out = append(out, a)
		}
	}
	return out
}

// createdReplicaSets returns the ReplicaSets the controller created.
func (f *fixture) createdReplicaSets() []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, a := range f.writesTo("create", "replicasets", "") {
		out = append(out, a.(core.CreateAction).GetObject().(*appsv1.ReplicaSet))
	}
	return out
}

// updatedReplicaSets returns the ReplicaSets the controller updated, in order.
func (f *fixture) updatedReplicaSets() []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, a := range f.writesTo("update", "replicasets", "") {
		out = append(out, a.(core.UpdateAction).GetObject().(*appsv1.ReplicaSet))
	}
	return out
}

// statusWrites returns the Deployments the controller wrote through UpdateStatus, in order.
func (f *fixture) statusWrites() []*appsv1.Deployment {
	var out []*appsv1.Deployment
	for _, a := range f.writesTo("update", "deployments", "status") {
		out = append(out, a.(core.UpdateAction).GetObject().(*appsv1.Deployment))
	}
	return out
}

// lastStatusWrite returns the last Deployment written through UpdateStatus.
func (f *fixture) lastStatusWrite() *appsv1.Deployment {
	f.t.Helper()
	writes := f.statusWrites()
	if len(writes) == 0 {
		f.t.Fatalf("no status write; writes: %s", describe(f.writes()))
	}
	return writes[len(writes)-1]
}

// events drains the recorded events ("<type> <reason> <message>").
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// queued drains the queue's ready keys.
func (f *fixture) queued() []string {
	var keys []string
	for f.c.queue.Len() > 0 {
		key, _ := f.c.queue.Get()
		f.c.queue.Done(key)
		f.c.queue.Forget(key)
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys
}

// describe renders actions for failure messages.
func describe(actions []core.Action) string {
	s := ""
	for _, a := range actions {
		s += fmt.Sprintf("[%s %s/%s %s] ", a.GetVerb(), a.GetResource().Resource, a.GetSubresource(), a.GetNamespace())
	}
	return s
}

var podLabels = map[string]string{"app": "web"}

// newDeployment returns a Deployment as the API server would store it, with the defaults of
// upstream API defaults and a progress deadline.
func newDeployment(name string, replicas int32) *appsv1.Deployment {
	maxSurge, maxUnavailable := intstr.FromString("25%"), intstr.FromString("25%")
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Generation: 1, ResourceVersion: "1",
			CreationTimestamp: metav1.NewTime(testNow.Add(-time.Hour)),
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "image:1"}}},
			},
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &maxSurge, MaxUnavailable: &maxUnavailable},
			},
			RevisionHistoryLimit:    ptr.To[int32](10),
			ProgressDeadlineSeconds: ptr.To[int32](600),
		},
	}
}

// withImage returns d with another container image, i.e. another template.
func withImage(d *appsv1.Deployment, image string) *appsv1.Deployment {
	d = d.DeepCopy()
	d.Spec.Template.Spec.Containers[0].Image = image
	return d
}

// newReplicaSet returns a ReplicaSet of d made from template the way the controller makes
// one, with the given revision and sizes (spec, status.replicas = status.available).
func newReplicaSet(d *appsv1.Deployment, template corev1.PodTemplateSpec, revision string, created time.Time, spec, status int32) *appsv1.ReplicaSet {
	h := hash.ComputeHash(&template, nil)
	template = *template.DeepCopy()
	template.Labels = withLabel(template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, h)
	selector := d.Spec.Selector.DeepCopy()
	selector.MatchLabels = withLabel(selector.MatchLabels, appsv1.DefaultDeploymentUniqueLabelKey, h)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: d.Name + "-" + h, Namespace: d.Namespace, UID: types.UID("uid-" + d.Name + "-" + h),
			Labels: template.Labels, ResourceVersion: "1", Generation: 1,
			CreationTimestamp: metav1.NewTime(created),
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(d, controllerKind)},
			Annotations:       map[string]string{},
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(spec), Selector: selector, Template: template, MinReadySeconds: d.Spec.MinReadySeconds},
		Status: appsv1.ReplicaSetStatus{
			Replicas: status, ReadyReplicas: status, AvailableReplicas: status, ObservedGeneration: 1,
		},
	}
	if revision != "" {
		rs.Annotations[deploymentutil.RevisionAnnotation] = revision
	}
	return rs
}

// newPod returns a pod controlled by rs in the given phase.
func newPod(name string, rs *appsv1.ReplicaSet, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: rs.Namespace, UID: types.UID("uid-" + name), Labels: rs.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))},
		},
		Status: corev1.PodStatus{Phase: phase},
	}
}

// progressing returns status's Progressing condition, failing the test when there is none.
func progressing(t *testing.T, status appsv1.DeploymentStatus) appsv1.DeploymentCondition {
	t.Helper()
	c := conditions.Deployment.Get(status.Conditions, appsv1.DeploymentProgressing)
	if c == nil {
		t.Fatalf("no Progressing condition in %+v", status.Conditions)
	}
	return *c
}
