package pod

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	policylisters "github.com/bosun-dev/client-go/listers/policy/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	kubefake "k8s.io/client-go/kubernetes/fake"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/budget"
	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/budget/budgettest"
	"github.com/bosun-dev/bosun/pkg/controller/workload"
	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/webhook"
)

const ns = "ns"

// now is the fake clock's time; whole seconds, as status timestamps are.
var now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// fixture is the webhooks over a fake cluster: listers filled by hand, a budget server that
// checks resourceVersions, a fake clock and a recorder.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	server   *budgettest.Server
	pods     cache.Indexer
	budgets  cache.Indexer
	recorder *recorder
	handler  *handler
	regs     map[string]func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse
}

type fixtureOptions struct {
	gates  map[featuregate.Feature]bool
	cached []runtime.Object // ReplicaSets and Deployments for the workload finder
	live   []runtime.Object // pods the API server has and the pod cache has not seen yet
	// shareMutating are mutations of other controllers that register the mutating webhook
	// before the budget's tagging joins it.
	shareMutating []Mutation
}

func newFixture(t *testing.T, opts fixtureOptions, objects ...runtime.Object) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	gate := features.NewFeatureGate()
	for name, on := range opts.gates {
		if err := gate.SetFromMap(map[string]bool{string(name): on}); err != nil {
			t.Fatal(err)
		}
	}
	indexer := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	f := &fixture{t: t, ctx: ctx, server: budgettest.NewServer(), pods: indexer(), budgets: indexer(),
		recorder: &recorder{FakeRecorder: record.NewFakeRecorder(100)}}
	replicaSets, deployments := indexer(), indexer()
	for _, obj := range opts.cached {
		switch obj.(type) {
		case *appsv1.ReplicaSet:
			mustAdd(t, replicaSets, obj)
		case *appsv1.Deployment:
			mustAdd(t, deployments, obj)
		default:
			t.Fatalf("no cache for %T", obj)
		}
	}
	for _, obj := range objects {
		switch o := obj.(type) {
		case *corev1.Pod:
			mustAdd(t, f.pods, o)
		case *policyv1beta1.PodUnavailableBudget:
			f.addBudget(o)
		default:
			t.Fatalf("unexpected %T", obj)
		}
	}
	finder := workload.NewFinder(workload.Listers{
		ReplicaSets: appslisters.NewReplicaSetLister(replicaSets),
		Deployments: appslisters.NewDeploymentLister(deployments),
	}, nil, nil, nil)
	deps := Dependencies{
		Pods:        corelisters.NewPodLister(f.pods),
		LivePods:    kubefake.NewClientset(opts.live...).CoreV1(),
		Budgets:     policylisters.NewPodUnavailableBudgetLister(f.budgets),
		Finder:      finder,
		Client:      f.server,
		Cache:       budget.NewCache(),
		Recorder:    f.recorder,
		FeatureGate: gate,
		Clock:       clocktesting.NewFakePassiveClock(now),
	}
	f.regs = map[string]func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse{}
	var regs []webhook.Registration
	if opts.shareMutating != nil {
		deps.Mutating = NewMutatingWebhook()
		regs = deps.Mutating.Add(opts.shareMutating...)
	}
	for _, reg := range append(regs, Registrations(deps)...) {
		f.regs[reg.Name] = reg.Handler.Handle
	}
	f.handler = newHandler(deps)
	return f
}

func mustAdd(t *testing.T, indexer cache.Indexer, obj any) {
	t.Helper()
	if err := indexer.Add(obj); err != nil {
		t.Fatal(err)
	}
}

// addBudget stores pub on the server and the server's copy in the informer cache.
func (f *fixture) addBudget(pub *policyv1beta1.PodUnavailableBudget) {
	stored := f.server.Put(pub)
	mustAdd(f.t, f.budgets, stored)
}

// budget returns the server's copy of a budget.
func (f *fixture) budget(name string) *policyv1beta1.PodUnavailableBudget {
	f.t.Helper()
	pub := f.server.Budget(ns, name)
	if pub == nil {
		f.t.Fatalf("budget %s is gone", name)
	}
	return pub
}

// validate sends req to the validating webhook it is for; mutate to the mutating one.
func (f *fixture) validate(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	f.t.Helper()
	name := ValidatingName
	if req.SubResource == "eviction" {
		name = ValidatingEvictionName
	}
	if handle, ok := f.regs[name]; ok {
		return handle(f.ctx, req)
	}
	// The webhook is not registered under these gates: call the handler as a stale
	// configuration would.
	return f.handler.validate(f.ctx, req)
}

func (f *fixture) mutate(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	f.t.Helper()
	return f.regs[MutatingName](f.ctx, req)
}

// recorder is a FakeRecorder that also remembers which object each event is about.
type recorder struct {
	*record.FakeRecorder
	mu      sync.Mutex
	objects []string
}

func (r *recorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.mu.Lock()
	if m, ok := object.(metav1.Object); ok {
		r.objects = append(r.objects, m.GetNamespace()+"/"+m.GetName())
	}
	r.mu.Unlock()
	r.FakeRecorder.Eventf(object, eventtype, reason, messageFmt, args...)
}

// events returns the events recorded so far, each "<type> <reason> <message> @<ns>/<name>".
func (f *fixture) events() []string {
	var events []string
	f.recorder.mu.Lock()
	defer f.recorder.mu.Unlock()
	for i := 0; ; i++ {
		select {
		case e := <-f.recorder.Events:
			events = append(events, e+" @"+f.recorder.objects[i])
		default:
			f.recorder.objects = nil
			return events
		}
	}
}

// Objects.

type podOption func(*corev1.Pod)

// readyPod is a running, Ready pod tagged with budget "pub", controlled by ReplicaSet "rs".
func readyPod(name string, opts ...podOption) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, UID: types.UID("uid-" + name),
			Labels:          map[string]string{"app": "web"},
			Annotations:     map[string]string{policyv1beta1.PodRelatedPubAnnotation: "pub", policyv1beta1.PodRelatedPubAnnotationNew: "pub"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "uid-rs", Controller: ptr.To(true)}},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.25"}}},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "nginx:1.25", ImageID: "docker.io/library/nginx@sha256:1"}},
		},
	}
	for _, opt := range opts {
		opt(pod)
	}
	return pod
}

func notReady(pod *corev1.Pod) { pod.Status.Conditions[0].Status = corev1.ConditionFalse }

func untagged(pod *corev1.Pod) { pod.Annotations = nil }

func withLabel(key, value string) podOption {
	return func(pod *corev1.Pod) { pod.Labels[key] = value }
}

func withAnnotation(key, value string) podOption {
	return func(pod *corev1.Pod) {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[key] = value
	}
}

func withoutController(pod *corev1.Pod) { pod.OwnerReferences = nil }

type pubOption func(*policyv1beta1.PodUnavailableBudget)

// newBudget is budget name selecting app=web, with the given status: allowed left of
// desired, current available.
func newBudget(name string, allowed, desired, current int32, opts ...pubOption) *policyv1beta1.PodUnavailableBudget {
	pub := &policyv1beta1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Generation: 1},
		Spec: policyv1beta1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		},
		Status: policyv1beta1.PodUnavailableBudgetStatus{
			ObservedGeneration: 1, UnavailableAllowed: allowed, DesiredAvailable: desired,
			CurrentAvailable: current, TotalReplicas: current,
		},
	}
	for _, opt := range opts {
		opt(pub)
	}
	return pub
}

func pubAnnotation(key, value string) pubOption {
	return func(pub *policyv1beta1.PodUnavailableBudget) {
		if pub.Annotations == nil {
			pub.Annotations = map[string]string{}
		}
		pub.Annotations[key] = value
	}
}

func ignoring(labels map[string]string) pubOption {
	return func(pub *policyv1beta1.PodUnavailableBudget) {
		pub.Spec.IgnoredPodSelector = &metav1.LabelSelector{MatchLabels: labels}
	}
}

func protecting(ops ...policyv1beta1.PubOperation) pubOption {
	return func(pub *policyv1beta1.PodUnavailableBudget) {
		pub.Spec.ProtectOperations = ops
	}
}

func disrupted(pods ...string) pubOption {
	return func(pub *policyv1beta1.PodUnavailableBudget) {
		pub.Status.DisruptedPods = map[string]metav1.Time{}
		for _, p := range pods {
			pub.Status.DisruptedPods[p] = metav1.NewTime(now.Add(-time.Second))
		}
	}
}

// Requests.

func raw(t *testing.T, obj any) runtime.RawExtension {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: data}
}

var podResource = metav1.GroupVersionResource{Version: "v1", Resource: "pods"}

func deleteRequest(t *testing.T, pod *corev1.Pod, user string) *admissionv1.AdmissionRequest {
	return &admissionv1.AdmissionRequest{
		UID: "req", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Resource: podResource,
		Namespace: pod.Namespace, Name: pod.Name, Operation: admissionv1.Delete,
		UserInfo:  authenticationv1.UserInfo{Username: user},
		OldObject: raw(t, pod),
		Options:   raw(t, metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "DeleteOptions"}}),
	}
}

func dryRunDelete(t *testing.T, pod *corev1.Pod, user string) *admissionv1.AdmissionRequest {
	req := deleteRequest(t, pod, user)
	req.DryRun = ptr.To(true)
	req.Options = raw(t, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	return req
}

func evictionRequest(t *testing.T, podName, user string, dryRun bool) *admissionv1.AdmissionRequest {
	eviction := map[string]any{
		"apiVersion": "policy/v1", "kind": "Eviction",
		"metadata": map[string]any{"name": podName, "namespace": ns},
	}
	if dryRun {
		eviction["deleteOptions"] = map[string]any{"dryRun": []string{"All"}}
	}
	return &admissionv1.AdmissionRequest{
		UID: "req", Kind: metav1.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"},
		Resource: podResource, SubResource: "eviction",
		Namespace: ns, Name: podName, Operation: admissionv1.Create,
		UserInfo: authenticationv1.UserInfo{Username: user},
		Object:   raw(t, eviction),
		Options:  raw(t, metav1.CreateOptions{}),
	}
}

func updateRequest(t *testing.T, old, pod *corev1.Pod, user string) *admissionv1.AdmissionRequest {
	return &admissionv1.AdmissionRequest{
		UID: "req", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Resource: podResource,
		Namespace: pod.Namespace, Name: pod.Name, Operation: admissionv1.Update,
		UserInfo: authenticationv1.UserInfo{Username: user},
		Object:   raw(t, pod), OldObject: raw(t, old),
		Options: raw(t, metav1.UpdateOptions{}),
	}
}

func createRequest(t *testing.T, pod *corev1.Pod) *admissionv1.AdmissionRequest {
	return &admissionv1.AdmissionRequest{
		UID: "req", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Resource: podResource,
		Namespace: ns, Name: pod.Name, Operation: admissionv1.Create,
		Object: raw(t, pod),
	}
}

// Answers.

func expectAllowed(t *testing.T, resp *admissionv1.AdmissionResponse) {
	t.Helper()
	if !resp.Allowed {
		t.Fatalf("denied (%d): %s, want allowed", resp.Result.Code, resp.Result.Message)
	}
	if len(resp.Patch) > 0 {
		t.Fatalf("allowed with patch %s, want no patch", resp.Patch)
	}
}

func expectDenied(t *testing.T, resp *admissionv1.AdmissionResponse, code int32, reason metav1.StatusReason, message string) {
	t.Helper()
	if resp.Allowed {
		t.Fatalf("allowed, want denied with %d", code)
	}
	if resp.Result.Code != code || resp.Result.Reason != reason {
		t.Errorf("denied with %d %s, want %d %s", resp.Result.Code, resp.Result.Reason, code, reason)
	}
	if !strings.Contains(resp.Result.Message, message) {
		t.Errorf("message %q, want it to contain %q", resp.Result.Message, message)
	}
}

// noBudgetMessage is the message of a refusal for want of budget.
func noBudgetMessage(pub string) string {
	return fmt.Sprintf(`podunavailablebudget.policy.kruise.io %q is forbidden: pub unavailable allowed is negative`, pub)
}

// denials reads pod_unavailable_budget for a label pair from the served registry.
func denials(t *testing.T, owner, user string) float64 {
	t.Helper()
	values, err := testutil.GetCounterValuesFromGatherer(legacyregistry.DefaultGatherer, "pod_unavailable_budget",
		map[string]string{"kind_namespace_name": owner}, "username")
	if err != nil {
		// Nothing counted yet.
		return 0
	}
	return values[user]
}
