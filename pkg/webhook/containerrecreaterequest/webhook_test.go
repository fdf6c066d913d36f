package containerrecreaterequest

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/features"
)

const namespace = "shop"

// runningPod is pod web on node-a with containers app (an exec preStop hook) and sidecar
// (an httpGet preStop hook on a named port), both running.
func runningPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: namespace, UID: "pod-uid-1"},
		Spec: corev1.PodSpec{
			NodeName:                      "node-a",
			TerminationGracePeriodSeconds: ptr.To[int64](45),
			Containers: []corev1.Container{
				{Name: "app", Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
					Exec: &corev1.ExecAction{Command: []string{"drain"}},
				}}, Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}},
				{Name: "sidecar", Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
					HTTPGet: &corev1.HTTPGetAction{Path: "/quit", Port: intstr.FromString("admin")},
				}}, Ports: []corev1.ContainerPort{{Name: "admin", ContainerPort: 9000}}},
				{Name: "idle"},
			},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "app", ContainerID: "containerd://aaa", RestartCount: 2},
				{Name: "sidecar", ContainerID: "containerd://bbb"},
				{Name: "idle"},
			},
		},
	}
}

func node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// fixture is the webhook with its caches and a fake API server behind them.
type fixture struct {
	pods   cache.Indexer
	nodes  cache.Indexer
	client *fake.Clientset
	gates  map[string]bool
	// version is the API version requests are made in; v1alpha1 when empty.
	version string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return &fixture{
		pods:   cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		nodes:  cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		client: fake.NewClientset(),
	}
}

// cached puts objects in the caches (not in the API server).
func (f *fixture) cached(t *testing.T, objs ...runtime.Object) {
	t.Helper()
	for _, obj := range objs {
		var err error
		switch o := obj.(type) {
		case *corev1.Pod:
			err = f.pods.Add(o)
		case *corev1.Node:
			err = f.nodes.Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// live puts objects in the API server only.
func (f *fixture) live(t *testing.T, objs ...runtime.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := f.client.Tracker().Add(obj); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) handle(t *testing.T, op admissionv1.Operation, object, old any) *admissionv1.AdmissionResponse {
	t.Helper()
	gates := features.NewFeatureGate()
	if f.gates != nil {
		if err := gates.SetFromMap(f.gates); err != nil {
			t.Fatal(err)
		}
	}
	regs := Registrations(Dependencies{
		Pods:        corelisters.NewPodLister(f.pods),
		Nodes:       corelisters.NewNodeLister(f.nodes),
		LivePods:    f.client.CoreV1(),
		LiveNodes:   f.client.CoreV1(),
		FeatureGate: gates,
	})
	if len(regs) != 1 || regs[0].Name != MutatingName || regs[0].Path != MutatingPath || len(regs[0].LegacyPaths) != 1 || regs[0].LegacyPaths[0] != LegacyMutatingPath {
		t.Fatalf("registrations = %+v", regs)
	}
	if err := regs[0].Validate(); err != nil {
		t.Fatal(err)
	}
	req := &admissionv1.AdmissionRequest{
		UID:       "review-1",
		Kind:      metav1.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "ContainerRecreateRequest"},
		Namespace: namespace,
		Name:      "restart",
		Operation: op,
		Object:    runtime.RawExtension{Raw: encode(t, object)},
		OldObject: runtime.RawExtension{Raw: encode(t, old)},
	}
	if f.version != "" {
		req.Kind.Version = f.version
	}
	_, ctx := ktesting.NewTestContext(t)
	return regs[0].Handler.Handle(ctx, req)
}

func encode(t *testing.T, object any) []byte {
	t.Helper()
	switch o := object.(type) {
	case nil:
		return nil
	case string:
		return []byte(o)
	default:
		raw, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
}

// request is a request as a user writes it, for containers of pod web.
func request(containers ...string) *appsv1alpha1.ContainerRecreateRequest {
	r := &appsv1alpha1.ContainerRecreateRequest{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "ContainerRecreateRequest"},
		ObjectMeta: metav1.ObjectMeta{Name: "restart", Namespace: namespace, Labels: map[string]string{"team": "web"}},
		Spec:       appsv1alpha1.ContainerRecreateRequestSpec{PodName: "web"},
	}
	for _, c := range containers {
		r.Spec.Containers = append(r.Spec.Containers, appsv1alpha1.ContainerRecreateRequestContainer{Name: c})
	}
	return r
}

// admitted applies the response's patch to object and returns the result.
func admitted(t *testing.T, object any, resp *admissionv1.AdmissionResponse) *appsv1alpha1.ContainerRecreateRequest {
	t.Helper()
	if !resp.Allowed {
		t.Fatalf("denied: %+v", resp.Result)
	}
	raw := encode(t, object)
	if resp.Patch != nil {
		patch, err := jsonpatch.DecodePatch(resp.Patch)
		if err != nil {
			t.Fatalf("decoding the patch %s: %v", resp.Patch, err)
		}
		if raw, err = patch.Apply(raw); err != nil {
			t.Fatalf("applying the patch %s: %v", resp.Patch, err)
		}
	}
	out := &appsv1alpha1.ContainerRecreateRequest{}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func expectDenied(t *testing.T, resp *admissionv1.AdmissionResponse, code int32, contains string) {
	t.Helper()
	if resp.Allowed {
		t.Fatalf("allowed, want HTTP %d", code)
	}
	if resp.Result.Code != code {
		t.Errorf("HTTP %d (%s), want %d", resp.Result.Code, resp.Result.Message, code)
	}
	if !strings.Contains(resp.Result.Message, contains) {
		t.Errorf("message %q does not contain %q", resp.Result.Message, contains)
	}
}

func TestCreateCompletesTheRequest(t *testing.T) {
	f := newFixture(t)
	f.cached(t, runningPod(), node("node-a", nil))
	in := request("app", "sidecar")
	got := admitted(t, in, f.handle(t, admissionv1.Create, in, nil))

	wantLabels := map[string]string{
		"team":                         "web",
		"crr.apps.kruise.io/active":    "true",
		"crr.apps.kruise.io/pod-uid":   "pod-uid-1",
		"crr.apps.kruise.io/node-name": "node-a",
	}
	if !equalMaps(got.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v", got.Labels, wantLabels)
	}
	s := got.Spec.Strategy
	if s == nil || s.FailurePolicy != appsv1alpha1.ContainerRecreateRequestFailurePolicyFail ||
		s.TerminationGracePeriodSeconds == nil || *s.TerminationGracePeriodSeconds != 45 {
		t.Errorf("strategy = %+v, want failurePolicy Fail and the pod's grace period 45", s)
	}
	app, sidecar := got.Spec.Containers[0], got.Spec.Containers[1]
	if app.PreStop == nil || app.PreStop.Exec == nil || app.PreStop.Exec.Command[0] != "drain" || app.Ports != nil {
		t.Errorf("app: preStop %+v, ports %v; want the exec hook and no ports", app.PreStop, app.Ports)
	}
	if *app.StatusContext != (appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://aaa", RestartCount: 2}) {
		t.Errorf("app: statusContext %+v", app.StatusContext)
	}
	if sidecar.PreStop == nil || sidecar.PreStop.HTTPGet == nil || len(sidecar.Ports) != 1 || sidecar.Ports[0].ContainerPort != 9000 {
		t.Errorf("sidecar: preStop %+v, ports %v; want the httpGet hook and its ports", sidecar.PreStop, sidecar.Ports)
	}
	if *sidecar.StatusContext != (appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://bbb"}) {
		t.Errorf("sidecar: statusContext %+v", sidecar.StatusContext)
	}
}

func TestCreateKeepsWhatTheUserSet(t *testing.T) {
	f := newFixture(t)
	f.cached(t, runningPod(), node("node-a", map[string]string{"type": "virtual-kubelet"}))
	in := request("app")
	in.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{
		FailurePolicy: appsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore, TerminationGracePeriodSeconds: ptr.To[int64](0),
		UnreadyGracePeriodSeconds: ptr.To[int64](3), MinStartedSeconds: 10, OrderedRecreate: true,
	}
	in.Spec.ActiveDeadlineSeconds = ptr.To[int64](3)
	got := admitted(t, in, f.handle(t, admissionv1.Create, in, nil))
	want := in.Spec.Strategy
	if s := got.Spec.Strategy; s.FailurePolicy != want.FailurePolicy || *s.TerminationGracePeriodSeconds != 0 ||
		*s.UnreadyGracePeriodSeconds != 3 || s.MinStartedSeconds != 10 || !s.OrderedRecreate {
		t.Errorf("strategy = %+v, want the user's %+v", s, want)
	}
	if got.Labels["type"] != "virtual-kubelet" {
		t.Errorf("labels = %v, want type=virtual-kubelet copied from the node", got.Labels)
	}
}

func TestCreateRefusals(t *testing.T) {
	withStatusContext := request("app")
	withStatusContext.Spec.Containers[0].StatusContext = &appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "x"}
	withPreStop := request("app")
	withPreStop.Spec.Containers[0].PreStop = &appsv1alpha1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"x"}}}
	withPorts := request("app")
	withPorts.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 1}}
	noPodName := request("app")
	noPodName.Spec.PodName = ""
	set := func(r *appsv1alpha1.ContainerRecreateRequest, change func(*appsv1alpha1.ContainerRecreateRequest)) *appsv1alpha1.ContainerRecreateRequest {
		change(r)
		return r
	}
	terminating := runningPod()
	terminating.DeletionTimestamp = &metav1.Time{}
	succeeded := runningPod()
	succeeded.Status.Phase = corev1.PodSucceeded
	pending := runningPod()
	pending.Spec.NodeName = ""

	for _, tt := range []struct {
		name    string
		pod     *corev1.Pod
		noNode  bool
		request *appsv1alpha1.ContainerRecreateRequest
		field   string
	}{
		{name: "no podName", request: noPodName, field: "spec.podName: Required"},
		{name: "no containers", request: request(), field: "spec.containers: Required"},
		{name: "deadline below 3", request: set(request("app"), func(r *appsv1alpha1.ContainerRecreateRequest) { r.Spec.ActiveDeadlineSeconds = ptr.To[int64](2) }),
			field: "spec.activeDeadlineSeconds"},
		{name: "negative grace", request: set(request("app"), func(r *appsv1alpha1.ContainerRecreateRequest) {
			r.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{TerminationGracePeriodSeconds: ptr.To[int64](-1)}
		}), field: "spec.strategy.terminationGracePeriodSeconds"},
		{name: "negative unready grace", request: set(request("app"), func(r *appsv1alpha1.ContainerRecreateRequest) {
			r.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{UnreadyGracePeriodSeconds: ptr.To[int64](-1)}
		}), field: "spec.strategy.unreadyGracePeriodSeconds"},
		{name: "unknown failure policy", request: set(request("app"), func(r *appsv1alpha1.ContainerRecreateRequest) {
			r.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{FailurePolicy: "Sometimes"}
		}), field: "spec.strategy.failurePolicy"},
		{name: "missing pod", pod: nil, request: request("app"), field: "spec.podName: Not found"},
		{name: "terminating pod", pod: terminating, request: request("app"), field: "spec.podName"},
		{name: "finished pod", pod: succeeded, request: request("app"), field: "spec.podName"},
		{name: "pending pod", pod: pending, request: request("app"), field: "not scheduled"},
		{name: "missing node", pod: runningPod(), noNode: true, request: request("app"), field: "node-a, which does not exist"},
		{name: "unknown container", pod: runningPod(), request: request("nope"), field: "spec.containers[0].name: Not found"},
		{name: "container twice", pod: runningPod(), request: request("app", "app"), field: "spec.containers[1].name: Duplicate"},
		{name: "container without ID", pod: runningPod(), request: request("idle"), field: "no containerID"},
		{name: "user statusContext", pod: runningPod(), request: withStatusContext, field: "spec.containers[0].statusContext: Forbidden"},
		{name: "user preStop", pod: runningPod(), request: withPreStop, field: "spec.containers[0].preStop: Forbidden"},
		{name: "user ports", pod: runningPod(), request: withPorts, field: "spec.containers[0].ports: Forbidden"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if tt.pod != nil {
				// The API server agrees with the cache: a cached pod that does not pass is
				// read again.
				f.cached(t, tt.pod)
				f.live(t, tt.pod)
			}
			if !tt.noNode {
				f.cached(t, node("node-a", nil))
			}
			expectDenied(t, f.handle(t, admissionv1.Create, tt.request, nil), http.StatusBadRequest, tt.field)
		})
	}
}

func TestCreateRefusedWithoutKruiseDaemon(t *testing.T) {
	f := newFixture(t)
	f.cached(t, runningPod(), node("node-a", nil))
	f.gates = map[string]bool{string(features.KruiseDaemon): false}
	expectDenied(t, f.handle(t, admissionv1.Create, request("app"), nil), http.StatusForbidden, "KruiseDaemon")
}

// A request is often created right after its pod: what the cache has not seen yet is read
// from the API server.
func TestCreateReadsWhatTheCacheMissed(t *testing.T) {
	t.Run("pod and node missing from the cache", func(t *testing.T) {
		f := newFixture(t)
		f.live(t, runningPod(), node("node-a", nil))
		got := admitted(t, request("app"), f.handle(t, admissionv1.Create, request("app"), nil))
		if got.Labels["crr.apps.kruise.io/pod-uid"] != "pod-uid-1" {
			t.Errorf("labels = %v", got.Labels)
		}
	})
	t.Run("cached pod not started yet", func(t *testing.T) {
		f := newFixture(t)
		stale := runningPod()
		stale.Spec.NodeName = ""
		stale.Status = corev1.PodStatus{}
		f.cached(t, stale, node("node-a", nil))
		f.live(t, runningPod())
		got := admitted(t, request("app"), f.handle(t, admissionv1.Create, request("app"), nil))
		if got.Spec.Containers[0].StatusContext == nil || got.Spec.Containers[0].StatusContext.ContainerID != "containerd://aaa" {
			t.Errorf("containers = %+v, want the live pod's status", got.Spec.Containers)
		}
	})
}

func TestCreateReadFailuresAre500(t *testing.T) {
	for _, resource := range []string{"pods", "nodes"} {
		t.Run(resource, func(t *testing.T) {
			f := newFixture(t)
			if resource == "nodes" {
				f.cached(t, runningPod())
			}
			f.client.PrependReactor("get", resource, func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, errors.New("connection refused")
			})
			expectDenied(t, f.handle(t, admissionv1.Create, request("app"), nil), http.StatusInternalServerError, "connection refused")
		})
	}
}

func TestUpdate(t *testing.T) {
	f := newFixture(t)
	f.cached(t, runningPod(), node("node-a", nil))
	old := admitted(t, request("app"), f.handle(t, admissionv1.Create, request("app"), nil))
	old.Annotations = map[string]string{"crr.apps.kruise.io/unready-acquired": "2024-01-01T00:00:00Z"}
	f.gates = map[string]bool{string(features.KruiseDaemon): false} // updates are not gated

	change := func(mutate func(*appsv1alpha1.ContainerRecreateRequest)) *appsv1alpha1.ContainerRecreateRequest {
		r := old.DeepCopy()
		mutate(r)
		return r
	}
	for _, tt := range []struct {
		name   string
		object *appsv1alpha1.ContainerRecreateRequest
		denial string
	}{
		{"finalizer, active label and annotations", change(func(r *appsv1alpha1.ContainerRecreateRequest) {
			r.Finalizers = []string{"crr.apps.kruise.io/unready-acquired"}
			delete(r.Labels, "crr.apps.kruise.io/active")
			r.Annotations["crr.apps.kruise.io/sync-container-statuses"] = "[]"
		}), ""},
		{"spec", change(func(r *appsv1alpha1.ContainerRecreateRequest) { r.Spec.TTLSecondsAfterFinished = ptr.To[int32](5) }), "spec is immutable"},
		{"pod-uid label", change(func(r *appsv1alpha1.ContainerRecreateRequest) { r.Labels["crr.apps.kruise.io/pod-uid"] = "other" }),
			"crr.apps.kruise.io/pod-uid is immutable"},
		{"node-name label", change(func(r *appsv1alpha1.ContainerRecreateRequest) { delete(r.Labels, "crr.apps.kruise.io/node-name") }),
			"crr.apps.kruise.io/node-name is immutable"},
		{"unready-acquired", change(func(r *appsv1alpha1.ContainerRecreateRequest) {
			r.Annotations["crr.apps.kruise.io/unready-acquired"] = "2024-01-01T00:00:09Z"
		}), "crr.apps.kruise.io/unready-acquired is immutable"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := f.handle(t, admissionv1.Update, tt.object, old)
			if tt.denial == "" {
				if !resp.Allowed || resp.Patch != nil {
					t.Errorf("answer %+v, want allowed unchanged", resp)
				}
				return
			}
			expectDenied(t, resp, http.StatusForbidden, tt.denial)
		})
	}

	// An unready-acquired annotation may be set once.
	unset := old.DeepCopy()
	delete(unset.Annotations, "crr.apps.kruise.io/unready-acquired")
	if resp := f.handle(t, admissionv1.Update, old, unset); !resp.Allowed {
		t.Errorf("setting unready-acquired for the first time was denied: %+v", resp.Result)
	}
}

func TestUndecodableIs400(t *testing.T) {
	f := newFixture(t)
	expectDenied(t, f.handle(t, admissionv1.Create, `{"spec":{"podName":"web","unknown":1}}`, nil), http.StatusBadRequest, "unknown")
}

func TestDeleteIsAllowed(t *testing.T) {
	f := newFixture(t)
	if resp := f.handle(t, admissionv1.Delete, nil, request("app")); !resp.Allowed {
		t.Errorf("DELETE denied: %+v", resp.Result)
	}
}

func equalMaps(a, b map[string]string) bool { // maps.Equal spelled out for the failure message
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
