package workload

import (
	"context"
	"fmt"

	kruiseappslisters "github.com/bosun-dev/client-go/listers/apps/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/scale"
	"k8s.io/klog/v2"
)

// Workload is what a budget needs to know about an object that controls pods.
type Workload struct {
	// APIVersion and Kind are the ones the object was read with (for the cached kinds,
	// always the version bosun caches), not necessarily those of the reference.
	APIVersion, Kind, Namespace, Name string
	UID                               types.UID

	// Replicas is the number of pods the workload expects; meaningful only with HasReplicas.
	Replicas int32
	// HasReplicas is false for kinds without a replica count: those without a /scale
	// subresource, and Advanced DaemonSets unless WithDaemonSetReplicas is on.
	HasReplicas bool
	// Selector selects the workload's pods; nil when the workload does not say.
	Selector labels.Selector
	// Deleting is set once the workload has a deletion timestamp.
	Deleting bool
	// Controller is the workload's own controller reference, if any (a copy).
	Controller *metav1.OwnerReference
	// ControllerGone is set by Chain, on the workload it ends with, when the chain ended
	// because Controller names an object that is gone (or re-created, or of a kind the API
	// server does not serve): the garbage collector is about to delete the workload with its
	// pods, or to drop the reference. Get never sets it.
	ControllerGone bool
}

// GroupKind returns the workload's API group and kind, the pair references are matched by.
func (w *Workload) GroupKind() schema.GroupKind {
	return groupKindOf(w.APIVersion, w.Kind)
}

// Listers are the informer caches the cached kinds are read from. A nil lister makes its
// kind be read live like any other kind; DaemonSets is nil when the API server does not
// serve apps.kruise.io/v1beta1 DaemonSets (read live, an Advanced DaemonSet has no replica
// count even with WithDaemonSetReplicas, as its status is not read).
type Listers struct {
	ReplicaSets            appslisters.ReplicaSetLister
	Deployments            appslisters.DeploymentLister
	StatefulSets           appslisters.StatefulSetLister
	ReplicationControllers corelisters.ReplicationControllerLister
	DaemonSets             kruiseappslisters.DaemonSetLister
}

// Finder looks workloads up. It keeps no state of its own and is safe for concurrent use.
type Finder struct {
	listers  Listers
	scales   scale.ScalesGetter
	metadata metadata.Interface
	mapper   meta.RESTMapper

	ownerChain        bool
	daemonSetReplicas bool
}

// Option changes how a Finder answers.
type Option func(*Finder)

// WithOwnerChain makes CountingOwner and Chain follow controller references to the top
// instead of stopping at a Deployment-owned ReplicaSet's Deployment (feature gate
// PodUnavailableBudgetOwnerChain).
func WithOwnerChain(on bool) Option {
	return func(f *Finder) { f.ownerChain = on }
}

// WithDaemonSetReplicas gives Advanced DaemonSets a replica count, the number of nodes that
// should run their pod (feature gate PodUnavailableBudgetDaemonSetReplicas). Off, they have
// none, as they have no /scale subresource.
func WithDaemonSetReplicas(on bool) Option {
	return func(f *Finder) { f.daemonSetReplicas = on }
}

// NewFinder returns a Finder reading the cached kinds from listers and every other kind
// through metadata, scales and mapper.
func NewFinder(listers Listers, scales scale.ScalesGetter, metadata metadata.Interface, mapper meta.RESTMapper, opts ...Option) *Finder {
	f := &Finder{listers: listers, scales: scales, metadata: metadata, mapper: mapper}
	for _, opt := range opts {
		opt(f)
	}
	return f
}

// Get looks up the workload named by ref (apiVersion, kind and name) in namespace; a
// cluster-scoped kind ignores the namespace. It returns nil, nil when there is no such
// workload, when its kind is not served, and when ref carries a UID and the object found
// has another one: the reference is to an earlier object of the same name.
func (f *Finder) Get(ctx context.Context, namespace string, ref metav1.OwnerReference) (*Workload, error) {
	w, _, err := f.get(ctx, namespace, ref, false)
	return w, err
}

// get is Get. With cachedOnly, a reference to a kind that is not read from a lister is
// left unread and reported as uncached.
func (f *Finder) get(ctx context.Context, namespace string, ref metav1.OwnerReference, cachedOnly bool) (w *Workload, uncached bool, err error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, false, fmt.Errorf("looking up %s %s: parsing apiVersion: %w", ref.Kind, klog.KRef(namespace, ref.Name), err)
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	w, cached, err := f.fromCache(namespace, gk, ref.Name)
	if !cached {
		if cachedOnly {
			return nil, true, nil
		}
		w, err = f.live(ctx, namespace, gk, gv.Version, ref.Name)
	}
	if err != nil || w == nil {
		return nil, false, err
	}
	if ref.UID != "" && w.UID != ref.UID {
		klog.FromContext(ctx).V(4).Info("Owner reference is to an earlier object of the same name",
			"kind", gk, "workload", klog.KRef(w.Namespace, w.Name), "referencedUID", ref.UID, "uid", w.UID)
		return nil, false, nil
	}
	return w, false, nil
}

// newWorkload fills in what every kind has in its object metadata.
func newWorkload(gvk schema.GroupVersionKind, obj metav1.Object) *Workload {
	return &Workload{
		APIVersion: gvk.GroupVersion().String(),
		Kind:       gvk.Kind,
		Namespace:  obj.GetNamespace(),
		Name:       obj.GetName(),
		UID:        obj.GetUID(),
		Deleting:   obj.GetDeletionTimestamp() != nil,
		Controller: metav1.GetControllerOf(obj),
	}
}

// groupKindOf returns the group and kind that apiVersion and kind name. It is used only on
// references the API server has validated, so an apiVersion that does not parse (and would
// yield the core group) does not occur.
func groupKindOf(apiVersion, kind string) schema.GroupKind {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return schema.GroupKind{Group: gv.Group, Kind: kind}
}
