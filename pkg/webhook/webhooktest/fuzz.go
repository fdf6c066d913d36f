package webhooktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"

	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/webhook"
)

// SampleNamespace is the namespace of the sample objects' admission requests.
const SampleNamespace = "default"

// fuzzRequestTimeout bounds a webhook's call in AdmissionFuzzer. A handler that takes this
// long on one request is stuck, and fails the target rather than slowing it down.
const fuzzRequestTimeout = 5 * time.Second

// SamplePod is a running pod of a Deployment's ReplicaSet ("web-5d8f" of "web") on node
// "node-a", with two containers: the pod the fuzz targets' fake clusters hold and their
// pod requests are about.
func SamplePod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: SampleNamespace, UID: "uid-pod",
			Labels: map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d8f",
				UID: "uid-replicaset", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{
			{Name: "app", Image: "registry.example/web:1"}, {Name: "sidecar", Image: "busybox"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "app", Ready: true, ContainerID: "containerd://0123", Image: "registry.example/web:1"},
				{Name: "sidecar", Ready: true, ContainerID: "containerd://4567", Image: "docker.io/library/busybox:latest"}}},
	}
}

// SampleOwners are the Deployment "web" and its ReplicaSet "web-5d8f" that own SamplePod,
// for fake clusters in which a webhook follows the pod's owners up to its workload.
func SampleOwners() (*appsv1.Deployment, *appsv1.ReplicaSet) {
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: SampleNamespace, UID: "uid-deployment"},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: selector},
	}
	replicaSet := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f", Namespace: SampleNamespace, UID: "uid-replicaset",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web",
				UID: "uid-deployment", Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3), Selector: selector.DeepCopy()},
	}
	return deployment, replicaSet
}

// SampleBudget is a budget in SampleNamespace covering SamplePod and the other pods of its
// Deployment, with one disruption allowed.
func SampleBudget() *policyv1beta1.PodUnavailableBudget {
	return &policyv1beta1.PodUnavailableBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy.kruise.io/v1beta1", Kind: "PodUnavailableBudget"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: SampleNamespace, UID: "uid-budget", Generation: 1},
		Spec: policyv1beta1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		},
		Status: policyv1beta1.PodUnavailableBudgetStatus{ObservedGeneration: 1, UnavailableAllowed: 1,
			CurrentAvailable: 3, DesiredAvailable: 2, TotalReplicas: 3},
	}
}

// SampleObjectsByKind returns sample objects by group, version and kind: those of
// SampleObjects in the version they are written in and converted to the other one, an
// ImageListPullJob, SamplePod, a new pod and an Eviction of SamplePod.
func SampleObjectsByKind(t testing.TB) map[schema.GroupVersionKind][][]byte {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{appsv1alpha1.AddToScheme, appsv1beta1.AddToScheme,
		policyv1alpha1.AddToScheme, policyv1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	// The repository has no sample ImageListPullJob.
	imageListPullJob := []byte(`{"apiVersion":"apps.kruise.io/v1alpha1","kind":"ImageListPullJob","metadata":{"name":"warm-up"},
		"spec":{"images":["nginx:1.25","registry.example/web:2.0"],"parallelism":2,"completionPolicy":{"type":"Always"}}}`)
	samples := map[schema.GroupVersionKind][][]byte{}
	for _, object := range append(SampleObjects(t), imageListPullJob) {
		var typeMeta metav1.TypeMeta
		if err := json.Unmarshal(object, &typeMeta); err != nil {
			t.Fatal(err)
		}
		gvk := typeMeta.GroupVersionKind()
		samples[gvk] = append(samples[gvk], object)
		if !scheme.Recognizes(gvk) {
			continue
		}
		otherGVK := gvk.GroupKind().WithVersion(map[string]string{"v1alpha1": "v1beta1", "v1beta1": "v1alpha1"}[gvk.Version])
		in, err := scheme.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		out, err := scheme.New(otherGVK)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(object, in); err != nil {
			t.Fatalf("decoding the sample %s: %v", object, err)
		}
		if err := scheme.Convert(in, out, nil); err != nil {
			t.Fatal(err)
		}
		out.GetObjectKind().SetGroupVersionKind(otherGVK)
		converted, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		samples[otherGVK] = append(samples[otherGVK], converted)
	}
	pod, err := json.Marshal(SamplePod())
	if err != nil {
		t.Fatal(err)
	}
	newPod := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"web-","labels":{"app":"web"},
		"annotations":{"apps.kruise.io/container-launch-priority":"Ordered"}},
		"spec":{"containers":[{"name":"app","image":"registry.example/web:1"},{"name":"sidecar","image":"busybox"}]}}`)
	samples[corev1.SchemeGroupVersion.WithKind("Pod")] = [][]byte{pod, newPod}
	samples[evictionKind] = [][]byte{[]byte(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-0","namespace":"default"}}`)}
	return samples
}

var evictionKind = schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}

// kindOfResource is the kind of each resource the webhooks' rules name.
var kindOfResource = map[string]string{
	"clonesets": "CloneSet", "daemonsets": "DaemonSet", "containerrecreaterequests": "ContainerRecreateRequest",
	"nodeimages": "NodeImage", "imagepulljobs": "ImagePullJob", "imagelistpulljobs": "ImageListPullJob",
	"podunavailablebudgets": "PodUnavailableBudget", "pods": "Pod",
}

// SeedReviews are AdmissionReviews the API server would send to r: every operation of its
// rules on every sample of every version they name.
func SeedReviews(t testing.TB, r webhook.Registration, samples map[schema.GroupVersionKind][][]byte) [][]byte {
	t.Helper()
	var bodies [][]byte
	for _, rule := range r.Rules {
		for _, resource := range rule.Resources {
			for _, version := range rule.APIVersions {
				for _, group := range rule.APIGroups {
					name, subResource, _ := strings.Cut(resource, "/")
					gvr := metav1.GroupVersionResource{Group: group, Version: version, Resource: name}
					gvk := schema.GroupVersionKind{Group: group, Version: version, Kind: kindOfResource[name]}
					if subResource == "eviction" {
						gvk = evictionKind
					}
					if len(samples[gvk]) == 0 {
						t.Fatalf("no sample %s for webhook %s", gvk, r.Name)
					}
					for _, op := range rule.Operations {
						for i, object := range samples[gvk] {
							bodies = append(bodies, seedReview(t, admissionv1.Operation(op), gvk, gvr, subResource, i, object))
						}
					}
				}
			}
		}
	}
	return bodies
}

// seedReview is the AdmissionReview of op on object, of kind gvk in resource gvr.
func seedReview(t testing.TB, op admissionv1.Operation, gvk schema.GroupVersionKind, gvr metav1.GroupVersionResource,
	subResource string, i int, object []byte) []byte {
	t.Helper()
	var meta struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(object, &meta); err != nil {
		t.Fatal(err)
	}
	req := &admissionv1.AdmissionRequest{
		UID:         types.UID(fmt.Sprintf("seed-%s-%s-%s-%d", strings.ToLower(string(op)), strings.ToLower(gvk.Kind), gvk.Version, i)),
		Kind:        metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
		Resource:    gvr,
		SubResource: subResource,
		Name:        meta.Metadata.Name,
		Operation:   op,
		UserInfo:    authenticationv1.UserInfo{Username: "fuzz", Groups: []string{"system:authenticated"}},
	}
	if gvk.Kind != "NodeImage" {
		req.Namespace = SampleNamespace
	}
	switch op {
	case admissionv1.Create:
		req.Object.Raw = object
	case admissionv1.Update:
		req.Object.Raw, req.OldObject.Raw = object, object
	case admissionv1.Delete:
		req.OldObject.Raw = object
	}
	return ReviewBody(t, req)
}

// ReviewBody is the admission.k8s.io/v1 AdmissionReview that carries req, as the API
// server sends it.
func ReviewBody(t testing.TB, req *admissionv1.AdmissionRequest) []byte {
	t.Helper()
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// malformedReviews are bodies no API server sends.
var malformedReviews = []string{
	``, `{}`, `null`, `[]`, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u"}}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"CREATE"}}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","uid":"v"}}`,
	`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u"}}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"CREATE",` +
		`"kind":{"group":"apps.kruise.io","version":"v1beta1","kind":"DaemonSet"},"object":5}}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"UPDATE",` +
		`"kind":{"group":"","version":"v1","kind":"Pod"},"object":{"apiVersion":"v1","kind":"Pod"},"oldObject":null}}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"DELETE",` +
		`"kind":{"group":"","version":"v1","kind":"Pod"},"namespace":"default","name":"web-0"}}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"CREATE",` +
		`"kind":{"group":"policy","version":"v1","kind":"Eviction"},"subResource":"eviction","namespace":"default","name":"nope",` +
		`"object":{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"nope"}}}}`,
}

// AdmissionFuzzer serves webhooks the way the manager does, through a webhook.Server's
// HTTP handler as the API server calls it, built twice: with the feature gates at their
// defaults, and with every gate that can be changed on.
type AdmissionFuzzer struct {
	servers map[bool]*admissionServer
}

// admissionServer is a webhook server and what it serves.
type admissionServer struct {
	handler http.Handler
	// byPath is the registration served at each path, legacy paths included; paths are
	// the same paths, sorted.
	byPath map[string]webhook.Registration
	paths  []string
}

// NewAdmissionFuzzer serves the registrations build returns for each set of feature
// gates. The webhooks must be the same under both.
func NewAdmissionFuzzer(t testing.TB, build func(gates featuregate.FeatureGate) []webhook.Registration) *AdmissionFuzzer {
	t.Helper()
	allOn := features.NewFeatureGate()
	for name, spec := range allOn.GetAll() {
		if !spec.LockToDefault {
			if err := allOn.SetFromMap(map[string]bool{string(name): true}); err != nil {
				t.Fatal(err)
			}
		}
	}
	a := &AdmissionFuzzer{servers: map[bool]*admissionServer{
		false: newAdmissionServer(t, build(features.NewFeatureGate())),
		true:  newAdmissionServer(t, build(allOn)),
	}}
	if !slices.Equal(a.servers[false].paths, a.servers[true].paths) {
		t.Fatalf("the webhooks serve %v with the default feature gates, %v with all on", a.servers[false].paths, a.servers[true].paths)
	}
	return a
}

func newAdmissionServer(t testing.TB, regs []webhook.Registration) *admissionServer {
	t.Helper()
	if len(regs) == 0 {
		t.Fatal("no webhook to fuzz")
	}
	server := webhook.NewServer(webhook.ServerOptions{RequestTimeout: fuzzRequestTimeout})
	s := &admissionServer{handler: server.Handler(), byPath: map[string]webhook.Registration{}}
	for _, r := range regs {
		if err := server.Register(r); err != nil {
			t.Fatal(err)
		}
		for _, path := range append([]string{r.Path}, r.LegacyPaths...) {
			s.byPath[path] = r
			s.paths = append(s.paths, path)
		}
	}
	slices.Sort(s.paths)
	return s
}

// Names are the names of the webhooks served.
func (a *AdmissionFuzzer) Names() []string {
	var names []string
	for _, r := range a.servers[false].byPath {
		if !slices.Contains(names, r.Name) {
			names = append(names, r.Name)
		}
	}
	slices.Sort(names)
	return names
}

// AdmissionSeed is one seed of an admission fuzz target: the arguments of Fuzz.
type AdmissionSeed struct {
	AllGates bool
	Path     string
	Body     []byte
}

// Seeds are the seeds of an admission fuzz target: for the path of every webhook, the
// reviews SeedReviews makes of samples, each with the gates of one server or the other (a
// seed costs the fuzzing time to replay; a legacy path serves the handler of its
// webhook's path), and malformed reviews.
func (a *AdmissionFuzzer) Seeds(t testing.TB, samples map[schema.GroupVersionKind][][]byte) []AdmissionSeed {
	t.Helper()
	s := a.servers[false]
	var seeds []AdmissionSeed
	for _, path := range s.paths {
		reg := s.byPath[path]
		if path != reg.Path {
			continue
		}
		for _, body := range SeedReviews(t, reg, samples) {
			seeds = append(seeds, AdmissionSeed{AllGates: len(seeds)%2 == 1, Path: path, Body: body})
		}
	}
	for i, body := range malformedReviews {
		seeds = append(seeds, AdmissionSeed{AllGates: i%2 == 1, Path: s.paths[i%len(s.paths)], Body: []byte(body)})
	}
	return seeds
}

// Seed adds Seeds to the fuzz target f.
func (a *AdmissionFuzzer) Seed(f *testing.F, samples map[schema.GroupVersionKind][][]byte) {
	f.Helper()
	for _, seed := range a.Seeds(f, samples) {
		f.Add(seed.AllGates, seed.Path, seed.Body)
	}
}

// Fuzz is the fuzz function of an admission fuzz target: it posts body to the webhook at
// path and checks the answer. The server answers a well-formed AdmissionReview or a 4xx
// with a message, never a 5xx; the review answers the request's UID; a webhook never
// panics (the server would answer for it with a 500), fails on its own account or misses
// its deadline; a denial carries a status with an error code; a patch comes only from a
// mutating webhook, and is a JSON patch that applies to the object sent. A review that
// decodes is sent with its objects as an API server would send them (asSentByAPIServer).
//
// path picks the webhook: one the server serves, or else one chosen by its hash, so that
// every input reaches a webhook. allGates picks the server with every feature gate on.
func (a *AdmissionFuzzer) Fuzz(t *testing.T, allGates bool, path string, body []byte) {
	s := a.servers[allGates]
	if _, ok := s.byPath[path]; !ok {
		h := fnv.New32a()
		h.Write([]byte(path))
		path = s.paths[int(h.Sum32()%uint32(len(s.paths)))]
	}
	reg := s.byPath[path]
	body = asSentByAPIServer(body)

	var log bytes.Buffer
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&log)))
	r := httptest.NewRequestWithContext(klog.NewContext(t.Context(), logger), http.MethodPost, path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	s.handler.ServeHTTP(w, r)

	// The server logs a recovered panic at error level, and answers it with a 500.
	if strings.Contains(log.String(), "panicked") {
		t.Fatalf("webhook %s panicked on %s:\n%s", reg.Name, body, log.String())
	}
	if w.Code != http.StatusOK {
		if w.Code < 400 || w.Code >= 500 || strings.TrimSpace(w.Body.String()) == "" {
			t.Fatalf("webhook %s answered %s with HTTP %d %q, want 200 or a 4xx with a message", reg.Name, body, w.Code, w.Body)
		}
		return
	}
	// The server answered, so it read a request: as it decodes.
	var sent admissionv1.AdmissionReview
	if err := utiljson.Unmarshal(body, &sent); err != nil || sent.Request == nil {
		t.Fatalf("webhook %s answered %s, which does not decode to a request: %v", reg.Name, body, err)
	}
	if got := w.Header().Get("Content-Type"); got != "application/json" {
		t.Errorf("webhook %s answered with Content-Type %q", reg.Name, got)
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(w.Body.Bytes(), &review); err != nil {
		t.Fatalf("webhook %s answered %s with %s, not an AdmissionReview: %v", reg.Name, body, w.Body, err)
	}
	resp := review.Response
	switch {
	case review.APIVersion != "admission.k8s.io/v1" || review.Kind != "AdmissionReview":
		t.Fatalf("webhook %s answered a %s %s", reg.Name, review.APIVersion, review.Kind)
	case review.Request != nil || resp == nil:
		t.Fatalf("webhook %s answered a review without a response, or with a request: %s", reg.Name, w.Body)
	case resp.UID != sent.Request.UID:
		t.Fatalf("webhook %s answered UID %q to request %q", reg.Name, resp.UID, sent.Request.UID)
	}
	if !resp.Allowed {
		switch {
		case resp.Result == nil || resp.Result.Code < 400 || resp.Result.Code > 599:
			t.Fatalf("webhook %s denied %s without an error status: %+v", reg.Name, body, resp.Result)
		case resp.Result.Code >= 500:
			t.Fatalf("webhook %s failed on %s: %d %s\n%s", reg.Name, body, resp.Result.Code, resp.Result.Message, log.String())
		case len(resp.Patch) > 0:
			t.Fatalf("webhook %s denied %s with a patch", reg.Name, body)
		}
		return
	}
	if len(resp.Patch) == 0 {
		return
	}
	if reg.Type != webhook.Mutating {
		t.Fatalf("validating webhook %s answered %s with a patch %s", reg.Name, body, resp.Patch)
	}
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("webhook %s answered a patch of type %v", reg.Name, resp.PatchType)
	}
	patch, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		t.Fatalf("webhook %s answered %s with %s, not a JSON patch: %v", reg.Name, body, resp.Patch, err)
	}
	object := sent.Request.Object.Raw
	patched, err := patch.Apply(object)
	if err != nil {
		t.Fatalf("webhook %s answered %s with the patch %s, which does not apply to %s: %v", reg.Name, body, resp.Patch, object, err)
	}
	if !json.Valid(patched) {
		t.Fatalf("webhook %s patched %s into %s, not JSON", reg.Name, object, patched)
	}
}

// asSentByAPIServer is body with its request's objects as an API server would send them,
// when it decodes into a review: an API server sets metadata (the namespace, a name or
// generateName) before admission, so an object always has it, and it writes a pod as its
// Go type encodes it (every container an object with a name, say). The webhooks answer
// for those objects, and their patches apply to those. Any other body is left as it is,
// so that the server is fuzzed with bodies no API server sends, too.
func asSentByAPIServer(body []byte) []byte {
	var review admissionv1.AdmissionReview
	if utiljson.Unmarshal(body, &review) != nil || review.Request == nil {
		return body
	}
	req := review.Request
	changed := false
	for _, object := range []*runtime.RawExtension{&req.Object, &req.OldObject} {
		if len(object.Raw) == 0 {
			continue
		}
		if req.Kind.Group == "" && req.Kind.Kind == "Pod" {
			var pod corev1.Pod
			if json.Unmarshal(object.Raw, &pod) != nil {
				continue
			}
			if encoded, err := json.Marshal(&pod); err == nil {
				object.Raw, changed = encoded, true
			}
			continue
		}
		var members map[string]json.RawMessage
		if json.Unmarshal(object.Raw, &members) != nil || members == nil {
			continue
		}
		if metadata, ok := members["metadata"]; !ok || bytes.Equal(bytes.TrimSpace(metadata), []byte("null")) {
			members["metadata"] = json.RawMessage(`{}`)
			if encoded, err := json.Marshal(members); err == nil {
				object.Raw, changed = encoded, true
			}
		}
	}
	if !changed {
		return body
	}
	rewritten, err := json.Marshal(&review)
	if err != nil {
		return body
	}
	return rewritten
}
