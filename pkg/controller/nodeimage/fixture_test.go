package nodeimage

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunfake "github.com/bosun-dev/client-go/clientset/versioned/fake"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"
	appsinformers "github.com/bosun-dev/client-go/informers/externalversions/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
)

// t0 is the fake clock's start time.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	testCreationDelay   = 30 * time.Second
	testResponseTimeout = 10 * time.Minute
	// fixedJitter is the random part of every requeue floor in these tests.
	fixedJitter = time.Second
)

// fixture is a controller on hand-filled informer caches, fake clientsets holding the
// same objects (plus whatever a test puts only on the server) and a fake clock.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	kube     *fake.Clientset
	bosun    *bosunfake.Clientset
	factory  informers.SharedInformerFactory
	bosunInf bosuninformers.SharedInformerFactory
	clock    *clocktesting.FakeClock
	recorder *eventRecorder
	queue    *queuetest.Recorder
	c        *Controller
}

// newFixture builds the controller with the test timings and the fake clock; opts come
// after them and may override them.
func newFixture(t *testing.T, opts ...options.Option) *fixture {
	t.Helper()
	return buildFixture(t, true, opts...)
}

// newFixtureWithoutJobs builds the controller as the manager does when the API server
// does not serve ImagePullJobs: without their informer.
func newFixtureWithoutJobs(t *testing.T, opts ...options.Option) *fixture {
	t.Helper()
	return buildFixture(t, false, opts...)
}

func buildFixture(t *testing.T, withJobs bool, opts ...options.Option) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	// NewClientset needs apply configurations, which bosun's generated client lacks.
	bosun := bosunfake.NewSimpleClientset() //nolint:staticcheck
	f := &fixture{t: t, ctx: ctx, kube: fake.NewClientset(), bosun: bosun,
		clock: clocktesting.NewFakeClock(t0), recorder: &eventRecorder{}}
	f.factory = informers.NewSharedInformerFactory(f.kube, 0)
	f.bosunInf = bosuninformers.NewSharedInformerFactory(f.bosun, 0)
	var jobs appsinformers.ImagePullJobInformer
	if withJobs {
		jobs = f.bosunInf.Apps().V1beta1().ImagePullJobs()
	}
	q, wrapQueue := queuetest.Wrapping()
	opts = append([]options.Option{options.WithClock(f.clock), WithCreationDelay(testCreationDelay), WithResponseTimeout(testResponseTimeout),
		withRequeueJitter(func() time.Duration { return fixedJitter }), wrapQueue}, opts...)
	c, err := NewController(ctx, f.factory.Core().V1().Nodes(), f.bosunInf.Apps().V1beta1().NodeImages(),
		jobs, f.kube, f.bosun, f.recorder, opts...)
	if err != nil {
		t.Fatal(err)
	}
	f.queue = q
	t.Cleanup(c.queue.ShutDown)
	f.c = c
	return f
}

// addNode puts node into the cache and on the server.
func (f *fixture) addNode(node *corev1.Node) {
	f.t.Helper()
	if err := f.factory.Core().V1().Nodes().Informer().GetIndexer().Add(node); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.kube.CoreV1().Nodes().Create(f.ctx, node, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// addNodeImage puts ni into the cache and on the server.
func (f *fixture) addNodeImage(ni *appsv1beta1.NodeImage) {
	f.t.Helper()
	if err := f.bosunInf.Apps().V1beta1().NodeImages().Informer().GetIndexer().Add(ni); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.bosun.AppsV1beta1().NodeImages().Create(f.ctx, ni, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// addJob puts job into the cache (when cached) and on the server (when live).
func (f *fixture) addJob(job *appsv1beta1.ImagePullJob, cached, live bool) {
	f.t.Helper()
	if cached {
		if err := f.bosunInf.Apps().V1beta1().ImagePullJobs().Informer().GetIndexer().Add(job); err != nil {
			f.t.Fatal(err)
		}
	}
	if live {
		if _, err := f.bosun.AppsV1beta1().ImagePullJobs(job.Namespace).Create(f.ctx, job, metav1.CreateOptions{}); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *fixture) addSecret(namespace, name string) {
	f.t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if _, err := f.kube.CoreV1().Secrets(namespace).Create(f.ctx, secret, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) sync(name string) {
	f.t.Helper()
	if err := f.c.syncNodeImage(f.ctx, name); err != nil {
		f.t.Fatalf("sync(%s): %v", name, err)
	}
}

// removeNode takes node out of the cache, as its deletion would.
func (f *fixture) removeNode(node *corev1.Node) {
	f.t.Helper()
	if err := f.factory.Core().V1().Nodes().Informer().GetIndexer().Delete(node); err != nil {
		f.t.Fatal(err)
	}
}

// cacheNodeImage makes the cache hold the NodeImage the server holds, as its update event
// would.
func (f *fixture) cacheNodeImage(name string) *appsv1beta1.NodeImage {
	f.t.Helper()
	ni := f.nodeImage(name)
	if ni == nil {
		f.t.Fatalf("no NodeImage %s on the server", name)
	}
	if err := f.bosunInf.Apps().V1beta1().NodeImages().Informer().GetIndexer().Update(ni); err != nil {
		f.t.Fatal(err)
	}
	return ni
}

// nodeImage returns the NodeImage on the server, or nil.
func (f *fixture) nodeImage(name string) *appsv1beta1.NodeImage {
	f.t.Helper()
	ni, err := f.bosun.AppsV1beta1().NodeImages().Get(f.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return ni
}

// writes returns the verbs of the NodeImage writes the controller made ("create",
// "update", "update/status", "delete").
func (f *fixture) writes() []string {
	var verbs []string
	for _, a := range f.bosun.Actions() {
		if a.GetResource().Resource != "nodeimages" || a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		verb := a.GetVerb()
		if a.GetSubresource() != "" {
			verb += "/" + a.GetSubresource()
		}
		verbs = append(verbs, verb)
	}
	return verbs
}

// clearActions forgets the client calls made so far (the fixture's own included).
func (f *fixture) clearActions() {
	f.bosun.ClearActions()
	f.kube.ClearActions()
}

// conflictOnce makes the first verb (update, or update of subresource) of NodeImages fail
// with a conflict.
func (f *fixture) conflictOnce(verb, subresource string) {
	var once sync.Once
	f.bosun.PrependReactor(verb, "nodeimages", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != subresource {
			return false, nil, nil
		}
		fired := false
		once.Do(func() { fired = true })
		if fired {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps.kruise.io", Resource: "nodeimages"}, "x", fmt.Errorf("stale"))
		}
		return false, nil, nil
	})
}

func readyNode(name string, labels map[string]string, readySince time.Time) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: "node-uid", Labels: labels},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(readySince)},
		}},
	}
}

func newNodeImage(name string, labels map[string]string, images map[string]appsv1beta1.ImageSpec) *appsv1beta1.NodeImage {
	return &appsv1beta1.NodeImage{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: "ni-uid", Labels: labels},
		Spec:       appsv1beta1.NodeImageSpec{Images: images},
	}
}

// tag returns a defaulted tag created at createdAt with the given TTL and owners.
func tag(name string, createdAt time.Time, ttl int32, owners ...corev1.ObjectReference) appsv1beta1.ImageTagSpec {
	return appsv1beta1.ImageTagSpec{
		Tag:       name,
		CreatedAt: ptr.To(metav1.NewTime(createdAt)),
		PullPolicy: &appsv1beta1.ImageTagPullPolicy{
			TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](3), TTLSecondsAfterFinished: &ttl,
		},
		OwnerReferences: owners,
	}
}

func jobRef(name, uid string) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "ImagePullJob", Namespace: "ns", Name: name, UID: types.UID(uid)}
}

func job(name, uid string) *appsv1beta1.ImagePullJob {
	return &appsv1beta1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)}}
}

// eventRecorder records events as "<type> <reason> <kind>/<name>: <message>".
type eventRecorder struct {
	mu     sync.Mutex
	events []string
}

func (r *eventRecorder) record(object runtime.Object, eventtype, reason, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var target string
	switch o := object.(type) {
	case *corev1.ObjectReference:
		target = o.Kind + "/" + o.Namespace + "/" + o.Name
	case *appsv1beta1.NodeImage:
		target = "NodeImage/" + o.Name
	default:
		target = fmt.Sprintf("%T", object)
	}
	r.events = append(r.events, fmt.Sprintf("%s %s %s: %s", eventtype, reason, target, message))
}

func (r *eventRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.record(object, eventtype, reason, message)
}

func (r *eventRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.record(object, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

func (r *eventRecorder) AnnotatedEventf(object runtime.Object, _ map[string]string, eventtype, reason, messageFmt string, args ...any) {
	r.record(object, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

func (r *eventRecorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// equalStatus compares statuses field by field, times by instant.
func equalStatus(a, b appsv1beta1.NodeImageStatus) bool {
	if a.Desired != b.Desired || a.Succeeded != b.Succeeded || a.Failed != b.Failed || a.Pulling != b.Pulling || a.Waiting != b.Waiting ||
		len(a.ImageStatuses) != len(b.ImageStatuses) {
		return false
	}
	for image, as := range a.ImageStatuses {
		bs, ok := b.ImageStatuses[image]
		if !ok || len(as.Tags) != len(bs.Tags) {
			return false
		}
		for i := range as.Tags {
			x, y := as.Tags[i], bs.Tags[i]
			if x.Tag != y.Tag || x.Phase != y.Phase || x.Version != y.Version || x.Message != y.Message || x.ImageID != y.ImageID ||
				!x.StartTime.Equal(y.StartTime) || !x.CompletionTime.Equal(y.CompletionTime) {
				return false
			}
		}
	}
	return true
}
