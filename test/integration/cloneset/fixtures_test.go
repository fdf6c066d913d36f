package cloneset

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunclient "github.com/bosun-dev/client-go/clientset/versioned"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/cloneset/clonesetutil"
	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

const (
	// testTimeout bounds one test; waitTimeout one awaited state. Generous: the machine is
	// small and shared, and a healthy run is far quicker.
	testTimeout = 3 * time.Minute
	waitTimeout = time.Minute

	image1 = "registry.example/web:1"
	image2 = "registry.example/web:2"
)

// testEnv is what every test works with: the framework's environment, whose CloneSets,
// pods, claims and revisions, and, for a test that starts a manager, bosun's webhook
// configurations (they fail closed, and nothing answers them once the test's manager
// stopped), are removed when the test ends. Its audit tail starts with the test.
type testEnv struct {
	*framework.Env
	// warnings are the admission warnings the API server returned to alpha and beta.
	warnings *warningRecorder
	alpha    *framework.Objects[*appsv1alpha1.CloneSet]
	beta     *framework.Objects[*appsv1beta1.CloneSet]
}

// setup prepares a test that starts a manager of its own.
func setup(t *testing.T) *testEnv {
	t.Helper()
	return setupWith(t, true)
}

// setupWith prepares a test; removeWebhooks deletes bosun's webhook configurations when it
// ends, which only the test that started the manager may do.
func setupWith(t *testing.T, removeWebhooks bool) *testEnv {
	t.Helper()
	return setupOn(t, framework.SharedControlPlane(t), removeWebhooks, testTimeout)
}

// setupOn is setupWith on control plane cp, for a test bounded by timeout.
func setupOn(t *testing.T, cp *framework.ControlPlane, removeWebhooks bool, timeout time.Duration) *testEnv {
	t.Helper()
	e := framework.NewTestEnv(t, cp, framework.EnvOptions{
		Timeout: timeout, WaitTimeout: waitTimeout, RemoveWebhookConfigurations: removeWebhooks, Audit: true,
		Remove: []string{"clonesets.apps.kruise.io", "imagepulljobs.apps.kruise.io", "pods", "persistentvolumeclaims",
			"controllerrevisions.apps"},
		PodDetails: podDetails,
	})
	warnings := &warningRecorder{}
	config := e.CP.Config()
	config.WarningHandler = warnings
	client := bosunclient.NewForConfigOrDie(config)
	return &testEnv{
		Env:      e,
		warnings: warnings,
		alpha:    framework.NewObjects(e, "CloneSet", e.Namespace, client.AppsV1alpha1().CloneSets(e.Namespace)),
		beta:     framework.NewObjects(e, "CloneSet", e.Namespace, client.AppsV1beta1().CloneSets(e.Namespace)),
	}
}

// startManager runs bosun-controller-manager with the cloneset controller, whose entry
// brings the CloneSet's admission webhooks (served while the API server serves v1beta1
// CloneSets through bosun's CRD), until the test ends, and returns once the API server calls
// both CloneSet webhooks. The manager runs as a standby: a Lease another replica holds keeps
// it from leading, so the controller never touches the tests' CloneSets and pods, while
// the webhooks answer, as they do on every replica.
func (e *testEnv) startManager(t *testing.T) {
	t.Helper()
	const lease = "cloneset-admission-standby"
	now := metav1.NewMicroTime(time.Now())
	_, err := e.Client.CoordinationV1().Leases(e.Namespace).Create(e.Ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: lease},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("another-replica"), LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime: &now, RenewTime: &now,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the Lease that keeps the manager a standby: %v", err)
	}
	probe := newAlpha("admission-probe")
	send := func(ctx context.Context) {
		_, _ = e.Bosun.AppsV1alpha1().CloneSets(e.Namespace).Create(ctx, probe, framework.DryRunCreate)
	}
	framework.StartBosunControllerManagerWithWebhooks(e.Ctx, t, e.CP,
		framework.ControllerManagerOptions{Controllers: "cloneset", ExtraArgs: []string{
			"--leader-elect=true", "--leader-elect-resource-namespace=" + e.Namespace, "--leader-elect-resource-name=" + lease,
		}},
		framework.WebhookProbe{Webhook: "mcloneset.kb.io", Send: send},
		framework.WebhookProbe{Webhook: "vcloneset.kb.io", Send: send},
	)
}

// newAlpha is a v1alpha1 CloneSet as a user writes it: a selector app=<name> and a
// template of one container running image1; nothing else.
func newAlpha(name string) *appsv1alpha1.CloneSet {
	labels := map[string]string{"app": name}
	return &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.CloneSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image1}}},
			},
		},
	}
}

// newBeta is newAlpha as a v1beta1 client writes it.
func newBeta(name string) *appsv1beta1.CloneSet {
	labels := map[string]string{"app": name}
	return &appsv1beta1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.CloneSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image1}}},
			},
		},
	}
}

// warningRecorder keeps the warnings the API server returns with its answers.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

// HandleWarningHeader implements rest.WarningHandler.
func (r *warningRecorder) HandleWarningHeader(code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, text)
}

// take returns the warnings received since the last call.
func (r *warningRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.warnings
	r.warnings = nil
	return w
}

// ---- The controller ----

// controllersUnderTest are the --controllers of the manager the controller's tests run:
// the CloneSet controller, and the pod-readiness controller, whose entry brings the pod
// webhook's KruisePodReady readiness gate for CloneSet pods and which turns that condition
// True.
const controllersUnderTest = "cloneset,podreadiness"

// featureGatesUnderTest are the --feature-gates of that manager: image pre-download, which
// only the PreDownload scenario's CloneSet is large enough for and updated in place in
// batches (the other scenarios' new revisions are merely labelled ignored), as OpenKruise's
// own CI runs its CloneSet specs with it on.
const featureGatesUnderTest = "PreDownloadImageForInPlaceUpdate=true"

// startController runs bosun-controller-manager leading, with controllersUnderTest and their
// webhooks (the CloneSet's, and the mutating pod webhook) and featureGatesUnderTest, until
// the test ends, and returns once the API server calls all three webhooks. The manager
// acts on every namespace: the tests that share it run in namespaces of their own, as
// subtests of the test that started it (see TestController).
func (e *testEnv) startController(t *testing.T) *framework.ControllerManager {
	t.Helper()
	return e.startControllerWith(t, framework.ControllerManagerOptions{
		Controllers: controllersUnderTest, FeatureGates: featureGatesUnderTest, Verbosity: 4,
	})
}

// startControllerWith is startController with the manager's options opts.
func (e *testEnv) startControllerWith(t *testing.T, opts framework.ControllerManagerOptions) *framework.ControllerManager {
	t.Helper()
	probe := newAlpha("admission-probe")
	sendCloneSet := func(ctx context.Context) {
		_, _ = e.Bosun.AppsV1alpha1().CloneSets(e.Namespace).Create(ctx, probe, framework.DryRunCreate)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "admission-probe"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image1}}},
	}
	sendPod := func(ctx context.Context) {
		_, _ = e.Client.CoreV1().Pods(e.Namespace).Create(ctx, pod, framework.DryRunCreate)
	}
	return framework.StartBosunControllerManagerWithWebhooks(e.Ctx, t, e.CP, opts,
		framework.WebhookProbe{Webhook: "mcloneset.kb.io", Send: sendCloneSet},
		framework.WebhookProbe{Webhook: "vcloneset.kb.io", Send: sendCloneSet},
		framework.WebhookProbe{Webhook: "mpod.kb.io", Send: sendPod},
	)
}

// setupScenario prepares a subtest that works with the manager its parent started: it
// leaves the webhook configurations to the parent, and if it fails it shows what the manager
// logged about its namespace.
func setupScenario(t *testing.T, manager *framework.ControllerManager) *testEnv {
	t.Helper()
	e := setupWith(t, false)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		log, err := manager.Log()
		if err != nil {
			t.Log(err)
			return
		}
		var lines []string
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, e.Namespace) {
				lines = append(lines, line)
			}
		}
		t.Logf("what %s logged about namespace %s (last %d of %d lines):\n%s", manager.Name(), e.Namespace,
			min(len(lines), managerLogLines), len(lines), strings.Join(lines[max(len(lines)-managerLogLines, 0):], "\n"))
	})
	return e
}

// managerLogLines is how many of the manager's lines about its namespace a failed test shows.
const managerLogLines = 120

// ---- Builders ----

// newCloneSet is newBeta with replicas pods.
func newCloneSet(name string, replicas int32) *appsv1beta1.CloneSet {
	cs := newBeta(name)
	cs.Spec.Replicas = ptr.To(replicas)
	return cs
}

// rolling returns the rolling update parameters of a v1beta1 CloneSet, made non-nil.
func rolling(cs *appsv1beta1.CloneSet) *appsv1beta1.RollingUpdateCloneSetStrategy {
	if cs.Spec.UpdateStrategy.RollingUpdate == nil {
		cs.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateCloneSetStrategy{}
	}
	return cs.Spec.UpdateStrategy.RollingUpdate
}

func intOrStr(v int32) *intstr.IntOrString { return ptr.To(intstr.FromInt32(v)) }

func percent(v string) *intstr.IntOrString { return ptr.To(intstr.FromString(v)) }

// ---- Reading pods ----

func lifecycleState(pod *corev1.Pod) appsv1beta1.LifecycleStateType {
	return appsv1beta1.LifecycleStateType(pod.Labels[appsv1beta1.LifecycleStateKey])
}

func revisionOf(pod *corev1.Pod) string {
	return pod.Labels[appsv1beta1.ControllerRevisionHashLabelKey]
}

func podCondition(pod *corev1.Pod, condType corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == condType {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func conditionTrue(pod *corev1.Pod, condType corev1.PodConditionType) bool {
	c := podCondition(pod, condType)
	return c != nil && c.Status == corev1.ConditionTrue
}

// available reports whether the CloneSet counts pod available now (minReadySeconds 0).
func available(pod *corev1.Pod) bool {
	return podutil.IsPodActive(pod) && clonesetutil.IsAvailable(pod, 0, metav1.Now())
}

func controlledBy(pod *corev1.Pod, uid types.UID) bool {
	ref := metav1.GetControllerOf(pod)
	return ref != nil && ref.UID == uid
}

// activePods returns the active pods of pods (neither finished nor being deleted) that the
// object with uid controls.
func activePods(pods []corev1.Pod, uid types.UID) []*corev1.Pod {
	ptrs := make([]*corev1.Pod, len(pods))
	for i := range pods {
		ptrs[i] = &pods[i]
	}
	return ownActive(ptrs, uid)
}

// ownActive is activePods for pointers.
func ownActive(pods []*corev1.Pod, uid types.UID) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range pods {
		if podutil.IsPodActive(pod) && controlledBy(pod, uid) {
			out = append(out, pod)
		}
	}
	return out
}

func podNames(pods []*corev1.Pod) []string {
	names := make([]string, 0, len(pods))
	for _, pod := range pods {
		names = append(names, pod.Name)
	}
	slices.Sort(names)
	return names
}

func countPods(pods []*corev1.Pod, match func(*corev1.Pod) bool) int {
	n := 0
	for _, pod := range pods {
		if match(pod) {
			n++
		}
	}
	return n
}

// podDetails is what failure messages say of a CloneSet's pod beyond what every pod has.
func podDetails(pod *corev1.Pod) string {
	var conds []string
	for _, c := range pod.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s", c.Type, c.Status))
	}
	return fmt.Sprintf("state %q, revision %q, image %q, conditions %v", lifecycleState(pod), revisionOf(pod),
		pod.Spec.Containers[0].Image, conds)
}

// ---- Reading CloneSets ----

// cloneSets are the namespace's CloneSets in v1beta1, shown by csString when a wait fails.
func (e *testEnv) cloneSets() *framework.Objects[*appsv1beta1.CloneSet] {
	return e.beta.DescribedBy(csString)
}

func csString(cs *appsv1beta1.CloneSet) string {
	if cs == nil {
		return "<none>"
	}
	spec, _ := json.Marshal(map[string]any{"replicas": cs.Spec.Replicas, "scaleStrategy": cs.Spec.ScaleStrategy, "updateStrategy": cs.Spec.UpdateStrategy})
	status, _ := json.Marshal(cs.Status)
	return fmt.Sprintf("generation %d, spec %s, status %s", cs.Generation, spec, status)
}

func progressing(cs *appsv1beta1.CloneSet) *appsv1beta1.CloneSetCondition {
	for i := range cs.Status.Conditions {
		if cs.Status.Conditions[i].Type == appsv1beta1.CloneSetConditionTypeProgressing {
			return &cs.Status.Conditions[i]
		}
	}
	return nil
}

// ---- Waiting ----

// waitForPods waits until cond holds for the active pods of the CloneSet, sorted by name,
// and returns them.
func (e *testEnv) waitForPods(t *testing.T, cs *appsv1beta1.CloneSet, what string, cond func([]*corev1.Pod) bool) []*corev1.Pod {
	t.Helper()
	pods := e.WaitForPods(t, fmt.Sprintf("pods of CloneSet %s: %s", cs.Name, what), func(pods []corev1.Pod) bool {
		return cond(activePods(pods, cs.UID))
	})
	return activePods(pods, cs.UID)
}

// waitForSettled waits until the CloneSet's status reports, for its current generation,
// every one of its replicas updated and available at the update revision, which is the
// current one, and no other pod; it returns the CloneSet and its pods.
func (e *testEnv) waitForSettled(t *testing.T, name string) (*appsv1beta1.CloneSet, []*corev1.Pod) {
	t.Helper()
	cs := e.cloneSets().WaitFor(t, name, "every replica updated and available", func(cs *appsv1beta1.CloneSet) bool {
		s, n := cs.Status, ptr.Deref(cs.Spec.Replicas, 1)
		return s.ObservedGeneration == cs.Generation && s.UpdateRevision != "" && s.CurrentRevision == s.UpdateRevision &&
			s.Replicas == n && s.UpdatedReplicas == n && s.AvailableReplicas == n && s.UpdatedAvailableReplicas == n
	})
	pods := e.waitForPods(t, cs, fmt.Sprintf("%d available at %s", ptr.Deref(cs.Spec.Replicas, 1), cs.Status.UpdateRevision), func(pods []*corev1.Pod) bool {
		return len(pods) == int(ptr.Deref(cs.Spec.Replicas, 1)) &&
			countPods(pods, func(p *corev1.Pod) bool { return available(p) && revisionOf(p) == cs.Status.UpdateRevision }) == len(pods)
	})
	return cs, pods
}

// waitForNewRevision waits until the CloneSet's status names an update revision other than
// old for its current generation, and returns the CloneSet.
func (e *testEnv) waitForNewRevision(t *testing.T, name, old string) *appsv1beta1.CloneSet {
	t.Helper()
	return e.cloneSets().WaitFor(t, name, "an update revision other than "+old, func(cs *appsv1beta1.CloneSet) bool {
		return cs.Status.ObservedGeneration == cs.Generation && cs.Status.UpdateRevision != "" && cs.Status.UpdateRevision != old
	})
}

// settle waits until nothing has written to the namespace for idlePeriod: by then the
// controller has done all it was going to. Tests call it before checking that something
// did not happen.
func (e *testEnv) settle(t *testing.T) {
	t.Helper()
	e.WaitForNoWrites(t, idlePeriod)
}

// idlePeriod is how long the namespace must see no write before a test takes it as settled.
const idlePeriod = 2 * time.Second

// ---- Writing ----

// setImage changes the image of the CloneSet's container: a new revision.
func (e *testEnv) setImage(t *testing.T, name, image string) *appsv1beta1.CloneSet {
	t.Helper()
	return e.cloneSets().Update(t, name, func(cs *appsv1beta1.CloneSet) { cs.Spec.Template.Spec.Containers[0].Image = image })
}

func (e *testEnv) scale(t *testing.T, name string, replicas int32) *appsv1beta1.CloneSet {
	t.Helper()
	return e.cloneSets().Update(t, name, func(cs *appsv1beta1.CloneSet) { cs.Spec.Replicas = ptr.To(replicas) })
}

// patchPod applies a strategic merge patch to a pod.
func (e *testEnv) patchPod(t *testing.T, name, patch string) *corev1.Pod {
	t.Helper()
	pod, err := e.Client.CoreV1().Pods(e.Namespace).Patch(e.Ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patching pod %s with %s: %v", name, patch, err)
	}
	return pod
}

// csEvents returns the events of reason recorded on the CloneSet.
func (e *testEnv) csEvents(t *testing.T, name, reason string) []corev1.Event {
	t.Helper()
	return slices.DeleteFunc(e.GetEvents(t, e.Namespace, "CloneSet", name), func(ev corev1.Event) bool { return ev.Reason != reason })
}

// ---- Observing every change (for "never more than N" properties) ----

// observePods calls onChange with all pods of the namespace known after each add, update
// and delete, in the order the API server made them, until the test ends. It returns once
// the informer has synced, after one call with the pods that existed then.
func (e *testEnv) observePods(t *testing.T, onChange func(pods []*corev1.Pod)) {
	t.Helper()
	var mu sync.Mutex
	live := false
	known := map[types.UID]*corev1.Pod{}
	notify := func() {
		if !live {
			return
		}
		pods := make([]*corev1.Pod, 0, len(known))
		for _, pod := range known {
			pods = append(pods, pod)
		}
		onChange(pods)
	}
	set := func(obj any) {
		if pod, ok := obj.(*corev1.Pod); ok {
			mu.Lock()
			defer mu.Unlock()
			known[pod.UID] = pod
			notify()
		}
	}
	e.RunPodInformer(t, cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				mu.Lock()
				defer mu.Unlock()
				delete(known, pod.UID)
				notify()
			}
		},
	})
	mu.Lock()
	defer mu.Unlock()
	live = true
	notify()
}

// observeCloneSet calls onChange with every version of the CloneSet the API server writes
// from now until the test ends, in order.
func (e *testEnv) observeCloneSet(t *testing.T, name string, onChange func(*appsv1beta1.CloneSet)) {
	t.Helper()
	field := "metadata.name=" + name
	client := e.Bosun.AppsV1beta1().CloneSets(e.Namespace)
	lw := &cache.ListWatch{
		ListFunc: func(opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = field
			return client.List(e.Ctx, opts)
		},
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = field
			return client.Watch(e.Ctx, opts)
		},
	}
	var mu sync.Mutex
	seen := func(obj any) {
		if cs, ok := obj.(*appsv1beta1.CloneSet); ok {
			mu.Lock()
			defer mu.Unlock()
			onChange(cs)
		}
	}
	framework.RunInformer(t, cache.NewSharedIndexInformer(lw, &appsv1beta1.CloneSet{}, 0, cache.Indexers{}), cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, obj any) { seen(obj) },
	})
}

// extremeRecorder keeps the smallest (or largest) value it was given and what went with
// it, safely across goroutines.
type extremeRecorder struct {
	mu       sync.Mutex
	set      bool
	value    int
	note     string
	smallest bool
}

func (r *extremeRecorder) record(v int, note func() string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.set || (r.smallest && v < r.value) || (!r.smallest && v > r.value) {
		r.set, r.value, r.note = true, v, note()
	}
}

func (r *extremeRecorder) get() (int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.value, r.note
}

func describePodPtrs(pods []*corev1.Pod) string {
	list := make([]corev1.Pod, 0, len(pods))
	for _, p := range pods {
		list = append(list, *p)
	}
	slices.SortFunc(list, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return framework.DescribePodsWith(list, podDetails)
}
