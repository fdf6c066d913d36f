package storageversionmigrator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clientinformers "k8s.io/client-go/informers"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
)

// t0 is the fake clock's start time.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// crdResourceVersion is the resourceVersion of every CRD the tests build.
const crdResourceVersion = "7"

// kinds are the seven resources in v1beta1, by CRD name: resource, kind, namespaced.
var kinds = map[string]struct {
	resource   schema.GroupVersionResource
	kind       string
	namespaced bool
	webhook    bool
}{
	"daemonsets.apps.kruise.io":                {schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "daemonsets"}, "DaemonSet", true, true},
	"nodeimages.apps.kruise.io":                {schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "nodeimages"}, "NodeImage", false, false},
	"imagepulljobs.apps.kruise.io":             {schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "imagepulljobs"}, "ImagePullJob", true, false},
	"imagelistpulljobs.apps.kruise.io":         {schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "imagelistpulljobs"}, "ImageListPullJob", true, false},
	"containerrecreaterequests.apps.kruise.io": {schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "containerrecreaterequests"}, "ContainerRecreateRequest", true, true},
	"podunavailablebudgets.policy.kruise.io":   {schema.GroupVersionResource{Group: "policy.kruise.io", Version: "v1beta1", Resource: "podunavailablebudgets"}, "PodUnavailableBudget", true, true},
	"clonesets.apps.kruise.io":                 {schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "clonesets"}, "CloneSet", true, true},
}

const (
	dsCRD = "daemonsets.apps.kruise.io"
	niCRD = "nodeimages.apps.kruise.io"
)

// fixture is a controller on a hand-filled CRD cache and a fake dynamic client holding
// the same CRDs and the objects of the resources, with a fake clock.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	client   *dynamicfake.FakeDynamicClient
	crds     clientinformers.GenericInformer
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	queue    *queuetest.Recorder
	c        *Controller
}

// newFixture builds the controller with the fake clock and the default settle delay;
// opts come after them and may override them.
func newFixture(t *testing.T, opts ...options.Option) *fixture {
	t.Helper()
	return newFixtureWrapping(t, nil, opts...)
}

// newFixtureWrapping is newFixture with the controller's client passed through wrap, when
// not nil: a test puts a pager in front of the fake.
func newFixtureWrapping(t *testing.T, wrap func(dynamic.Interface) dynamic.Interface, opts ...options.Option) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	listKinds := map[schema.GroupVersionResource]string{CRDResource: "CustomResourceDefinitionList"}
	for _, k := range kinds {
		listKinds[k.resource] = k.kind + "List"
	}
	f := &fixture{t: t, ctx: ctx,
		client:   dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds),
		clock:    clocktesting.NewFakeClock(t0),
		recorder: record.NewFakeRecorder(100),
	}
	f.crds = dynamicinformer.NewFilteredDynamicInformer(f.client, CRDResource, metav1.NamespaceAll, 0, cache.Indexers{}, SelectManagedCRDs)
	var client dynamic.Interface = f.client
	if wrap != nil {
		client = wrap(f.client)
	}
	q, wrapQueue := queuetest.Wrapping()
	opts = append([]options.Option{options.WithClock(f.clock), wrapQueue}, opts...)
	c, err := NewController(ctx, f.crds, client, f.recorder, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.queue.ShutDown)
	f.queue = q
	f.c = c
	return f
}

// newCRD returns one of the seven CRDs as bosun ships it once applied and ready: labelled as
// bosun's, v1alpha1 and v1beta1 served, v1beta1 the storage version, Established, the
// conversion webhook's caBundle set (Webhook kinds), objects stored in both versions.
func newCRD(name string) *unstructured.Unstructured {
	k, ok := kinds[name]
	if !ok {
		panic("no such CRD in the tests: " + name)
	}
	scope := "Cluster"
	if k.namespaced {
		scope = "Namespaced"
	}
	conversion := map[string]any{"strategy": "None"}
	if k.webhook {
		conversion = map[string]any{
			"strategy": "Webhook",
			"webhook": map[string]any{
				"clientConfig":             map[string]any{"url": "https://127.0.0.1:9876/convert", "caBundle": "Q0EgYnVuZGxl"},
				"conversionReviewVersions": []any{"v1"},
			},
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata": map[string]any{
			"name":            name,
			"uid":             "uid-" + name,
			"resourceVersion": crdResourceVersion,
			"labels":          map[string]any{ManagedByLabel: ManagedByValue},
		},
		"spec": map[string]any{
			"group":      k.resource.Group,
			"names":      map[string]any{"plural": k.resource.Resource, "kind": k.kind},
			"scope":      scope,
			"conversion": conversion,
			"versions": []any{
				map[string]any{"name": "v1alpha1", "served": true, "storage": false},
				map[string]any{"name": "v1beta1", "served": true, "storage": true},
			},
		},
		"status": map[string]any{
			"conditions": []any{
				map[string]any{"type": "NamesAccepted", "status": "True"},
				map[string]any{"type": "Established", "status": "True"},
			},
			"storedVersions": []any{"v1alpha1", "v1beta1"},
		},
	}}
}

// setStorage makes version the storage version of crd (and only it).
func setStorage(crd *unstructured.Unstructured, version string) {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		v.(map[string]any)["storage"] = v.(map[string]any)["name"] == version
	}
	_ = unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions")
}

// setStoredVersions sets crd's status.storedVersions.
func setStoredVersions(crd *unstructured.Unstructured, versions ...string) {
	_ = unstructured.SetNestedStringSlice(crd.Object, versions, "status", "storedVersions")
}

// addCRD puts crd into the cache and on the server.
func (f *fixture) addCRD(crd *unstructured.Unstructured) {
	f.t.Helper()
	if err := f.crds.Informer().GetIndexer().Add(crd.DeepCopy()); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.client.Resource(CRDResource).Create(f.ctx, crd.DeepCopy(), metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.client.ClearActions()
}

// updateCRD puts crd into the cache and on the server in place of the CRD of that name.
func (f *fixture) updateCRD(crd *unstructured.Unstructured) {
	f.t.Helper()
	if err := f.crds.Informer().GetIndexer().Update(crd.DeepCopy()); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.client.Resource(CRDResource).Update(f.ctx, crd.DeepCopy(), metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.client.ClearActions()
}

// cacheCRD makes the cache hold the CRD the server holds, as its update event would.
func (f *fixture) cacheCRD(name string) {
	f.t.Helper()
	crd, err := f.client.Resource(CRDResource).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.crds.Informer().GetIndexer().Update(crd); err != nil {
		f.t.Fatal(err)
	}
}

// addObjects creates n objects of the CRD's resource on the server, named obj-0000 …,
// spread over two namespaces when namespaced, each with a spec, a status and a
// resourceVersion of its own. It returns their keys.
func (f *fixture) addObjects(crdName string, n int) []string {
	f.t.Helper()
	k := kinds[crdName]
	var keys []string
	for i := range n {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": k.resource.GroupVersion().String(),
			"kind":       k.kind,
			"metadata": map[string]any{
				"name":            fmt.Sprintf("obj-%04d", i),
				"uid":             fmt.Sprintf("uid-%d", i),
				"resourceVersion": fmt.Sprintf("%d", 1000+i),
				"generation":      int64(3),
			},
			"spec":   map[string]any{"field": fmt.Sprintf("value-%d", i)},
			"status": map[string]any{"observedGeneration": int64(3)},
		}}
		namespace := ""
		if k.namespaced {
			namespace = fmt.Sprintf("ns-%d", i%2)
			obj.SetNamespace(namespace)
		}
		if _, err := f.client.Resource(k.resource).Namespace(namespace).Create(f.ctx, obj, metav1.CreateOptions{}); err != nil {
			f.t.Fatal(err)
		}
		keys = append(keys, key(namespace, obj.GetName()))
	}
	slices.Sort(keys)
	f.client.ClearActions()
	return keys
}

func key(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// sync runs one sync of the CRD.
func (f *fixture) sync(name string) error {
	f.t.Helper()
	return f.c.syncCRD(f.ctx, name)
}

// storedVersions returns the CRD's status.storedVersions on the server.
func (f *fixture) storedVersions(name string) []string {
	f.t.Helper()
	crd, err := f.client.Resource(CRDResource).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return storedVersions(crd)
}

// lists returns how many LISTs of resource the controller sent.
func (f *fixture) lists(resource schema.GroupVersionResource) int {
	n := 0
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "list" && a.GetResource() == resource {
			n++
		}
	}
	return n
}

// writes returns the writes the controller sent for resource, as "verb[/subresource]
// key@resourceVersion", sorted.
func (f *fixture) writes(resource schema.GroupVersionResource) []string {
	var writes []string
	for _, a := range f.client.Actions() {
		if a.GetResource() != resource {
			continue
		}
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		verb := a.GetVerb()
		if a.GetSubresource() != "" {
			verb += "/" + a.GetSubresource()
		}
		entry := verb
		if update, ok := a.(clienttesting.UpdateAction); ok {
			obj := update.GetObject().(*unstructured.Unstructured)
			entry += " " + key(obj.GetNamespace(), obj.GetName()) + "@" + obj.GetResourceVersion()
		}
		writes = append(writes, entry)
	}
	slices.Sort(writes)
	return writes
}

// statusUpdates returns the keys of the objects of resource whose status subresource the
// controller updated, sorted.
func (f *fixture) statusUpdates(resource schema.GroupVersionResource) []string {
	var keys []string
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" && a.GetResource() == resource {
			obj := a.(clienttesting.UpdateAction).GetObject().(*unstructured.Unstructured)
			keys = append(keys, key(obj.GetNamespace(), obj.GetName()))
		}
	}
	slices.Sort(keys)
	return keys
}

// events drains the events recorded so far.
func (f *fixture) events() []string {
	var events []string
	for {
		select {
		case e := <-f.recorder.Events:
			events = append(events, e)
		default:
			return events
		}
	}
}

// failStatusUpdates makes the status updates of the named objects of resource fail with
// the error err returns, for as long as on() says so.
func (f *fixture) failStatusUpdates(resource schema.GroupVersionResource, on func() bool, errs map[string]func() error) {
	f.client.PrependReactor("update", resource.Resource, func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "status" || action.GetResource() != resource || !on() {
			return false, nil, nil
		}
		obj := action.(clienttesting.UpdateAction).GetObject().(*unstructured.Unstructured)
		if makeErr, ok := errs[key(obj.GetNamespace(), obj.GetName())]; ok {
			return true, nil, makeErr()
		}
		return false, nil, nil
	})
}

func conflict(resource schema.GroupVersionResource, name string) func() error {
	return func() error {
		return apierrors.NewConflict(resource.GroupResource(), name, fmt.Errorf("the object has been modified"))
	}
}

func notFound(resource schema.GroupVersionResource, name string) func() error {
	return func() error { return apierrors.NewNotFound(resource.GroupResource(), name) }
}

func internalError() func() error {
	return func() error { return apierrors.NewInternalError(fmt.Errorf("etcd is unhappy")) }
}

// migrated, failures and passes read the controller's metrics for the CRD.
func migrated(t *testing.T, name string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(migratedTotal.WithLabelValues(name))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func failures(t *testing.T, name string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(errorsTotal.WithLabelValues(name))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func passes(t *testing.T, name string) uint64 {
	t.Helper()
	v, err := testutil.GetHistogramMetricCount(passDuration.WithLabelValues(name))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// hasEvent reports whether one of events starts with prefix ("Normal Reason", say) and
// contains every one of parts.
func hasEvent(events []string, prefix string, parts ...string) bool {
	return slices.ContainsFunc(events, func(e string) bool {
		if !strings.HasPrefix(e, prefix+" ") {
			return false
		}
		for _, p := range parts {
			if !strings.Contains(e, p) {
				return false
			}
		}
		return true
	})
}
