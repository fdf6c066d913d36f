package garbagecollector

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/gcgraph"
	"github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/options"
)

const testNamespace = "ns"

// Kinds the tests use; testMapper knows all of them.
var (
	podKind         = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	configMapKind   = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	secretKind      = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	pvKind          = schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolume"}
	replicaSetKind  = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}
	deploymentKind  = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	clusterRoleKind = schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}
	widgetKind      = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
)

// resettableMapper is a static REST mapper that counts resets.
type resettableMapper struct {
	meta.RESTMapper
	resets atomic.Int32
}

func (m *resettableMapper) Reset() { m.resets.Add(1) }

func testMapper() *resettableMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, k := range []schema.GroupVersionKind{podKind, configMapKind, secretKind, replicaSetKind, deploymentKind, widgetKind} {
		m.Add(k, meta.RESTScopeNamespace)
	}
	for _, k := range []schema.GroupVersionKind{pvKind, clusterRoleKind} {
		m.Add(k, meta.RESTScopeRoot)
	}
	return &resettableMapper{RESTMapper: m}
}

// fakeDiscovery answers ServerPreferredResources with lists and err.
type fakeDiscovery struct {
	mu    sync.Mutex
	lists []*metav1.APIResourceList
	err   error
}

func (d *fakeDiscovery) set(err error, lists ...*metav1.APIResourceList) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lists, d.err = lists, err
}

func (d *fakeDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lists, d.err
}

func (d *fakeDiscovery) ServerResourcesForGroupVersion(string) (*metav1.APIResourceList, error) {
	return nil, nil
}

func (d *fakeDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	return nil, nil, nil
}

func (d *fakeDiscovery) ServerPreferredNamespacedResources() ([]*metav1.APIResourceList, error) {
	return nil, nil
}

// resourceList is one discovery group version; resources are "name:Kind".
func resourceList(groupVersion string, resources ...string) *metav1.APIResourceList {
	list := &metav1.APIResourceList{GroupVersion: groupVersion}
	for _, r := range resources {
		name, kind, _ := strings.Cut(r, ":")
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: name, Kind: kind, Namespaced: true,
			Verbs: metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"},
		})
	}
	return list
}

// recordingQueue remembers every item added, directly or rate-limited.
type recordingQueue[T comparable] struct {
	workqueue.TypedRateLimitingInterface[T]
	mu          sync.Mutex
	added       []T
	rateLimited []T
}

func (q *recordingQueue[T]) Add(item T) {
	q.mu.Lock()
	q.added = append(q.added, item)
	q.mu.Unlock()
	q.TypedRateLimitingInterface.Add(item)
}

func (q *recordingQueue[T]) AddRateLimited(item T) {
	q.mu.Lock()
	q.rateLimited = append(q.rateLimited, item)
	q.mu.Unlock()
	q.TypedRateLimitingInterface.AddRateLimited(item)
}

// take returns and forgets what was added so far.
func (q *recordingQueue[T]) take() (added, rateLimited []T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	added, rateLimited = q.added, q.rateLimited
	q.added, q.rateLimited = nil, nil
	return added, rateLimited
}

// fixture is a collector on a fake metadata client, a static REST mapper and a fake
// discovery, with recording queues. Tests drive the graph builder and the workers
// directly.
type fixture struct {
	t         *testing.T
	ctx       context.Context
	client    *metadatafake.FakeMetadataClient
	recorder  *record.FakeRecorder
	mapper    *resettableMapper
	discovery *fakeDiscovery
	c         *Controller
	changes   *recordingQueue[*graphChange]
	deletes   *recordingQueue[*gcgraph.Node]
	orphans   *recordingQueue[*gcgraph.Node]
	// informersStarted is the collector's signal that the process has started its
	// informers; nothing closes it unless a test does.
	informersStarted chan struct{}
}

// fixtureOptions change how newFixtureWith builds the collector.
type fixtureOptions struct {
	// sharedInformers looks up other controllers' informers; nil: there are none.
	sharedInformers SharedInformerLookup
	// opts come after the fixture's own options.
	opts []options.Option
}

// newFixture builds a collector whose API server holds objects.
func newFixture(t *testing.T, objects ...*metav1.PartialObjectMetadata) *fixture {
	t.Helper()
	return newFixtureWith(t, fixtureOptions{}, objects...)
}

// newFixtureWith is newFixture with the collector built as fo says.
func newFixtureWith(t *testing.T, fo fixtureOptions, objects ...*metav1.PartialObjectMetadata) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var objs []runtime.Object
	for _, o := range objects {
		objs = append(objs, o.DeepCopy())
	}
	client := metadatafake.NewSimpleMetadataClient(scheme, objs...)
	f := &fixture{
		t: t, ctx: ctx, client: client,
		recorder:         record.NewFakeRecorder(100),
		mapper:           testMapper(),
		discovery:        &fakeDiscovery{},
		informersStarted: make(chan struct{}),
	}
	recordQueues := withQueueWrappers(queueWrappers{
		graphChanges: func(q workqueue.TypedRateLimitingInterface[*graphChange]) workqueue.TypedRateLimitingInterface[*graphChange] {
			f.changes = &recordingQueue[*graphChange]{TypedRateLimitingInterface: q}
			return f.changes
		},
		attemptToDelete: func(q workqueue.TypedRateLimitingInterface[*gcgraph.Node]) workqueue.TypedRateLimitingInterface[*gcgraph.Node] {
			f.deletes = &recordingQueue[*gcgraph.Node]{TypedRateLimitingInterface: q}
			return f.deletes
		},
		attemptToOrphan: func(q workqueue.TypedRateLimitingInterface[*gcgraph.Node]) workqueue.TypedRateLimitingInterface[*gcgraph.Node] {
			f.orphans = &recordingQueue[*gcgraph.Node]{TypedRateLimitingInterface: q}
			return f.orphans
		},
	})
	c, err := NewController(ctx, informers.NewMetadataInformerFactory(client, 0), fo.sharedInformers, f.informersStarted,
		client, f.discovery, f.mapper, f.recorder, nil, append([]options.Option{recordQueues}, fo.opts...)...)
	if err != nil {
		t.Fatalf("NewController: %v", err)
	}
	t.Cleanup(c.shutDownQueues)
	f.c = c
	return f
}

// observe feeds an informer event about obj to the graph builder.
func (f *fixture) observe(typ changeType, obj *metav1.PartialObjectMetadata) {
	f.t.Helper()
	if err := f.c.processGraphChange(f.ctx, &graphChange{typ: typ, obj: obj.DeepCopy(), kind: obj.GroupVersionKind()}); err != nil {
		f.t.Fatal(err)
	}
}

// observeAll adds objs to the graph, in order, and forgets what that queued.
func (f *fixture) observeAll(objs ...*metav1.PartialObjectMetadata) {
	f.t.Helper()
	for _, o := range objs {
		f.observe(objectAdded, o)
	}
	f.deletes.take()
	f.orphans.take()
	f.changes.take()
}

// node returns the graph's node for uid.
func (f *fixture) node(uid types.UID) *gcgraph.Node {
	f.t.Helper()
	n, ok := f.c.graph.Read(uid)
	if !ok {
		f.t.Fatalf("no node for %s", uid)
	}
	return n
}

// writes describes the patch and delete requests sent so far, in order.
func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.client.Actions() {
		where := a.GetNamespace() + "/"
		switch a := a.(type) {
		case clienttesting.PatchAction:
			out = append(out, fmt.Sprintf("patch %s %s%s %s %s", a.GetResource().Resource, where, a.GetName(), a.GetPatchType(), a.GetPatch()))
		case clienttesting.DeleteAction:
			opts := a.GetDeleteOptions()
			desc := fmt.Sprintf("delete %s %s%s policy=%s", a.GetResource().Resource, where, a.GetName(), ptr.Deref(opts.PropagationPolicy, ""))
			if p := opts.Preconditions; p != nil {
				desc += fmt.Sprintf(" uid=%s rv=%s", ptr.Deref(p.UID, ""), ptr.Deref(p.ResourceVersion, "<none>"))
			}
			out = append(out, desc)
		}
	}
	return out
}

// gets lists the GET requests sent so far as "resource namespace/name".
func (f *fixture) gets() []string {
	var out []string
	for _, a := range f.client.Actions() {
		if g, ok := a.(clienttesting.GetAction); ok {
			out = append(out, fmt.Sprintf("%s %s/%s", g.GetResource().Resource, g.GetNamespace(), g.GetName()))
		}
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

// uids returns the UIDs of nodes, sorted; nil for none.
func uids(nodes []*gcgraph.Node) []types.UID {
	var out []types.UID
	for _, n := range nodes {
		out = append(out, n.Identity().UID)
	}
	slices.Sort(out)
	return out
}

// object builds the metadata of an object of kind.
func object(kind schema.GroupVersionKind, namespace, name string, uid types.UID, mutate ...func(*metav1.PartialObjectMetadata)) *metav1.PartialObjectMetadata {
	apiVersion, k := kind.ToAPIVersionAndKind()
	o := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersion, Kind: k},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: uid, ResourceVersion: "1"},
	}
	for _, m := range mutate {
		m(o)
	}
	return o
}

// ref returns a reference to owner, blocking or not (nil when block is nil).
func ref(owner *metav1.PartialObjectMetadata, block *bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: owner.APIVersion, Kind: owner.Kind, Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: block}
}

func blocking(owner *metav1.PartialObjectMetadata) metav1.OwnerReference {
	return ref(owner, ptr.To(true))
}

func ownedBy(refs ...metav1.OwnerReference) func(*metav1.PartialObjectMetadata) {
	return func(o *metav1.PartialObjectMetadata) { o.OwnerReferences = refs }
}

func withFinalizers(finalizers ...string) func(*metav1.PartialObjectMetadata) {
	return func(o *metav1.PartialObjectMetadata) { o.Finalizers = finalizers }
}

// deleting marks the object deleted (deletionTimestamp) while finalizers hold it.
func deleting(finalizers ...string) func(*metav1.PartialObjectMetadata) {
	return func(o *metav1.PartialObjectMetadata) {
		o.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
		o.Finalizers = finalizers
	}
}

func withResourceVersion(rv string) func(*metav1.PartialObjectMetadata) {
	return func(o *metav1.PartialObjectMetadata) { o.ResourceVersion = rv }
}
