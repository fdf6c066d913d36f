package nodeimage

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunfake "github.com/bosun-dev/client-go/clientset/versioned/fake"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"

	"github.com/bosun-dev/bosun/pkg/controller/nodeimage/nodeimageutil"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
	"github.com/bosun-dev/bosun/pkg/daemon/cri"
	"github.com/bosun-dev/bosun/pkg/daemon/cri/crifake"
)

const (
	testNode             = "node-1"
	testSecretsNamespace = "kruise-daemon-config"
)

// t0 is the fake clock's start time.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fixture is the controller on a hand-filled NodeImage cache, fake clientsets, a fake
// clock and a fake CRI runtime served on a unix socket.
type fixture struct {
	t           *testing.T
	ctx         context.Context
	clock       *clocktesting.FakeClock
	kubeClient  *kubefake.Clientset
	bosunClient *bosunfake.Clientset
	runtime     *crifake.Runtime
	source      *runtimeSource
	recorder    *eventRecorder
	queue       *queuetest.Recorder
	indexer     cache.Indexer
	c           *Controller
}

type fixtureOptions struct {
	maxParallelPulls int
	secrets          []*corev1.Secret
	// puller replaces the CRI puller.
	puller Puller
	// progress follows the CRI puller's pulls.
	progress ProgressWatcher
}

// runtimeSource hands out the runtime connection, as the node agent's monitor does: nil
// while the runtime does not answer.
type runtimeSource struct {
	mu sync.Mutex
	rt *cri.Runtime
}

func (s *runtimeSource) Runtime() *cri.Runtime {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rt
}

func (s *runtimeSource) set(rt *cri.Runtime) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rt = rt
}

func newFixture(t *testing.T, opts fixtureOptions) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)

	fake := crifake.Start(t, filepath.Join(crifake.ShortTempDir(t), "cri.sock"))
	conn, err := grpc.NewClient(fake.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	rt := &cri.Runtime{Endpoint: fake.Endpoint(), Name: crifake.RuntimeName, ImageService: runtimeapi.NewImageServiceClient(conn)}

	var secrets []runtime.Object
	for _, s := range opts.secrets {
		secrets = append(secrets, s)
	}
	kubeClient := kubefake.NewClientset(secrets...)
	bosunClient := bosunfake.NewSimpleClientset()
	factory := bosuninformers.NewSharedInformerFactory(bosunClient, 0)
	informer := factory.Apps().V1beta1().NodeImages()
	clk := clocktesting.NewFakeClock(t0)
	recorder := &eventRecorder{}
	source := &runtimeSource{rt: rt}
	q, wrapQueue := queuetest.Wrapping()
	c, err := NewController(ctx, informer, kubeClient, bosunClient, source, recorder,
		Config{NodeName: testNode, SecretsNamespace: testSecretsNamespace, MaxParallelPulls: opts.maxParallelPulls, Puller: opts.puller,
			Progress: opts.progress},
		options.WithClock(clk), wrapQueue)
	if err != nil {
		t.Fatal(err)
	}
	// Stop every worker before the runtime goes away.
	t.Cleanup(func() {
		cancel()
		c.stopPools()
		c.pulls.Wait()
		q.ShutDown()
		conn.Close()
	})
	return &fixture{
		t: t, ctx: ctx, clock: clk, kubeClient: kubeClient, bosunClient: bosunClient, runtime: fake, source: source,
		recorder: recorder, queue: q, indexer: informer.Informer().GetIndexer(), c: c,
	}
}

// create stores nodeImage in the fake API server and the cache.
func (f *fixture) create(nodeImage *appsv1beta1.NodeImage) {
	f.t.Helper()
	created, err := f.bosunClient.AppsV1beta1().NodeImages().Create(f.ctx, nodeImage, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.indexer.Add(created); err != nil {
		f.t.Fatal(err)
	}
}

// observe copies the API server's NodeImage into the cache, as the informer would.
func (f *fixture) observe() *appsv1beta1.NodeImage {
	f.t.Helper()
	current := f.current()
	if err := f.indexer.Update(current); err != nil {
		f.t.Fatal(err)
	}
	return current
}

// updateSpec changes the NodeImage's spec in the API server and the cache.
func (f *fixture) updateSpec(change func(*appsv1beta1.NodeImageSpec)) {
	f.t.Helper()
	nodeImage := f.current()
	change(&nodeImage.Spec)
	nodeImage.Generation++
	updated, err := f.bosunClient.AppsV1beta1().NodeImages().Update(f.ctx, nodeImage, metav1.UpdateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.indexer.Update(updated); err != nil {
		f.t.Fatal(err)
	}
}

// current reads the NodeImage from the fake API server.
func (f *fixture) current() *appsv1beta1.NodeImage {
	f.t.Helper()
	nodeImage, err := f.bosunClient.AppsV1beta1().NodeImages().Get(f.ctx, testNode, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return nodeImage
}

// sync runs one sync of the node's NodeImage.
func (f *fixture) sync() {
	f.t.Helper()
	if err := f.c.syncHandler(f.ctx, testNode); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
}

// tagStatus returns the status of image:tag in the API server, nil when there is none.
func (f *fixture) tagStatus(image, tag string) *appsv1beta1.ImageTagStatus {
	f.t.Helper()
	return nodeimageutil.FindTagStatus(f.current().Status.ImageStatuses[image].Tags, tag)
}

// eventually waits until cond holds; it fails the test when it never does.
func (f *fixture) eventually(what string, cond func() bool) {
	f.t.Helper()
	if err := wait.PollUntilContextTimeout(f.ctx, 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		f.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// workerFinished tells whether the worker of image:tag has a result.
func (f *fixture) workerFinished(image, tag string) bool {
	pool := f.c.pools[image]
	if pool == nil || pool.workers[tag] == nil {
		return false
	}
	return pool.workers[tag].finished()
}

// waitForResult waits until the worker of image:tag has a result, stepping the fake clock
// by a second whenever a worker sleeps, then syncs.
func (f *fixture) waitForResult(image, tag string) {
	f.t.Helper()
	f.eventually(image+":"+tag+" to finish", func() bool {
		if f.workerFinished(image, tag) {
			return true
		}
		if f.clock.HasWaiters() {
			f.clock.Step(time.Second)
		}
		return false
	})
	f.sync()
}

// statusWrites counts the NodeImage status updates sent to the API server.
func (f *fixture) statusWrites() int {
	n := 0
	for _, action := range f.bosunClient.Actions() {
		if action.GetVerb() == "update" && action.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

// secretActions lists the verbs and namespaces of the requests made for secrets.
func (f *fixture) secretActions() []string {
	var out []string
	for _, action := range f.kubeClient.Actions() {
		if action.GetResource().Resource == "secrets" {
			out = append(out, action.GetVerb()+" "+action.GetNamespace()+"/"+action.(clienttesting.GetAction).GetName())
		}
	}
	return out
}

// Objects.

var jobOwner = corev1.ObjectReference{
	APIVersion: appsv1beta1.SchemeGroupVersion.String(), Kind: "ImagePullJob", Namespace: "default", Name: "job", UID: "job-uid",
}

// newNodeImage returns the node's NodeImage with one image and the given tags.
func newNodeImage(image string, tags ...appsv1beta1.ImageTagSpec) *appsv1beta1.NodeImage {
	return &appsv1beta1.NodeImage{
		ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: types.UID(testNode + "-uid"), Generation: 1},
		Spec: appsv1beta1.NodeImageSpec{Images: map[string]appsv1beta1.ImageSpec{
			image: {Tags: tags},
		}},
	}
}

// newTag returns a tag owned by jobOwner, with backoffLimit and timeoutSeconds set.
func newTag(tag string, policy appsv1beta1.ImagePullPolicy, backoffLimit int32) appsv1beta1.ImageTagSpec {
	return appsv1beta1.ImageTagSpec{
		Tag:             tag,
		CreatedAt:       &metav1.Time{Time: t0},
		ImagePullPolicy: policy,
		OwnerReferences: []corev1.ObjectReference{jobOwner},
		PullPolicy: &appsv1beta1.ImageTagPullPolicy{
			TimeoutSeconds:          ptr.To[int32](3600),
			BackoffLimit:            ptr.To(backoffLimit),
			TTLSecondsAfterFinished: ptr.To[int32](300),
		},
	}
}

// eventRecorder records events with the object they are about.
type eventRecorder struct {
	mu     sync.Mutex
	events []string
}

func (r *eventRecorder) Event(object runtime.Object, eventType, reason, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ref, ok := object.(*corev1.ObjectReference)
	if !ok {
		r.events = append(r.events, fmt.Sprintf("%s %s %T: %s", eventType, reason, object, message))
		return
	}
	r.events = append(r.events, fmt.Sprintf("%s %s %s %s/%s %s: %s", eventType, reason, ref.Kind, ref.Namespace, ref.Name, ref.UID, message))
}

func (r *eventRecorder) Eventf(object runtime.Object, eventType, reason, messageFmt string, args ...any) {
	r.Event(object, eventType, reason, fmt.Sprintf(messageFmt, args...))
}

func (r *eventRecorder) AnnotatedEventf(object runtime.Object, _ map[string]string, eventType, reason, messageFmt string, args ...any) {
	r.Eventf(object, eventType, reason, messageFmt, args...)
}

// take returns the events recorded since the last call.
func (r *eventRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}
