package imagelistpulljob

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunfake "github.com/bosun-dev/client-go/clientset/versioned/fake"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
)

const testNamespace = "ns"

// t0 is the fake clock's start time.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fixture is a controller over a fake clientset whose informer caches the test fills: add
// puts objects into both, observe copies what the clientset holds into the caches, as the
// watches would.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	client   *bosunfake.Clientset
	clock    *clocktesting.FakeClock
	queue    *queuetest.Recorder
	recorder *record.FakeRecorder
	c        *Controller

	listJobs, jobs cache.Indexer
}

func newFixture(t *testing.T, objects ...runtime.Object) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	client := bosunfake.NewSimpleClientset()
	factory := bosuninformers.NewSharedInformerFactory(client, 0)
	listJobs := factory.Apps().V1beta1().ImageListPullJobs()
	jobs := factory.Apps().V1beta1().ImagePullJobs()
	clk := clocktesting.NewFakeClock(t0)
	recorder := record.NewFakeRecorder(100)
	q, wrapQueue := queuetest.Wrapping()
	c, err := NewController(ctx, listJobs, jobs, client, recorder, options.WithClock(clk), wrapQueue)
	if err != nil {
		t.Fatalf("NewController: %v", err)
	}
	t.Cleanup(q.ShutDown)
	f := &fixture{
		t: t, ctx: ctx, client: client, clock: clk, queue: q, recorder: recorder, c: c,
		listJobs: listJobs.Informer().GetIndexer(), jobs: jobs.Informer().GetIndexer(),
	}
	for _, obj := range objects {
		f.add(obj)
	}
	return f
}

// add creates obj in the clientset and puts it into its cache.
func (f *fixture) add(obj runtime.Object) {
	f.t.Helper()
	f.must(f.client.Tracker().Add(obj))
	f.observe()
}

// observe makes the caches show what the clientset holds.
func (f *fixture) observe() {
	f.t.Helper()
	listJobs, err := f.client.AppsV1beta1().ImageListPullJobs("").List(f.ctx, metav1.ListOptions{})
	f.must(err)
	jobs, err := f.client.AppsV1beta1().ImagePullJobs("").List(f.ctx, metav1.ListOptions{})
	f.must(err)
	var listJobObjs, jobObjs []any
	for i := range listJobs.Items {
		listJobObjs = append(listJobObjs, &listJobs.Items[i])
	}
	for i := range jobs.Items {
		jobObjs = append(jobObjs, &jobs.Items[i])
	}
	f.must(f.listJobs.Replace(listJobObjs, ""))
	f.must(f.jobs.Replace(jobObjs, ""))
}

func (f *fixture) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

// sync runs one sync of the list job, then lets the caches observe its writes.
func (f *fixture) sync(name string) {
	f.t.Helper()
	if err := f.c.syncListJob(f.ctx, testNamespace+"/"+name); err != nil {
		f.t.Fatalf("sync %s: %v", name, err)
	}
	f.observe()
}

func (f *fixture) listJob(name string) *appsv1beta1.ImageListPullJob {
	f.t.Helper()
	listJob, err := f.client.AppsV1beta1().ImageListPullJobs(testNamespace).Get(f.ctx, name, metav1.GetOptions{})
	f.must(err)
	return listJob
}

func (f *fixture) listJobGone(name string) bool {
	_, err := f.client.AppsV1beta1().ImageListPullJobs(testNamespace).Get(f.ctx, name, metav1.GetOptions{})
	return apierrors.IsNotFound(err)
}

// children returns the ImagePullJobs of the namespace, by image.
func (f *fixture) children() map[string]*appsv1beta1.ImagePullJob {
	f.t.Helper()
	jobs, err := f.client.AppsV1beta1().ImagePullJobs(testNamespace).List(f.ctx, metav1.ListOptions{})
	f.must(err)
	out := map[string]*appsv1beta1.ImagePullJob{}
	for i := range jobs.Items {
		if _, dup := out[jobs.Items[i].Spec.Image]; dup {
			f.t.Fatalf("two ImagePullJobs pull %s", jobs.Items[i].Spec.Image)
		}
		out[jobs.Items[i].Spec.Image] = &jobs.Items[i]
	}
	return out
}

// deliverChildAdds hands every child to the add handler, as the informer delivers the
// children a sync created: their creations are then no longer expected.
func (f *fixture) deliverChildAdds() {
	f.t.Helper()
	for _, child := range f.children() {
		f.c.addJob(f.ctx, child)
	}
}

// setChildStatus writes a child's status as the ImagePullJob controller would.
func (f *fixture) setChildStatus(image string, status appsv1beta1.ImagePullJobStatus) {
	f.t.Helper()
	child, ok := f.children()[image]
	if !ok {
		f.t.Fatalf("no child for %s", image)
	}
	child.Status = status
	_, err := f.client.AppsV1beta1().ImagePullJobs(testNamespace).UpdateStatus(f.ctx, child, metav1.UpdateOptions{})
	f.must(err)
	f.observe()
}

// actions returns the verbs and resources of the clientset calls since the last reset,
// "create imagepulljobs" for example, without the reads.
func (f *fixture) actions() []string {
	var out []string
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		s := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			s += "/" + a.GetSubresource()
		}
		out = append(out, s)
	}
	return out
}

// countActions counts the calls of verb on resource (e.g. "create", "imagepulljobs").
func (f *fixture) countActions(verb, resource string) int {
	return len(slices.DeleteFunc(f.actions(), func(s string) bool { return s != verb+" "+resource }))
}

// events drains the recorded events.
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

// failing makes the clientset refuse verb on resource with err for the objects match
// accepts (nil: all).
func (f *fixture) failing(verb, resource string, err error, match func(clienttesting.Action) bool) {
	f.client.PrependReactor(verb, resource, func(action clienttesting.Action) (bool, runtime.Object, error) {
		if match != nil && !match(action) {
			return false, nil, nil
		}
		return true, nil, err
	})
}

type listJobOption func(*appsv1beta1.ImageListPullJob)

// newListJob is a list job as admission leaves it, pulling images.
func newListJob(name string, images []string, opts ...listJobOption) *appsv1beta1.ImageListPullJob {
	listJob := &appsv1beta1.ImageListPullJob{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: testNamespace, Name: name, UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(t0),
		},
		Spec: appsv1beta1.ImageListPullJobSpec{Images: images},
	}
	appsv1beta1.SetDefaults_ImageListPullJob(listJob)
	for _, opt := range opts {
		opt(listJob)
	}
	return listJob
}

func withNever() listJobOption {
	return func(j *appsv1beta1.ImageListPullJob) { j.Spec.CompletionPolicy.Type = appsv1beta1.Never }
}

func withTTL(seconds int32) listJobOption {
	return func(j *appsv1beta1.ImageListPullJob) {
		j.Spec.CompletionPolicy.TTLSecondsAfterFinished = ptr.To(seconds)
	}
}

func withTimeout(seconds int32) listJobOption {
	return func(j *appsv1beta1.ImageListPullJob) { j.Spec.PullPolicy.TimeoutSeconds = ptr.To(seconds) }
}

func withAnnotation(key, value string) listJobOption {
	return func(j *appsv1beta1.ImageListPullJob) { metav1.SetMetaDataAnnotation(&j.ObjectMeta, key, value) }
}

// newChildOf is a child of listJob for image as OpenKruise or an earlier sync made it,
// defaulted by the ImagePullJob webhook, named name, created at created, labelled with
// hash (no label when empty).
func newChildOf(listJob *appsv1beta1.ImageListPullJob, name, image, hash string, created time.Time) *appsv1beta1.ImagePullJob {
	child := newChild(listJob, image, hash)
	child.Name = name
	child.UID = types.UID("uid-" + name)
	child.CreationTimestamp = metav1.NewTime(created)
	if hash == "" {
		child.Labels = nil
	}
	appsv1beta1.SetDefaults_ImagePullJob(child)
	return child
}

// startedStatus is a child status with startTime set and the given node counts.
func startedStatus(desired, active, succeeded, failed int32) appsv1beta1.ImagePullJobStatus {
	return appsv1beta1.ImagePullJobStatus{
		StartTime: &metav1.Time{Time: t0}, Desired: desired, Active: active, Succeeded: succeeded, Failed: failed,
	}
}

// hasEvent reports whether events holds one starting with prefix ("Normal SuccessfulCreate").
func hasEvent(events []string, prefix string) bool {
	return slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, prefix) })
}
