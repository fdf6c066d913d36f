package imagepulljob

import (
	"context"
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	bosunfake "github.com/bosun-dev/client-go/clientset/versioned/fake"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
)

const (
	testNamespace    = "ns"
	secretsNamespace = appsv1beta1.DefaultImagePullSecretNamespace
)

// t0 is the fake clock's start time.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fixture is a controller over fake clientsets whose informer caches the test fills: add
// puts objects into both, observe copies what the controller wrote into the caches, as the
// watches would.
type fixture struct {
	t           *testing.T
	ctx         context.Context
	kubeClient  *fake.Clientset
	bosunClient *bosunfake.Clientset
	clock       *clocktesting.FakeClock
	queue       *queuetest.Recorder
	c           *Controller

	jobs, nodeImages, pods, secrets, namespaces cache.Indexer
}

func newFixture(t *testing.T, objects ...runtime.Object) *fixture {
	t.Helper()
	return newFixtureWithClient(t, nil, objects...)
}

// newFixtureWithClient is newFixture with the controller writing through
// wrapClient(the fake bosun clientset) instead of the clientset itself; nil leaves it
// alone. The fixture's bosunClient stays the fake clientset.
func newFixtureWithClient(t *testing.T, wrapClient func(bosunclientset.Interface) bosunclientset.Interface, objects ...runtime.Object) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	kubeClient := fake.NewClientset()
	bosunClient := bosunfake.NewSimpleClientset()
	factory := informers.NewSharedInformerFactory(kubeClient, 0)
	bosunFactory := bosuninformers.NewSharedInformerFactory(bosunClient, 0)
	jobs := bosunFactory.Apps().V1beta1().ImagePullJobs()
	nodeImages := bosunFactory.Apps().V1beta1().NodeImages()
	pods := factory.Core().V1().Pods()
	secrets := factory.Core().V1().Secrets()
	namespaces := factory.Core().V1().Namespaces()
	clk := clocktesting.NewFakeClock(t0)
	var controllerClient bosunclientset.Interface = bosunClient
	if wrapClient != nil {
		controllerClient = wrapClient(bosunClient)
	}
	q, wrapQueue := queuetest.Wrapping()
	c, err := NewController(ctx, jobs, nodeImages, pods, secrets, namespaces, kubeClient, controllerClient, secretsNamespace,
		options.WithClock(clk), wrapQueue)
	if err != nil {
		t.Fatalf("NewController: %v", err)
	}
	t.Cleanup(q.ShutDown)
	f := &fixture{
		t: t, ctx: ctx, kubeClient: kubeClient, bosunClient: bosunClient, clock: clk, queue: q, c: c,
		jobs: jobs.Informer().GetIndexer(), nodeImages: nodeImages.Informer().GetIndexer(),
		pods: pods.Informer().GetIndexer(), secrets: secrets.Informer().GetIndexer(),
		namespaces: namespaces.Informer().GetIndexer(),
	}
	f.add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secretsNamespace}})
	for _, obj := range objects {
		f.add(obj)
	}
	return f
}

// add creates obj in its clientset and puts it into its cache.
func (f *fixture) add(obj runtime.Object) {
	f.t.Helper()
	var err error
	switch o := obj.(type) {
	case *appsv1beta1.ImagePullJob:
		err = f.bosunClient.Tracker().Add(o)
	case *appsv1beta1.NodeImage:
		err = f.bosunClient.Tracker().Add(o)
	default:
		err = f.kubeClient.Tracker().Add(o)
	}
	if err != nil {
		f.t.Fatalf("adding %T: %v", obj, err)
	}
	f.observe()
}

// observe makes the caches show what the clientsets hold.
func (f *fixture) observe() {
	f.t.Helper()
	ctx := f.ctx
	jobs, err := f.bosunClient.AppsV1beta1().ImagePullJobs("").List(ctx, metav1.ListOptions{})
	f.must(err)
	nis, err := f.bosunClient.AppsV1beta1().NodeImages().List(ctx, metav1.ListOptions{})
	f.must(err)
	pods, err := f.kubeClient.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	f.must(err)
	secrets, err := f.kubeClient.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	f.must(err)
	namespaces, err := f.kubeClient.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	f.must(err)
	var jobObjs, niObjs, podObjs, secretObjs, nsObjs []any
	for i := range jobs.Items {
		jobObjs = append(jobObjs, &jobs.Items[i])
	}
	for i := range nis.Items {
		niObjs = append(niObjs, &nis.Items[i])
	}
	for i := range pods.Items {
		podObjs = append(podObjs, &pods.Items[i])
	}
	for i := range secrets.Items {
		secretObjs = append(secretObjs, &secrets.Items[i])
	}
	for i := range namespaces.Items {
		nsObjs = append(nsObjs, &namespaces.Items[i])
	}
	f.must(f.jobs.Replace(jobObjs, ""))
	f.must(f.nodeImages.Replace(niObjs, ""))
	f.must(f.pods.Replace(podObjs, ""))
	f.must(f.secrets.Replace(secretObjs, ""))
	f.must(f.namespaces.Replace(nsObjs, ""))
}

func (f *fixture) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

// sync runs one sync of the job, then lets the caches observe its writes.
func (f *fixture) sync(name string) {
	f.t.Helper()
	if err := f.c.syncJob(f.ctx, testNamespace+"/"+name); err != nil {
		f.t.Fatalf("sync %s: %v", name, err)
	}
	f.observe()
}

func (f *fixture) job(name string) *appsv1beta1.ImagePullJob {
	f.t.Helper()
	job, err := f.bosunClient.AppsV1beta1().ImagePullJobs(testNamespace).Get(f.ctx, name, metav1.GetOptions{})
	f.must(err)
	return job
}

func (f *fixture) jobGone(name string) bool {
	_, err := f.bosunClient.AppsV1beta1().ImagePullJobs(testNamespace).Get(f.ctx, name, metav1.GetOptions{})
	return apierrors.IsNotFound(err)
}

func (f *fixture) nodeImage(name string) *appsv1beta1.NodeImage {
	f.t.Helper()
	ni, err := f.bosunClient.AppsV1beta1().NodeImages().Get(f.ctx, name, metav1.GetOptions{})
	f.must(err)
	return ni
}

// setTagStatus writes the status of image:tag on a NodeImage as its node agent would.
func (f *fixture) setTagStatus(node, image, tag string, version int64, phase appsv1beta1.ImagePullPhase) {
	f.t.Helper()
	ni := f.nodeImage(node)
	if ni.Status.ImageStatuses == nil {
		ni.Status.ImageStatuses = map[string]appsv1beta1.ImageStatus{}
	}
	st := ni.Status.ImageStatuses[image]
	st.Tags = []appsv1beta1.ImageTagStatus{{Tag: tag, Version: version, Phase: phase}}
	ni.Status.ImageStatuses[image] = st
	_, err := f.bosunClient.AppsV1beta1().NodeImages().UpdateStatus(f.ctx, ni, metav1.UpdateOptions{})
	f.must(err)
	f.observe()
}

// jobTag returns the tag entry of image:tag on a NodeImage, nil when there is none.
func (f *fixture) jobTag(node, image, tag string) *appsv1beta1.ImageTagSpec {
	f.t.Helper()
	return findTag(f.nodeImage(node).Spec.Images[image].Tags, tag)
}

type jobOption func(*appsv1beta1.ImagePullJob)

// newJob is a defaulted job pulling image with the given options.
func newJob(name, image string, opts ...jobOption) *appsv1beta1.ImagePullJob {
	job := &appsv1beta1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: testNamespace, Name: name, UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(t0),
			Finalizers:        []string{appsv1beta1.ImagePullJobProtectionFinalizer},
		},
		Spec: appsv1beta1.ImagePullJobSpec{Image: image},
	}
	appsv1beta1.SetDefaults_ImagePullJob(job)
	for _, opt := range opts {
		opt(job)
	}
	return job
}

func withNever() jobOption {
	return func(j *appsv1beta1.ImagePullJob) { j.Spec.CompletionPolicy.Type = appsv1beta1.Never }
}

func withDeadline(seconds int64) jobOption {
	return func(j *appsv1beta1.ImagePullJob) { j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To(seconds) }
}

func withTTL(seconds int32) jobOption {
	return func(j *appsv1beta1.ImagePullJob) { j.Spec.CompletionPolicy.TTLSecondsAfterFinished = ptr.To(seconds) }
}

func withTimeout(seconds int32) jobOption {
	return func(j *appsv1beta1.ImagePullJob) { j.Spec.PullPolicy.TimeoutSeconds = ptr.To(seconds) }
}

func withPullSecrets(names ...string) jobOption {
	return func(j *appsv1beta1.ImagePullJob) { j.Spec.PullSecrets = names }
}

func newNodeImage(name string, labels map[string]string) *appsv1beta1.NodeImage {
	return &appsv1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, UID: types.UID("ni-" + name)}}
}

func typesUID(s string) types.UID { return types.UID(s) }
