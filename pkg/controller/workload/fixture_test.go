package workload

import (
	"context"
	"testing"

	kruiseappsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	kruiseappslisters "github.com/bosun-dev/client-go/listers/apps/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	metadatafake "k8s.io/client-go/metadata/fake"
	scalefake "k8s.io/client-go/scale/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
)

const ns = "default"

// Kinds bosun does not cache, served by the test API server.
var (
	rolloutKind = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"}
	widgetKind  = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	nodeKind    = corev1.SchemeGroupVersion.WithKind("Node")
)

// cluster is what the test API server and the informer caches hold.
type cluster struct {
	// cached objects are put in the informer indexers (ReplicaSets, Deployments,
	// StatefulSets, ReplicationControllers, Advanced DaemonSets).
	cached []runtime.Object
	// live objects are served by the metadata client.
	live []*metav1.PartialObjectMetadata
	// scales are the /scale answers, by "resource/name"; any other scale is NotFound.
	scales map[string]scaleAnswer
	// noDaemonSetLister leaves Listers.DaemonSets nil, as when apps.kruise.io is not served.
	noDaemonSetLister bool
}

type scaleAnswer struct {
	scale *autoscalingv1.Scale
	err   error
}

type fixture struct {
	ctx      context.Context
	finder   *Finder
	metadata *metadatafake.FakeMetadataClient
	scales   *scalefake.FakeScaleClient
}

// newFixture builds a Finder over c, with opts.
func newFixture(t *testing.T, c cluster, opts ...Option) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)

	indexer := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	rs, d, ss, rc, ds := indexer(), indexer(), indexer(), indexer(), indexer()
	for _, obj := range c.cached {
		var into cache.Indexer
		switch obj.(type) {
		case *appsv1.ReplicaSet:
			into = rs
		case *appsv1.Deployment:
			into = d
		case *appsv1.StatefulSet:
			into = ss
		case *corev1.ReplicationController:
			into = rc
		case *kruiseappsv1beta1.DaemonSet:
			into = ds
		default:
			t.Fatalf("no informer caches %T", obj)
		}
		if err := into.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	listers := Listers{
		ReplicaSets:            appslisters.NewReplicaSetLister(rs),
		Deployments:            appslisters.NewDeploymentLister(d),
		StatefulSets:           appslisters.NewStatefulSetLister(ss),
		ReplicationControllers: corelisters.NewReplicationControllerLister(rc),
		DaemonSets:             kruiseappslisters.NewDaemonSetLister(ds),
	}
	if c.noDaemonSetLister {
		listers.DaemonSets = nil
	}

	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var live []runtime.Object
	for _, obj := range c.live {
		live = append(live, obj.DeepCopy())
	}
	md := metadatafake.NewSimpleMetadataClient(scheme, live...)

	scales := &scalefake.FakeScaleClient{}
	scales.AddReactor("get", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		get := action.(clienttesting.GetAction)
		if answer, ok := c.scales[get.GetResource().Resource+"/"+get.GetName()]; ok {
			return true, answer.scale, answer.err
		}
		return true, nil, apierrors.NewNotFound(get.GetResource().GroupResource(), get.GetName())
	})

	return &fixture{
		ctx:      ctx,
		finder:   NewFinder(listers, scales, md, testMapper(), opts...),
		metadata: md,
		scales:   scales,
	}
}

// testMapper knows the cached kinds, the live test kinds and the cluster-scoped Node. Each
// group's only version is its preferred one, as a discovery-based mapper would say.
func testMapper() meta.RESTMapper {
	namespaced := []schema.GroupVersionKind{
		appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
		appsv1.SchemeGroupVersion.WithKind("Deployment"),
		appsv1.SchemeGroupVersion.WithKind("StatefulSet"),
		corev1.SchemeGroupVersion.WithKind("ReplicationController"),
		kruiseappsv1beta1.SchemeGroupVersion.WithKind("DaemonSet"),
		rolloutKind,
		widgetKind,
	}
	var preferred []schema.GroupVersion
	for _, gvk := range append(namespaced, nodeKind) {
		preferred = append(preferred, gvk.GroupVersion())
	}
	mapper := meta.NewDefaultRESTMapper(preferred)
	for _, gvk := range namespaced {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	mapper.Add(nodeKind, meta.RESTScopeRoot)
	return mapper
}

// objectMeta is the metadata of a test object in ns, controlled by controller (may be nil).
func objectMeta(name string, uid types.UID, controller *metav1.OwnerReference) metav1.ObjectMeta {
	om := metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid}
	if controller != nil {
		om.OwnerReferences = []metav1.OwnerReference{*controller}
	}
	return om
}

// controllerRef is a controller reference to kind/name with uid.
func controllerRef(gvk schema.GroupVersionKind, name string, uid types.UID) *metav1.OwnerReference {
	isController := true
	return &metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: name, UID: uid, Controller: &isController}
}

// liveObject is a live object of kind gvk in ns (or cluster-scoped for a Node).
func liveObject(gvk schema.GroupVersionKind, name string, uid types.UID, controller *metav1.OwnerReference) *metav1.PartialObjectMetadata {
	om := objectMeta(name, uid, controller)
	if gvk == nodeKind {
		om.Namespace = ""
	}
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}, ObjectMeta: om}
}

// scaleOf is a /scale answer.
func scaleOf(replicas int32, selector string) scaleAnswer {
	return scaleAnswer{scale: &autoscalingv1.Scale{
		Spec:   autoscalingv1.ScaleSpec{Replicas: replicas},
		Status: autoscalingv1.ScaleStatus{Selector: selector},
	}}
}

// view is a Workload in comparable form (selectors as strings, "<nil>" for none).
type view struct {
	APIVersion, Kind, Namespace, Name string
	UID                               types.UID
	Replicas                          int32
	HasReplicas                       bool
	Selector                          string
	Deleting                          bool
	Controller                        *metav1.OwnerReference
	ControllerGone                    bool
}

func viewOf(w *Workload) *view {
	if w == nil {
		return nil
	}
	v := &view{
		APIVersion: w.APIVersion, Kind: w.Kind, Namespace: w.Namespace, Name: w.Name, UID: w.UID,
		Replicas: w.Replicas, HasReplicas: w.HasReplicas, Selector: "<nil>", Deleting: w.Deleting, Controller: w.Controller,
		ControllerGone: w.ControllerGone,
	}
	if w.Selector != nil {
		v.Selector = w.Selector.String()
	}
	return v
}

// names lists a chain as "Kind/name".
func names(chain []*Workload) []string {
	var out []string
	for _, w := range chain {
		out = append(out, w.Kind+"/"+w.Name)
	}
	return out
}
