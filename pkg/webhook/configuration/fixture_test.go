package configuration

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/webhook"
)

var (
	mutatingResource   = admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations")
	validatingResource = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations")
)

var (
	testCA  = []byte("-----BEGIN CERTIFICATE-----\nfirst\n-----END CERTIFICATE-----\n")
	otherCA = []byte("-----BEGIN CERTIFICATE-----\nsecond\n-----END CERTIFICATE-----\n")
)

var noopHandler = webhook.HandlerFunc(func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: true}
})

func rule(group, version, resource string, ops ...admissionregistrationv1.OperationType) admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{
		Operations: ops,
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource},
		},
	}
}

// testRegistrations are two mutating webhooks (one with every optional field set, one with
// none) and a validating one.
func testRegistrations() []webhook.Registration {
	return []webhook.Registration{
		{
			Name:    "mdaemonset.kb.io",
			Path:    "/mutate-apps-kruise-io-v1alpha1-daemonset",
			Type:    webhook.Mutating,
			Rules:   []admissionregistrationv1.RuleWithOperations{rule("apps.kruise.io", "v1alpha1", "daemonsets", admissionregistrationv1.Create, admissionregistrationv1.Update)},
			Handler: noopHandler,
		},
		{
			Name:              "mpod.kb.io",
			Path:              "/mutate-pod",
			Type:              webhook.Mutating,
			Rules:             []admissionregistrationv1.RuleWithOperations{rule("", "v1", "pods", admissionregistrationv1.Create)},
			FailurePolicy:     ptr.To(admissionregistrationv1.Ignore),
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"bosun.dev/inject": "true"}},
			ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "bosun.dev/skip", Operator: metav1.LabelSelectorOpDoesNotExist},
			}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "not-nodes", Expression: `!("system:nodes" in request.userInfo.groups)`}},
			TimeoutSeconds:  5,
			Handler:         noopHandler,
		},
		{
			Name:            "vdaemonset.kb.io",
			Path:            "/validate-apps-kruise-io-v1alpha1-daemonset",
			Type:            webhook.Validating,
			Rules:           []admissionregistrationv1.RuleWithOperations{rule("apps.kruise.io", "v1alpha1", "daemonsets", admissionregistrationv1.Create, admissionregistrationv1.Update)},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "agents", Expression: `"bosun:daemons" in request.userInfo.groups`}},
			Handler:         noopHandler,
		},
	}
}

func onlyType(regs []webhook.Registration, t webhook.Type) []webhook.Registration {
	return slices.DeleteFunc(slices.Clone(regs), func(r webhook.Registration) bool { return r.Type != t })
}

var testURLConfig = ClientConfig{URL: "https://127.0.0.1:9876"}

// caSource is a CA bundle that tests change while writers run.
type caSource struct {
	mu     sync.Mutex
	bundle []byte
	reads  int
}

func newCASource(bundle []byte) *caSource { return &caSource{bundle: bundle} }

func (s *caSource) get() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	return s.bundle
}

// readCount is how often the writer asked for the bundle.
func (s *caSource) readCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

func (s *caSource) set(bundle []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bundle = bundle
}

// newClient returns a fake clientset holding objects that, unlike the plain fake, behaves
// like the API server where concurrent writers meet: every write gets a new
// resourceVersion, an update or delete carrying a stale one fails with a Conflict, and a
// create gets a UID.
func newClient(objects ...runtime.Object) *fake.Clientset {
	client := fake.NewClientset(objects...)
	// Invokes holds the clientset's lock while reactors run, so no two of these
	// interleave.
	rv := 1000
	next := func() string {
		rv++
		return strconv.Itoa(rv)
	}
	current := func(a clienttesting.Action, name string) (metav1.Object, error) {
		obj, err := client.Tracker().Get(a.GetResource(), a.GetNamespace(), name)
		if err != nil {
			return nil, err
		}
		return meta.Accessor(obj)
	}
	conflict := func(a clienttesting.Action, name string) error {
		return apierrors.NewConflict(a.GetResource().GroupResource(), name, fmt.Errorf("the object has been modified"))
	}

	client.PrependReactor("create", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj, err := meta.Accessor(a.(clienttesting.CreateAction).GetObject())
		if err != nil {
			return true, nil, err
		}
		// A create that loses the race writes nothing, so it must not use up a
		// resourceVersion: tests count writes by them.
		if _, err := current(a, obj.GetName()); err == nil {
			return true, nil, apierrors.NewAlreadyExists(a.GetResource().GroupResource(), obj.GetName())
		}
		obj.SetResourceVersion(next())
		obj.SetUID(types.UID("uid-" + obj.GetResourceVersion()))
		return false, nil, nil
	})
	client.PrependReactor("update", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj, err := meta.Accessor(a.(clienttesting.UpdateAction).GetObject())
		if err != nil {
			return true, nil, err
		}
		live, err := current(a, obj.GetName())
		if err != nil {
			return true, nil, err
		}
		if obj.GetResourceVersion() != live.GetResourceVersion() {
			return true, nil, conflict(a, obj.GetName())
		}
		obj.SetResourceVersion(next())
		return false, nil, nil
	})
	client.PrependReactor("delete", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		del := a.(clienttesting.DeleteAction)
		pre := del.GetDeleteOptions().Preconditions
		if pre == nil {
			return false, nil, nil
		}
		live, err := current(a, del.GetName())
		if err != nil {
			return true, nil, err
		}
		if (pre.UID != nil && *pre.UID != live.GetUID()) || (pre.ResourceVersion != nil && *pre.ResourceVersion != live.GetResourceVersion()) {
			return true, nil, conflict(a, del.GetName())
		}
		return false, nil, nil
	})
	return client
}

// fixture is a writer on a real informer factory over a fake clientset. Tests call its
// sync directly unless they start it with run.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	client *fake.Clientset
	ca     *caSource
	w      *Writer
	// factory feeds w's informers.
	factory informers.SharedInformerFactory
	// mark is where writesSinceMark starts counting.
	mark int

	// The CRD part, set by newCRDFixture only: the dynamic client the CRDs live in, the
	// informers NewCRDInformers made for ConversionCRDNames, the writer's recorder, and
	// where crdWrites starts counting.
	dyn         *dynamicfake.FakeDynamicClient
	crdInformer map[string]informers.GenericInformer
	recorder    *record.FakeRecorder
	crdMark     int
}

// newFixture builds a writer of regs on a new client holding objects, with its informers
// started and synced.
func newFixture(t *testing.T, regs []webhook.Registration, clientConfig ClientConfig, ca []byte, objects ...runtime.Object) *fixture {
	t.Helper()
	return newFixtureOn(t, newClient(objects...), regs, clientConfig, newCASource(ca))
}

// newFixtureOn builds a writer, as a replica would, on an existing client. It keeps no
// CRDs.
func newFixtureOn(t *testing.T, client *fake.Clientset, regs []webhook.Registration, clientConfig ClientConfig, ca *caSource) *fixture {
	t.Helper()
	return newFixtureWith(t, client, nil, regs, clientConfig, ca)
}

// newFixtureWith builds a writer on existing clients; with dyn, it also keeps the
// conversion webhook of the CRDs named by ConversionCRDNames, which live in dyn.
func newFixtureWith(t *testing.T, client *fake.Clientset, dyn *dynamicfake.FakeDynamicClient, regs []webhook.Registration,
	clientConfig ClientConfig, ca *caSource) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)

	// The fake clientsets' informers list first and watch a moment later; a write in
	// between would never reach the cache. Tests write only once every watch is open.
	watches := 2
	watching := make(chan struct{}, 2+len(ConversionCRDNames()))
	watchReactor := func(tracker clienttesting.ObjectTracker) clienttesting.WatchReactionFunc {
		return func(a clienttesting.Action) (bool, watch.Interface, error) {
			w, err := tracker.Watch(a.GetResource(), a.GetNamespace())
			if err == nil {
				selector := a.(clienttesting.WatchAction).GetWatchRestrictions().Fields
				w = watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
					return e, e.Type == watch.Error || selectedByName(selector, e.Object)
				})
			}
			select {
			case watching <- struct{}{}:
			default:
			}
			return true, w, err
		}
	}
	client.PrependWatchReactor("*", watchReactor(client.Tracker()))
	client.PrependReactor("list", "*", listByNameReactor(client.Tracker()))
	factory := informers.NewSharedInformerFactory(client, 0)

	var crds CRDs
	var crdFactories []dynamicinformer.DynamicSharedInformerFactory
	var recorder *record.FakeRecorder
	if dyn != nil {
		dyn.PrependWatchReactor("*", watchReactor(dyn.Tracker()))
		dyn.PrependReactor("list", "*", listByNameReactor(dyn.Tracker()))
		recorder = record.NewFakeRecorder(100)
		crds.Client, crds.Recorder = dyn, recorder
		crds.Informers, crdFactories = NewCRDInformers(dyn, ConversionCRDNames())
		watches += len(crdFactories)
	}

	w, err := NewWriter(ctx, client,
		factory.Admissionregistration().V1().MutatingWebhookConfigurations(),
		factory.Admissionregistration().V1().ValidatingWebhookConfigurations(),
		crds, regs, clientConfig, ca.get)
	if err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	factory.Start(ctx.Done())
	for _, f := range crdFactories {
		f.Start(ctx.Done())
	}
	t.Cleanup(func() {
		cancel()
		w.queue.ShutDown()
		factory.Shutdown()
		for _, f := range crdFactories {
			f.Shutdown()
		}
	})
	for typ, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	for _, f := range crdFactories {
		for gvr, synced := range f.WaitForCacheSync(ctx.Done()) {
			if !synced {
				t.Fatalf("informer for %v did not sync", gvr)
			}
		}
	}
	for range watches {
		select {
		case <-watching:
		case <-time.After(wait.ForeverTestTimeout):
			t.Fatal("the informers did not start watching")
		}
	}
	return &fixture{t: t, ctx: ctx, client: client, ca: ca, w: w, factory: factory,
		dyn: dyn, crdInformer: crds.Informers, recorder: recorder}
}

// listByNameReactor answers lists as the tracker does, keeping only the objects a
// metadata.name field selector selects: the fake clients ignore field selectors, and the
// writer watches each webhook configuration and each CRD through an informer of its own,
// selected by name. Without the filter every CRD informer would deliver every CRD, each at
// its own moment.
func listByNameReactor(tracker clienttesting.ObjectTracker) clienttesting.ReactionFunc {
	all := clienttesting.ObjectReaction(tracker)
	return func(a clienttesting.Action) (bool, runtime.Object, error) {
		handled, list, err := all(a)
		if err != nil || list == nil {
			return handled, list, err
		}
		selector := a.(clienttesting.ListAction).GetListRestrictions().Fields
		items, err := meta.ExtractList(list)
		if err != nil {
			return true, nil, err
		}
		kept := slices.DeleteFunc(items, func(o runtime.Object) bool { return !selectedByName(selector, o) })
		return true, list, meta.SetList(list, kept)
	}
}

// selectedByName reports whether selector, of metadata.name alone or empty, selects obj.
func selectedByName(selector fields.Selector, obj runtime.Object) bool {
	if selector == nil || selector.Empty() {
		return true
	}
	accessor, err := meta.Accessor(obj)
	return err == nil && selector.Matches(fields.Set{"metadata.name": accessor.GetName()})
}

// run starts the writer with two workers; it stops when the test ends.
func (f *fixture) run() {
	f.t.Helper()
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.w.Run(ctx, 2)
	}()
	f.t.Cleanup(func() {
		cancel()
		<-done
	})
}

// sync syncs key and fails the test on an error.
func (f *fixture) sync(key string) {
	f.t.Helper()
	if err := f.w.sync(f.ctx, key); err != nil {
		f.t.Fatalf("sync %s: %v", key, err)
	}
}

func (f *fixture) syncBoth() {
	f.t.Helper()
	f.sync(MutatingName)
	f.sync(ValidatingName)
}

// handlerEvent is an informer event given to one of the writer's handlers, and the key it
// must queue ("" for none).
type handlerEvent struct {
	name  string
	event func()
	want  string
}

// expectQueued gives each event, in a subtest, to the writer with an empty queue and checks
// that it queued its key alone, or nothing.
func (f *fixture) expectQueued(t *testing.T, events []handlerEvent) {
	t.Helper()
	for _, tc := range events {
		t.Run(tc.name, func(t *testing.T) {
			tc.event()
			if tc.want == "" {
				if n := f.w.queue.Len(); n != 0 {
					t.Errorf("queue length %d, want nothing queued", n)
				}
				return
			}
			if n := f.w.queue.Len(); n != 1 {
				t.Fatalf("queue length %d, want 1", n)
			}
			key, _ := f.w.queue.Get()
			f.w.queue.Done(key)
			if key != tc.want {
				t.Errorf("queued %q, want %q", key, tc.want)
			}
		})
	}
}

// drainQueue takes every key out of the writer's queue, in the order they come out.
func (f *fixture) drainQueue() []string {
	var keys []string
	for f.w.queue.Len() > 0 {
		key, _ := f.w.queue.Get()
		f.w.queue.Done(key)
		keys = append(keys, key)
	}
	return keys
}

// live returns the stored configurations; nil for one that does not exist.
func (f *fixture) live() (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	f.t.Helper()
	var m *admissionregistrationv1.MutatingWebhookConfiguration
	var v *admissionregistrationv1.ValidatingWebhookConfiguration
	if obj := f.stored(mutatingResource, MutatingName); obj != nil {
		m = obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
	}
	if obj := f.stored(validatingResource, ValidatingName); obj != nil {
		v = obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
	}
	return m, v
}

// stored reads an object from the tracker, which records no action.
func (f *fixture) stored(resource schema.GroupVersionResource, name string) runtime.Object {
	f.t.Helper()
	obj, err := f.client.Tracker().Get(resource, "", name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatalf("reading %s %s: %v", resource.Resource, name, err)
	}
	return obj
}

// settle waits until the writer's caches hold what the clientset stores, so that the
// next sync sees the last write.
func (f *fixture) settle() {
	f.t.Helper()
	caches := []struct {
		resource schema.GroupVersionResource
		name     string
		get      func(name string) (metav1.Object, error)
	}{
		{mutatingResource, MutatingName, func(name string) (metav1.Object, error) {
			return f.factory.Admissionregistration().V1().MutatingWebhookConfigurations().Lister().Get(name)
		}},
		{validatingResource, ValidatingName, func(name string) (metav1.Object, error) {
			return f.factory.Admissionregistration().V1().ValidatingWebhookConfigurations().Lister().Get(name)
		}},
	}
	for _, c := range caches {
		f.eventually(fmt.Sprintf("cache of %s catches up", c.name), func() bool {
			cached, err := c.get(c.name)
			obj := f.stored(c.resource, c.name)
			if obj == nil {
				return apierrors.IsNotFound(err)
			}
			stored, _ := meta.Accessor(obj)
			return err == nil && cached.GetResourceVersion() == stored.GetResourceVersion()
		})
	}
}

// eventually polls cond until it holds, failing the test after five seconds.
func (f *fixture) eventually(what string, cond func() bool) {
	f.t.Helper()
	err := wait.PollUntilContextTimeout(f.ctx, time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		f.t.Fatalf("waiting until %s: %v", what, err)
	}
}

// writes returns the create, update and delete actions on webhook configurations since
// the last markWrites.
func (f *fixture) writes() []clienttesting.Action {
	var writes []clienttesting.Action
	for _, a := range f.client.Actions()[f.mark:] {
		switch a.GetVerb() {
		case "create", "update", "delete", "patch":
			if r := a.GetResource(); r == mutatingResource || r == validatingResource {
				writes = append(writes, a)
			}
		}
	}
	return writes
}

// markWrites makes writes count from now on.
func (f *fixture) markWrites() {
	f.mark = len(f.client.Actions())
}

// assertNoWrites fails the test if anything was written since the last markWrites.
func (f *fixture) assertNoWrites() {
	f.t.Helper()
	for _, a := range f.writes() {
		f.t.Errorf("unexpected write: %s %s", a.GetVerb(), a.GetResource().Resource)
	}
}

// editMutating changes the stored configuration through the clientset, as a user would,
// and returns what it wrote.
func (f *fixture) editMutating(change func(*admissionregistrationv1.MutatingWebhookConfiguration)) *admissionregistrationv1.MutatingWebhookConfiguration {
	f.t.Helper()
	m, _ := f.live()
	m = m.DeepCopy()
	change(m)
	edited, err := f.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(f.ctx, m, metav1.UpdateOptions{})
	if err != nil {
		f.t.Fatalf("user's update: %v", err)
	}
	return edited
}

// editValidating is editMutating for the validating configuration.
func (f *fixture) editValidating(change func(*admissionregistrationv1.ValidatingWebhookConfiguration)) {
	f.t.Helper()
	_, v := f.live()
	v = v.DeepCopy()
	change(v)
	if _, err := f.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(f.ctx, v, metav1.UpdateOptions{}); err != nil {
		f.t.Fatalf("user's update: %v", err)
	}
}

// cache puts obj into the writer's cache as if the informer had delivered it; uncache
// removes it. Tests use them to hold a cache back where a real one could lag.
func (f *fixture) cache(obj runtime.Object) {
	f.t.Helper()
	if err := f.indexer(obj).Update(obj); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) uncache(obj runtime.Object) {
	f.t.Helper()
	if err := f.indexer(obj).Delete(obj); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) indexer(obj runtime.Object) cache.Indexer {
	f.t.Helper()
	switch obj.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		return f.factory.Admissionregistration().V1().MutatingWebhookConfigurations().Informer().GetIndexer()
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		return f.factory.Admissionregistration().V1().ValidatingWebhookConfigurations().Informer().GetIndexer()
	}
	f.t.Fatalf("no cache for %T", obj)
	return nil
}

// The CRD names the tests use; all three are in ConversionCRDNames.
const (
	daemonSetsCRD = "daemonsets.apps.kruise.io"
	crrsCRD       = "containerrecreaterequests.apps.kruise.io"
	pubsCRD       = "podunavailablebudgets.policy.kruise.io"
)

// testCRD returns the CRD named name as bosun's manifests ship it: bosun's label, two
// versions with v1beta1 the storage version, strategy Webhook with the default URL and no
// caBundle, and both versions stored.
func testCRD(name string) *unstructured.Unstructured {
	plural, group, _ := strings.Cut(name, ".")
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata": map[string]any{
			"name":            name,
			"uid":             "uid-" + name,
			"resourceVersion": "7",
			"labels":          map[string]any{managedByLabel: managedByBosun, "team": "platform"},
			"annotations":     map[string]any{"controller-gen.kubebuilder.io/version": "v0.23.0"},
		},
		"spec": map[string]any{
			"group": group,
			"names": map[string]any{"plural": plural, "kind": "Thing"},
			"scope": "Namespaced",
			"conversion": map[string]any{
				"strategy": "Webhook",
				"webhook": map[string]any{
					"clientConfig":             map[string]any{"url": "https://127.0.0.1:9876/convert"},
					"conversionReviewVersions": []any{"v1"},
				},
			},
			"versions": []any{
				map[string]any{"name": "v1alpha1", "served": true, "storage": false,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
				map[string]any{"name": "v1beta1", "served": true, "storage": true,
					"schema":       map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
					"subresources": map[string]any{"status": map[string]any{}}},
			},
		},
		"status": map[string]any{
			"storedVersions": []any{"v1alpha1", "v1beta1"},
			"conditions":     []any{map[string]any{"type": "Established", "status": "True"}},
		},
	}}
	return crd
}

// with returns a copy of crd changed by change.
func with(crd *unstructured.Unstructured, change func(map[string]any)) *unstructured.Unstructured {
	crd = crd.DeepCopy()
	change(crd.Object)
	return crd
}

// setField sets the field at path of obj, failing on a path through a non-map.
func setField(obj map[string]any, value any, path ...string) {
	if err := unstructured.SetNestedField(obj, value, path...); err != nil {
		panic(err)
	}
}

// newDynamicClient is newClient for CRDs: a fake dynamic client whose updates get a new
// resourceVersion and fail with a Conflict when they carry a stale one.
func newDynamicClient(objects ...runtime.Object) *dynamicfake.FakeDynamicClient {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{crdResource: "CustomResourceDefinitionList"}, objects...)
	rv := 2000
	dyn.PrependReactor("update", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj, err := meta.Accessor(a.(clienttesting.UpdateAction).GetObject())
		if err != nil {
			return true, nil, err
		}
		stored, err := dyn.Tracker().Get(a.GetResource(), a.GetNamespace(), obj.GetName())
		if err != nil {
			return true, nil, err
		}
		live, _ := meta.Accessor(stored)
		if obj.GetResourceVersion() != live.GetResourceVersion() {
			return true, nil, apierrors.NewConflict(a.GetResource().GroupResource(), obj.GetName(), fmt.Errorf("the object has been modified"))
		}
		rv++
		obj.SetResourceVersion(strconv.Itoa(rv))
		return false, nil, nil
	})
	return dyn
}

// newCRDFixture is a fixture whose writer also keeps the conversion webhook of the CRDs in
// ConversionCRDNames, reached through clientConfig, on a dynamic client holding crds.
func newCRDFixture(t *testing.T, clientConfig ClientConfig, ca []byte, crds ...*unstructured.Unstructured) *fixture {
	t.Helper()
	objects := make([]runtime.Object, len(crds))
	for i, crd := range crds {
		objects[i] = crd
	}
	return newFixtureWith(t, newClient(), newDynamicClient(objects...), testRegistrations(), clientConfig, newCASource(ca))
}

// storedCRD reads a CRD from the tracker, which records no action; nil if it does not
// exist.
func (f *fixture) storedCRD(name string) *unstructured.Unstructured {
	f.t.Helper()
	obj, err := f.dyn.Tracker().Get(crdResource, "", name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatalf("reading CRD %s: %v", name, err)
	}
	return obj.(*unstructured.Unstructured)
}

// crdWrites returns the writes to CRDs since the last markCRDWrites.
func (f *fixture) crdWrites() []clienttesting.Action {
	var writes []clienttesting.Action
	for _, a := range f.dyn.Actions()[f.crdMark:] {
		switch a.GetVerb() {
		case "create", "update", "delete", "patch":
			writes = append(writes, a)
		}
	}
	return writes
}

func (f *fixture) markCRDWrites() {
	f.crdMark = len(f.dyn.Actions())
}

// assertNoCRDWrites fails the test if a CRD was written since the last markCRDWrites.
func (f *fixture) assertNoCRDWrites() {
	f.t.Helper()
	for _, a := range f.crdWrites() {
		f.t.Errorf("unexpected CRD write: %s %s", a.GetVerb(), a.GetSubresource())
	}
}

// syncCRD syncs the key of the CRD name and returns the error the sync returned.
func (f *fixture) syncCRD(name string) error {
	return f.w.sync(f.ctx, name)
}

// settleCRDs waits until the writer's CRD caches hold what the dynamic client stores.
func (f *fixture) settleCRDs() {
	f.t.Helper()
	for name, informer := range f.crdInformer {
		f.eventually(fmt.Sprintf("cache of CRD %s catches up", name), func() bool {
			cached, err := informer.Lister().Get(name)
			stored := f.storedCRD(name)
			if stored == nil {
				return apierrors.IsNotFound(err)
			}
			if err != nil {
				return false
			}
			c, _ := meta.Accessor(cached)
			return c.GetResourceVersion() == stored.GetResourceVersion()
		})
	}
}

// editCRD changes the stored CRD through the dynamic client, as a user would.
func (f *fixture) editCRD(name string, change func(map[string]any)) {
	f.t.Helper()
	crd := with(f.storedCRD(name), change)
	if _, err := f.dyn.Resource(crdResource).Update(f.ctx, crd, metav1.UpdateOptions{}); err != nil {
		f.t.Fatalf("user's update of CRD %s: %v", name, err)
	}
}

// events returns the events recorded since the last call, as "type reason message".
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

// clientConfigOf returns the stored CRD's spec.conversion.webhook.clientConfig.
func (f *fixture) clientConfigOf(name string) map[string]any {
	f.t.Helper()
	crd := f.storedCRD(name)
	if crd == nil {
		f.t.Fatalf("CRD %s does not exist", name)
	}
	config, _, err := unstructured.NestedMap(crd.Object, "spec", "conversion", "webhook", "clientConfig")
	if err != nil {
		f.t.Fatal(err)
	}
	return config
}
