package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/gcgraph"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/controller/refmanager"
)

var (
	// errVirtualDeleteRaised ends an attempt that found its object gone: the graph
	// builder takes it from there.
	errVirtualDeleteRaised = errors.New("object not found; handed to the graph builder as deleted")
	// errClusterScopedChild ends an attempt for good: a cluster-scoped object names a
	// namespaced kind as its owner (or a virtual owner of a namespaced kind was named
	// only by cluster-scoped objects). No such owner can exist, and retrying would only
	// repeat the same requests.
	errClusterScopedChild = errors.New("a cluster-scoped object cannot have a namespaced owner")
)

// attemptToDeleteWorker handles one item of attempt-to-delete.
func (c *Controller) attemptToDeleteWorker(ctx context.Context, n *gcgraph.Node) error {
	logger := klog.FromContext(ctx).WithValues("item", n.Identity(), "virtual", n.Virtual())
	ctx = klog.NewContext(ctx, logger)
	if n.Virtual() {
		// The graph may have moved on: the owner observed since (the node was replaced),
		// or removed by a virtual delete.
		if current, ok := c.graph.Read(n.Identity().UID); !ok || !current.Virtual() {
			return nil
		}
	}
	err := c.attemptToDeleteItem(ctx, n)
	switch {
	case errors.Is(err, errVirtualDeleteRaised):
		return nil
	case errors.Is(err, errClusterScopedChild):
		logger.V(2).Info("Not collecting: cluster-scoped object with a namespaced owner", "err", err)
		return nil
	case meta.IsNoMatchError(err):
		// A kind the API server does not serve (yet): a custom resource not installed, or
		// a typo in a reference. Check again later without an error on every retry.
		return fmt.Errorf("%w: %w", queue.ErrRequeue, err)
	case err != nil:
		return fmt.Errorf("attempting to delete %s: %w", n.Identity(), err)
	case n.Virtual():
		// The owner exists but its informer has not shown it yet: poll until it does, or
		// until it is gone.
		return fmt.Errorf("%w: owner exists but has not been observed yet", queue.ErrRequeue)
	}
	return nil
}

// attemptToDeleteItem decides the fate of n's object: nothing, removing owner references
// that are dangling or waiting for foreground deletion, or deleting it.
func (c *Controller) attemptToDeleteItem(ctx context.Context, n *gcgraph.Node) error {
	logger := klog.FromContext(ctx)
	if n.BeingDeleted() && !n.DeletingDependents() {
		// Deletion is under way and nothing waits on the collector; the final delete event
		// removes the node.
		return nil
	}
	id := n.Identity()
	latest, err := c.getObject(ctx, id)
	switch {
	case apierrors.IsNotFound(err):
		logger.V(5).Info("Object not found; raising a virtual delete")
		c.raiseVirtualDelete(id)
		return errVirtualDeleteRaised
	case err != nil:
		return err
	case latest.UID != id.UID:
		logger.V(5).Info("Object replaced by another with the same name; raising a virtual delete", "currentUID", latest.UID)
		c.raiseVirtualDelete(id)
		return errVirtualDeleteRaised
	}

	if n.DeletingDependents() {
		return c.finishForegroundDeletion(ctx, n)
	}
	refs := latest.GetOwnerReferences()
	if len(refs) == 0 {
		return nil
	}
	verdict, err := c.classifyReferences(ctx, id, refs)
	if err != nil {
		return err
	}
	logger.V(5).Info("Classified owner references", "solid", len(verdict.solid), "dangling", len(verdict.dangling), "waiting", len(verdict.waiting))

	switch {
	case len(verdict.solid) > 0:
		if len(verdict.dangling) == 0 && len(verdict.waiting) == 0 {
			return nil
		}
		// The object stays with its solid owners; the others must not keep it (dangling)
		// or wait for it (waiting for their foreground deletion).
		var uids []types.UID
		for _, ref := range append(verdict.dangling, verdict.waiting...) {
			uids = append(uids, ref.UID)
		}
		logger.V(2).Info("Removing references to owners that are gone or being deleted in the foreground", "owners", uids)
		body, err := refmanager.ReleasePatch(id.UID, uids)
		if err != nil {
			return err
		}
		return c.patchOwnerRefs(ctx, id, body, func(obj metav1.Object) ([]byte, error) {
			return refmanager.ReleaseMergePatch(obj, uids)
		})
	case len(verdict.waiting) > 0 && n.DependentsCount() > 0:
		for _, dep := range n.Dependents() {
			if dep.DeletingDependents() {
				// A dependent waits for its own dependents while an owner waits for this
				// object: possibly a cycle. Stop blocking the owners, so that whichever
				// waits here cannot wait forever.
				logger.V(2).Info("Owner and dependent both delete in the foreground; unblocking the owners to break a possible cycle", "dependent", dep.Identity())
				if err := c.unblockOwnerRefs(ctx, id, refs); err != nil {
					return err
				}
				break
			}
		}
		// Dependents of this object go first: an owner waits for it in the foreground.
		return c.deleteObject(ctx, id, latest, metav1.DeletePropagationForeground)
	default:
		return c.deleteObject(ctx, id, latest, propagationFor(latest))
	}
}

// propagationFor returns the propagation policy that keeps what the object's own
// finalizers ask for: orphan its dependents, delete them first, or (by default) in the
// background.
func propagationFor(obj metav1.Object) metav1.DeletionPropagation {
	switch {
	case hasFinalizer(obj, metav1.FinalizerOrphanDependents):
		return metav1.DeletePropagationOrphan
	case hasFinalizer(obj, metav1.FinalizerDeleteDependents):
		return metav1.DeletePropagationForeground
	default:
		return metav1.DeletePropagationBackground
	}
}

// finishForegroundDeletion removes foregroundDeletion from n's object once no dependent
// blocks it, and otherwise makes sure every blocking dependent is being deleted.
func (c *Controller) finishForegroundDeletion(ctx context.Context, n *gcgraph.Node) error {
	blocking := n.BlockingDependents()
	if len(blocking) == 0 {
		klog.FromContext(ctx).V(2).Info("No dependent blocks the owner any more; removing its foregroundDeletion finalizer")
		return c.removeFinalizer(ctx, n.Identity(), metav1.FinalizerDeleteDependents)
	}
	for _, dep := range blocking {
		if !dep.DeletingDependents() {
			c.attemptToDelete.Add(dep)
		}
	}
	return nil
}

// referenceVerdict sorts an object's owner references.
type referenceVerdict struct {
	// solid owners exist and are not being deleted in the foreground.
	solid []metav1.OwnerReference
	// dangling owners do not exist (or were replaced under the same name).
	dangling []metav1.OwnerReference
	// waiting owners are being deleted in the foreground: they wait for this object.
	waiting []metav1.OwnerReference
}

// classifyReferences sorts the owner references of the object id.
func (c *Controller) classifyReferences(ctx context.Context, id gcgraph.Identity, refs []metav1.OwnerReference) (referenceVerdict, error) {
	var v referenceVerdict
	for _, ref := range refs {
		owner, dangling, err := c.lookUpOwner(ctx, id, ref)
		switch {
		case err != nil:
			return referenceVerdict{}, err
		case dangling:
			v.dangling = append(v.dangling, ref)
		case owner.GetDeletionTimestamp() != nil && hasFinalizer(owner, metav1.FinalizerDeleteDependents):
			v.waiting = append(v.waiting, ref)
		default:
			v.solid = append(v.solid, ref)
		}
	}
	return v, nil
}

// lookUpOwner finds the owner ref names for the object id: from the absent-owner cache,
// else by a live GET, which it caches when the owner is absent.
func (c *Controller) lookUpOwner(ctx context.Context, id gcgraph.Identity, ref metav1.OwnerReference) (owner metav1.Object, dangling bool, err error) {
	if c.absentOwners.Has(gcgraph.IdentityFromRef(ref, "")) || c.absentOwners.Has(gcgraph.IdentityFromRef(ref, id.Namespace)) {
		klog.FromContext(ctx).V(5).Info("Owner known to be absent", "owner", ref.UID)
		return nil, true, nil
	}
	resource, namespaced, err := c.resourceFor(ref.APIVersion, ref.Kind)
	if err != nil {
		return nil, false, err
	}
	if namespaced && id.Namespace == "" {
		return nil, false, errClusterScopedChild
	}
	absent := gcgraph.IdentityFromRef(ref, "")
	if namespaced {
		absent.Namespace = id.Namespace
	}
	live, err := c.resourceClient(resource, absent.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.absentOwners.Add(absent)
		return nil, true, nil
	case err != nil:
		return nil, false, fmt.Errorf("getting owner %s: %w", absent, err)
	case live.UID != ref.UID:
		c.absentOwners.Add(absent)
		return nil, true, nil
	}
	return live, false, nil
}

// deleteObject deletes the object id with policy, on the condition that it is still the
// one read (UID and resourceVersion of latest). When only the resourceVersion moved and
// the owner references are those the decision was taken on, it retries with the UID
// condition alone, so that an object updated often (status) can still be collected.
func (c *Controller) deleteObject(ctx context.Context, id gcgraph.Identity, latest *metav1.PartialObjectMetadata, policy metav1.DeletionPropagation) error {
	resource, namespaced, err := c.resourceFor(id.APIVersion, id.Kind)
	if err != nil {
		return err
	}
	client := c.resourceClient(resource, namespaceIf(namespaced, id.Namespace))
	uid, resourceVersion := id.UID, latest.ResourceVersion
	options := metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &uid, ResourceVersion: &resourceVersion},
		PropagationPolicy: &policy,
	}
	klog.FromContext(ctx).V(2).Info("Deleting object", "propagationPolicy", policy)
	err = client.Delete(ctx, id.Name, options)
	if apierrors.IsConflict(err) {
		current, getErr := client.Get(ctx, id.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(getErr):
			err = getErr
		case getErr == nil && current.UID == uid && current.ResourceVersion != resourceVersion &&
			reflect.DeepEqual(current.OwnerReferences, latest.OwnerReferences):
			options.Preconditions.ResourceVersion = nil
			err = client.Delete(ctx, id.Name, options)
		}
	}
	if apierrors.IsNotFound(err) {
		c.raiseVirtualDelete(id)
		return errVirtualDeleteRaised
	}
	if err != nil {
		return fmt.Errorf("deleting with propagation %s: %w", policy, err)
	}
	return nil
}

// getObject reads the object id through the metadata client.
func (c *Controller) getObject(ctx context.Context, id gcgraph.Identity) (*metav1.PartialObjectMetadata, error) {
	resource, namespaced, err := c.resourceFor(id.APIVersion, id.Kind)
	if err != nil {
		return nil, err
	}
	if namespaced && id.Namespace == "" {
		return nil, errClusterScopedChild
	}
	return c.resourceClient(resource, namespaceIf(namespaced, id.Namespace)).Get(ctx, id.Name, metav1.GetOptions{})
}

// resourceFor maps apiVersion and kind to the resource and whether it is namespaced.
func (c *Controller) resourceFor(apiVersion, kind string) (schema.GroupVersionResource, bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionResource{}, false, fmt.Errorf("parsing apiVersion %q: %w", apiVersion, err)
	}
	mapping, err := c.mapper.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
	if err != nil {
		return schema.GroupVersionResource{}, false, fmt.Errorf("mapping %s to a resource: %w", gv.WithKind(kind), err)
	}
	return mapping.Resource, mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// resourceClient returns the metadata client of resource in namespace ("" for
// cluster-scoped resources).
func (c *Controller) resourceClient(resource schema.GroupVersionResource, namespace string) metadata.ResourceInterface {
	if namespace == "" {
		return c.metadataClient.Resource(resource)
	}
	return c.metadataClient.Resource(resource).Namespace(namespace)
}

// namespaceIf returns namespace for namespaced resources and "" for cluster-scoped ones,
// whose objects may be known by a dependent's namespace.
func namespaceIf(namespaced bool, namespace string) string {
	if namespaced {
		return namespace
	}
	return ""
}
