package workload

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// maxChainLength bounds the controller chain: real ones have two or three links, and the
// bound keeps a pathological chain from costing a pod webhook call unbounded API reads.
const maxChainLength = 10

// CountingOwner returns the workload whose replica count covers an object controlled by
// ref: the last workload of Chain. It returns nil, nil when ref is nil or its workload is
// gone. An owner marked ControllerGone is on its way out with its pods, so its own replica
// count says nothing about how many pods are expected.
func (f *Finder) CountingOwner(ctx context.Context, namespace string, ref *metav1.OwnerReference) (*Workload, error) {
	chain, err := f.Chain(ctx, namespace, ref)
	if err != nil || len(chain) == 0 {
		return nil, err
	}
	return chain[len(chain)-1], nil
}

// Chain returns ref's workload followed by the controllers above it, nearest first. With
// WithOwnerChain it follows controller references to the top, at most maxChainLength
// workloads, stopping before a workload already in the chain. Without it, it follows only
// a ReplicaSet's reference to its Deployment. A controller that is gone (or re-created)
// ends the chain at the workload that names it, which is then marked ControllerGone. It
// returns nil, nil when ref is nil or its own workload is gone.
func (f *Finder) Chain(ctx context.Context, namespace string, ref *metav1.OwnerReference) ([]*Workload, error) {
	chain, _, err := f.walk(ctx, namespace, ref, false)
	return chain, err
}

// CachedChain is Chain read from the informer caches alone, for callers that must not wait
// on the API server, such as informer event handlers. It walks the chain as Chain does
// while the workloads are of the cached kinds; at the first reference to a kind Chain would
// read live it stops and returns that reference as beyond (a copy), unread: whether its
// object exists, and what is above it, only Chain can tell. beyond is nil when the caches
// hold the whole chain, which without WithOwnerChain is so whenever ref is to a cached
// kind (a ReplicaSet's Deployment is cached too). ref itself may be beyond, with an empty
// chain.
func (f *Finder) CachedChain(ctx context.Context, namespace string, ref *metav1.OwnerReference) (chain []*Workload, beyond *metav1.OwnerReference, err error) {
	return f.walk(ctx, namespace, ref, true)
}

// walk is Chain; with cachedOnly it is CachedChain.
func (f *Finder) walk(ctx context.Context, namespace string, ref *metav1.OwnerReference, cachedOnly bool) ([]*Workload, *metav1.OwnerReference, error) {
	if ref == nil {
		return nil, nil, nil
	}
	first, uncached, err := f.get(ctx, namespace, *ref, cachedOnly)
	if uncached {
		return nil, ref.DeepCopy(), nil
	}
	if err != nil || first == nil {
		return nil, nil, err
	}
	chain := []*Workload{first}
	for len(chain) < maxChainLength {
		last := chain[len(chain)-1]
		next := f.nextLink(last)
		if next == nil {
			break
		}
		if inChain(chain, next) {
			klog.FromContext(ctx).V(4).Info("Controller references form a cycle; the chain stops before it repeats",
				"workload", klog.KRef(last.Namespace, last.Name), "kind", last.GroupKind(), "controller", next.Name)
			break
		}
		w, uncached, err := f.get(ctx, namespace, *next, cachedOnly)
		if uncached {
			return chain, next.DeepCopy(), nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("following the controller of %s %s: %w", last.GroupKind(), klog.KRef(last.Namespace, last.Name), err)
		}
		if w == nil {
			last.ControllerGone = true
			break
		}
		chain = append(chain, w)
	}
	return chain, nil, nil
}

// nextLink returns the controller reference the chain continues with after last, nil
// when it ends there.
func (f *Finder) nextLink(last *Workload) *metav1.OwnerReference {
	if last.Controller == nil {
		return nil
	}
	if f.ownerChain {
		return last.Controller
	}
	// A Deployment spreads its replicas over its ReplicaSets during a rollout, so their pods
	// are counted against the Deployment; no other link is followed (and a Deployment is
	// not a ReplicaSet, so the chain ends there).
	isReplicaSet := last.GroupKind() == schema.GroupKind{Group: appsv1.GroupName, Kind: kindReplicaSet}
	controlledByDeployment := groupKindOf(last.Controller.APIVersion, last.Controller.Kind) == schema.GroupKind{Group: appsv1.GroupName, Kind: kindDeployment}
	if isReplicaSet && controlledByDeployment {
		return last.Controller
	}
	return nil
}

// inChain reports whether ref names a workload already in chain, by group, kind and name:
// controller references never leave the namespace, so those identify it.
func inChain(chain []*Workload, ref *metav1.OwnerReference) bool {
	gk := groupKindOf(ref.APIVersion, ref.Kind)
	for _, w := range chain {
		if w.GroupKind() == gk && w.Name == ref.Name {
			return true
		}
	}
	return false
}
