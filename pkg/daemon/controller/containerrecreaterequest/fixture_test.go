package containerrecreaterequest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunfake "github.com/bosun-dev/client-go/clientset/versioned/fake"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"

	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
	"github.com/bosun-dev/bosun/pkg/daemon/controller"
	"github.com/bosun-dev/bosun/pkg/daemon/cri"
	"github.com/bosun-dev/bosun/pkg/daemon/cri/crifake"
)

const (
	testNamespace = "ns"
	testPod       = "web"
	testPodUID    = "pod-uid-1"
	testNode      = "node-a"
	podQueueKey   = testNamespace + "/" + testPod
)

// t0 is the fake clock's start time.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fixture is the controller on a hand-filled request cache, a fake bosun clientset and a
// fake CRI runtime holding the pod's containers.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	client   *bosunfake.Clientset
	requests cache.Indexer
	pods     cache.Indexer
	runtime  *crifake.Runtime
	monitor  *cri.Monitor
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	queue    *queuetest.Recorder
	c        *Controller
	// ids are the pod's containers as AddPod started them, by name.
	ids map[string]string
}

// newFixture builds the controller with a fake runtime holding pod web (UID testPodUID,
// IP 127.0.0.1) and its containers, running.
func newFixture(t *testing.T, containers ...string) *fixture {
	t.Helper()
	return newFixtureWithRuntime(t, nil, containers...)
}

// newFixtureWithRuntime is newFixture with the controller asking runtime, instead of the
// fake runtime's monitor, for its runtime connection; nil means the monitor.
func newFixtureWithRuntime(t *testing.T, runtime controller.RuntimeSource, containers ...string) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	clk := clocktesting.NewFakeClock(t0)

	fake := crifake.Start(t, filepath.Join(crifake.ShortTempDir(t), "containerd.sock"))
	fake.SetContainerClock(clk)
	ids := fake.AddPod(crifake.Pod{UID: testPodUID, Namespace: testNamespace, Name: testPod, IP: "127.0.0.1", Containers: containers})
	monitor, err := cri.NewMonitor(fake.Endpoint(), nil)
	if err != nil {
		t.Fatal(err)
	}
	monitorCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		monitor.Run(monitorCtx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	if _, err := monitor.WaitForRuntime(ctx); err != nil {
		t.Fatal(err)
	}

	client := bosunfake.NewSimpleClientset()
	requestInformer := bosuninformers.NewSharedInformerFactory(client, 0).Apps().V1beta1().ContainerRecreateRequests()
	podInformer := informers.NewSharedInformerFactory(kubefake.NewClientset(), 0).Core().V1().Pods()
	recorder := record.NewFakeRecorder(100)
	if runtime == nil {
		runtime = monitor
	}
	q, wrapQueue := queuetest.Wrapping()
	c, err := NewController(ctx, requestInformer, podInformer, runtime, client, recorder, options.WithClock(clk), wrapQueue)
	if err != nil {
		t.Fatalf("NewController: %v", err)
	}
	t.Cleanup(q.ShutDown)
	return &fixture{
		t: t, ctx: ctx, client: client, requests: requestInformer.Informer().GetIndexer(), pods: podInformer.Informer().GetIndexer(),
		runtime: fake, monitor: monitor, clock: clk, recorder: recorder, queue: q, c: c, ids: ids,
	}
}

// newRequest returns a request for the test pod's containers as admission leaves it: labels,
// default strategy, status contexts of the containers' current instances.
func (f *fixture) newRequest(name string, containers ...string) *appsv1beta1.ContainerRecreateRequest {
	crr := &appsv1beta1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: testNamespace, Name: name, UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(f.clock.Now()),
			Labels: map[string]string{
				appsv1beta1.ContainerRecreateRequestPodUIDKey:   testPodUID,
				appsv1beta1.ContainerRecreateRequestNodeNameKey: testNode,
				appsv1beta1.ContainerRecreateRequestActiveKey:   "true",
			},
		},
		Spec: appsv1beta1.ContainerRecreateRequestSpec{
			PodName: testPod,
			Strategy: &appsv1beta1.ContainerRecreateRequestStrategy{
				FailurePolicy: appsv1beta1.ContainerRecreateRequestFailurePolicyFail, TerminationGracePeriodSeconds: ptr.To[int64](30),
			},
		},
	}
	for _, name := range containers {
		current, ok := f.runtime.Container(testPodUID, name)
		if !ok {
			f.t.Fatalf("the fake runtime has no container %s", name)
		}
		crr.Spec.Containers = append(crr.Spec.Containers, appsv1beta1.ContainerRecreateRequestContainer{
			Name:          name,
			StatusContext: &appsv1beta1.ContainerRecreateRequestContainerContext{ContainerID: crifake.KubeContainerID(current.ID), RestartCount: current.RestartCount},
		})
	}
	return crr
}

// create puts crr into the fake API server and the informer cache.
func (f *fixture) create(crr *appsv1beta1.ContainerRecreateRequest) *appsv1beta1.ContainerRecreateRequest {
	f.t.Helper()
	created, err := f.client.AppsV1beta1().ContainerRecreateRequests(crr.Namespace).Create(f.ctx, crr, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.requests.Add(created); err != nil {
		f.t.Fatal(err)
	}
	return created
}

// refresh copies every request from the fake API server into the informer cache, as the
// informer would after the controller's writes.
func (f *fixture) refresh() {
	f.t.Helper()
	list, err := f.client.AppsV1beta1().ContainerRecreateRequests(metav1.NamespaceAll).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	for i := range list.Items {
		if err := f.requests.Update(&list.Items[i]); err != nil {
			f.t.Fatal(err)
		}
	}
}

// sync runs one sync of the test pod and then lets the cache catch up with its writes.
func (f *fixture) sync() {
	f.t.Helper()
	if err := f.c.syncPod(f.ctx, podQueueKey); err != nil {
		f.t.Fatalf("syncPod: %v", err)
	}
	f.refresh()
}

// syncErr runs one sync and returns its error.
func (f *fixture) syncErr() error {
	f.t.Helper()
	err := f.c.syncPod(f.ctx, podQueueKey)
	f.refresh()
	return err
}

// get returns the request as the fake API server holds it.
func (f *fixture) get(name string) *appsv1beta1.ContainerRecreateRequest {
	f.t.Helper()
	crr, err := f.client.AppsV1beta1().ContainerRecreateRequests(testNamespace).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return crr
}

// update writes crr (as the manager would) into the fake API server and the cache.
func (f *fixture) update(crr *appsv1beta1.ContainerRecreateRequest) {
	f.t.Helper()
	if _, err := f.client.AppsV1beta1().ContainerRecreateRequests(crr.Namespace).Update(f.ctx, crr, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.refresh()
}

// syncStatuses writes the manager's status.containerStatusSnapshot: the current containers
// of names, with readiness ready.
func (f *fixture) syncStatuses(name string, ready bool, containers ...string) {
	f.t.Helper()
	crr := f.get(name)
	crr.Status.ContainerStatusSnapshot = f.snapshot(ready, containers...)
	if _, err := f.client.AppsV1beta1().ContainerRecreateRequests(crr.Namespace).UpdateStatus(f.ctx, crr, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.refresh()
}

// syncStatusesAnnotation writes what a v1alpha1 manager (OpenKruise's) writes instead: the
// annotation crr.apps.kruise.io/sync-container-statuses, and no status field.
func (f *fixture) syncStatusesAnnotation(name string, ready bool, containers ...string) {
	f.t.Helper()
	value, err := json.Marshal(f.snapshot(ready, containers...))
	if err != nil {
		f.t.Fatal(err)
	}
	crr := f.get(name)
	if crr.Annotations == nil {
		crr.Annotations = map[string]string{}
	}
	crr.Annotations[appsv1beta1.ContainerRecreateRequestSyncContainerStatusesKey] = string(value)
	f.update(crr)
}

// snapshot is the pod-side status of the current containers of names, with readiness ready.
func (f *fixture) snapshot(ready bool, containers ...string) []appsv1beta1.ContainerRecreateRequestSyncContainerStatus {
	var list []appsv1beta1.ContainerRecreateRequestSyncContainerStatus
	for _, c := range containers {
		current, _ := f.runtime.Container(testPodUID, c)
		list = append(list, appsv1beta1.ContainerRecreateRequestSyncContainerStatus{
			Name: c, Ready: ready, RestartCount: current.RestartCount, ContainerID: crifake.KubeContainerID(current.ID),
		})
	}
	return list
}

// setConditions writes the request's status.conditions, as the manager does.
func (f *fixture) setConditions(name string, conditions ...metav1.Condition) {
	f.t.Helper()
	crr := f.get(name)
	crr.Status.Conditions = conditions
	if _, err := f.client.AppsV1beta1().ContainerRecreateRequests(crr.Namespace).UpdateStatus(f.ctx, crr, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.refresh()
}

// states returns the request's container states as "name:phase[:killed][:message]".
func (f *fixture) states(name string) []string {
	f.t.Helper()
	var out []string
	for _, s := range f.get(name).Status.ContainerRecreateStates {
		entry := s.Name + ":" + string(s.Phase)
		if s.IsKilled {
			entry += ":killed"
		}
		if s.Message != "" {
			entry += ":" + s.Message
		}
		out = append(out, entry)
	}
	return out
}

func (f *fixture) expectStates(name string, want ...string) {
	f.t.Helper()
	if got := f.states(name); !slices.Equal(got, want) {
		f.t.Errorf("states of %s = %q, want %q", name, got, want)
	}
}

func (f *fixture) expectPhase(name string, want appsv1beta1.ContainerRecreateRequestPhase) {
	f.t.Helper()
	if got := f.get(name).Status.Phase; got != want {
		f.t.Errorf("phase of %s = %q, want %q", name, got, want)
	}
}

// stops returns the containers stopped so far with their grace, as "id/grace".
func (f *fixture) stops() []string {
	var out []string
	for _, call := range f.runtime.StopCalls() {
		out = append(out, call.ContainerID+"/"+time.Duration(call.Timeout*int64(time.Second)).String())
	}
	return out
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

// writes counts the status writes the fake API server received.
func (f *fixture) writes() int {
	n := 0
	for _, action := range f.client.Actions() {
		if action.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

// addPod puts the test pod into the pod cache.
func (f *fixture) addPod() {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: testPod, UID: testPodUID, ResourceVersion: "7"},
		Spec: corev1.PodSpec{NodeName: testNode}}
	if err := f.pods.Add(pod); err != nil {
		f.t.Fatal(err)
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

type criRuntime = cri.Runtime

var errBusy = status.Error(codes.Internal, "device busy")
