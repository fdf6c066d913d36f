package containermeta

import (
	"context"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	kubetesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
	"github.com/bosun-dev/bosun/pkg/daemon/cri"
	"github.com/bosun-dev/bosun/pkg/daemon/cri/crifake"
	"github.com/bosun-dev/bosun/pkg/features"
)

const (
	testNamespace = "ns"
	testPod       = "web-abcde"
	testPodUID    = "pod-uid-1"
	testNode      = "node-a"
	podQueueKey   = testNamespace + "/" + testPod
)

// t0 is the fake clock's start time.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fixture is the controller on a hand-filled pod cache, a fake clientset holding the same
// pod and a fake CRI runtime running its containers: app, whose env TEST_ENV reads label
// test-env, and side, whose env reads no metadata.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	client   *kubefake.Clientset
	pods     cache.Indexer
	runtime  *crifake.Runtime
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	queue    *queuetest.Recorder
	c        *Controller
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWithGate(t, features.NewFeatureGate())
}

func newFixtureWithGate(t *testing.T, gate featuregate.FeatureGate) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	clk := clocktesting.NewFakeClock(t0)

	fake := crifake.Start(t, filepath.Join(crifake.ShortTempDir(t), "containerd.sock"))
	fake.SetContainerClock(clk)
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

	client := kubefake.NewClientset()
	bumpResourceVersions(client)
	podInformer := informers.NewSharedInformerFactory(client, 0).Core().V1().Pods()
	recorder := record.NewFakeRecorder(100)
	q, wrapQueue := queuetest.Wrapping()
	c, err := NewController(ctx, podInformer, monitor, client, recorder, options.WithClock(clk), options.WithFeatureGate(gate), wrapQueue)
	if err != nil {
		t.Fatalf("NewController: %v", err)
	}
	t.Cleanup(q.ShutDown)
	return &fixture{t: t, ctx: ctx, client: client, pods: podInformer.Informer().GetIndexer(), runtime: fake, clock: clk, recorder: recorder, queue: q, c: c}
}

// bumpResourceVersions makes the fake API server give every pod it writes a new, higher
// resource version, as a real one does (the fake's tracker keeps what it is given).
func bumpResourceVersions(client *kubefake.Clientset) {
	var version atomic.Int64
	react := kubetesting.ObjectReaction(client.Tracker())
	client.PrependReactor("*", "pods", func(action kubetesting.Action) (bool, runtime.Object, error) {
		switch action.GetVerb() {
		case "create", "update", "patch":
		default:
			return false, nil, nil
		}
		handled, obj, err := react(action)
		pod, ok := obj.(*corev1.Pod)
		if err != nil || !ok {
			return handled, obj, err
		}
		pod = pod.DeepCopy()
		pod.ResourceVersion = strconv.FormatInt(version.Add(1), 10)
		if err := client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), pod, pod.Namespace); err != nil {
			return true, nil, err
		}
		return true, pod, nil
	})
}

// clonePod is the test pod as a CloneSet creates it, with label test-env=foo, before the
// kubelet reports on it.
func clonePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: testNamespace, Name: testPod, UID: testPodUID,
			Labels: map[string]string{"app": "web", "test-env": "foo"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "cs-uid", Controller: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			NodeName:                      testNode,
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			ReadinessGates:                []corev1.PodReadinessGate{{ConditionType: appsv1beta1.InPlaceUpdateReady}},
			Containers: []corev1.Container{
				{Name: "app", Image: "app:v1", Env: []corev1.EnvVar{
					{Name: "TEST_ENV", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['test-env']"}}},
				}},
				{Name: "side", Image: "side:v1"},
			},
		},
	}
}

// start creates pod in the API server and the cache, starts its containers in the runtime
// (app's env from the pod's labels, the kubelet's hashes on both) and writes their
// statuses, as the kubelet would. It returns the pod as written.
func (f *fixture) start(pod *corev1.Pod) *corev1.Pod {
	f.t.Helper()
	names := make([]string, 0, len(pod.Spec.Containers))
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	f.runtime.AddPod(crifake.Pod{UID: string(pod.UID), Namespace: pod.Namespace, Name: pod.Name, Containers: names})
	for i := range pod.Spec.Containers {
		f.kubeletStarted(pod, &pod.Spec.Containers[i])
	}
	created, err := f.client.CoreV1().Pods(pod.Namespace).Create(f.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	f.setStatuses(created)
	return f.get()
}

// kubeletStarted records on the current runtime container of c what the kubelet gives a
// container it starts: its hash annotation and the env c reads from pod's labels.
func (f *fixture) kubeletStarted(pod *corev1.Pod, c *corev1.Container) {
	f.runtime.SetContainerAnnotation(string(pod.UID), c.Name, cri.ContainerHashAnnotation, strconv.FormatUint(kruisepod.ContainerHash(c), 16))
	env := []string{"PATH=/usr/bin"}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env = append(env, e.Name+"="+pod.Labels["test-env"])
		}
	}
	f.runtime.SetContainerEnv(string(pod.UID), c.Name, env)
}

// setStatuses writes the statuses of the pod's current runtime containers, running, as the
// kubelet does, and refreshes the cache.
func (f *fixture) setStatuses(pod *corev1.Pod) {
	f.t.Helper()
	pod = pod.DeepCopy()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		info, ok := f.runtime.Container(string(pod.UID), c.Name)
		if !ok {
			f.t.Fatalf("no runtime container %s", c.Name)
		}
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "sha-" + c.Image, ContainerID: crifake.KubeContainerID(info.ID),
			RestartCount: info.RestartCount, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(info.StartedAt)}},
		})
	}
	if _, err := f.client.CoreV1().Pods(pod.Namespace).UpdateStatus(f.ctx, pod, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.refresh()
}

// update writes pod (as a controller would) and refreshes the cache.
func (f *fixture) update(pod *corev1.Pod) {
	f.t.Helper()
	if _, err := f.client.CoreV1().Pods(pod.Namespace).Update(f.ctx, pod, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.client.CoreV1().Pods(pod.Namespace).UpdateStatus(f.ctx, pod, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.refresh()
}

// refresh copies the pod from the fake API server into the cache, as the informer would.
func (f *fixture) refresh() {
	f.t.Helper()
	pod, err := f.client.CoreV1().Pods(testNamespace).Get(f.ctx, testPod, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.pods.Update(pod); err != nil {
		f.t.Fatal(err)
	}
}

// get returns the pod as the fake API server holds it.
func (f *fixture) get() *corev1.Pod {
	f.t.Helper()
	pod, err := f.client.CoreV1().Pods(testNamespace).Get(f.ctx, testPod, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return pod
}

// sync runs one sync of the test pod and lets the cache catch up with its writes.
func (f *fixture) sync() {
	f.t.Helper()
	if err := f.c.syncPod(f.ctx, podQueueKey); err != nil {
		f.t.Fatalf("syncPod: %v", err)
	}
	f.refresh()
}

// report returns the report on the pod as the fake API server holds it.
func (f *fixture) report() *kruisepod.RuntimeContainerMetaSet {
	f.t.Helper()
	set, err := kruisepod.ReadRuntimeContainerMeta(f.get())
	if err != nil {
		f.t.Fatal(err)
	}
	return set
}

// reportWrites counts the patches of the pod's status the agent made.
func (f *fixture) reportWrites() int {
	n := 0
	for _, action := range f.client.Actions() {
		if action.GetVerb() == "patch" && action.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

// stops returns the containers stopped so far with their grace, as "id/grace".
func (f *fixture) stops() []string {
	var out []string
	for _, call := range f.runtime.StopCalls() {
		out = append(out, call.ContainerID+"/"+time.Duration(call.Timeout*int64(time.Second)).String())
	}
	return out
}

// execs counts the ExecSync calls the runtime received.
func (f *fixture) execs() int {
	n := 0
	for _, call := range f.runtime.ContainerCalls() {
		if call.Method == "ExecSync" {
			n++
		}
	}
	return n
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

// containerID is the ID pod status shows for the current runtime container called name.
func (f *fixture) containerID(name string) string {
	info, _ := f.runtime.Container(testPodUID, name)
	return crifake.KubeContainerID(info.ID)
}
