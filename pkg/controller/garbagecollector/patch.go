package garbagecollector

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/gcgraph"
	"github.com/bosun-dev/bosun/pkg/controller/refmanager"
)

// mergePatchFunc builds the JSON merge patch equivalent to a strategic merge patch from
// the object's current metadata.
type mergePatchFunc func(obj metav1.Object) ([]byte, error)

// patchOwnerRefs changes the owner references of the object id with the strategic merge
// patch smp. Custom resources reject strategic merge patches (415); for them the JSON
// merge patch built by merge from the object's metadata (the monitor's cache, or a live
// GET) is sent instead. That patch carries the resourceVersion it was computed from, so a
// stale cache costs a 409 and a retry, never lost references.
func (c *Controller) patchOwnerRefs(ctx context.Context, id gcgraph.Identity, smp []byte, merge mergePatchFunc) error {
	resource, namespaced, err := c.resourceFor(id.APIVersion, id.Kind)
	if err != nil {
		return err
	}
	if namespaced && id.Namespace == "" {
		return errClusterScopedChild
	}
	namespace := namespaceIf(namespaced, id.Namespace)
	client := c.resourceClient(resource, namespace)
	_, err = client.Patch(ctx, id.Name, types.StrategicMergePatchType, smp, metav1.PatchOptions{})
	if !apierrors.IsUnsupportedMediaType(err) {
		return err
	}
	klog.FromContext(ctx).V(5).Info("Resource rejects strategic merge patches; sending a JSON merge patch", "resource", resource)
	obj, err := c.currentMetadata(ctx, resource, namespace, id)
	if err != nil {
		return err
	}
	body, err := merge(obj)
	if err != nil {
		return err
	}
	_, err = client.Patch(ctx, id.Name, types.MergePatchType, body, metav1.PatchOptions{})
	return err
}

// currentMetadata returns the object id from its monitor's cache when the cache holds it,
// and from the API server otherwise.
func (c *Controller) currentMetadata(ctx context.Context, resource schema.GroupVersionResource, namespace string, id gcgraph.Identity) (metav1.Object, error) {
	if obj, ok := c.monitors.cached(resource, namespace, id.Name); ok && obj.GetUID() == id.UID {
		return obj, nil
	}
	obj, err := c.resourceClient(resource, namespace).Get(ctx, id.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if obj.UID != id.UID {
		return nil, apierrors.NewNotFound(resource.GroupResource(), id.Name)
	}
	return obj, nil
}

// unblockPatch is the strategic merge patch that rewrites owner references (merged by
// UID) and carries the object's UID as a precondition.
type unblockPatch struct {
	Metadata unblockPatchMeta `json:"metadata"`
}

type unblockPatchMeta struct {
	OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
	UID             types.UID               `json:"uid"`
}

// UnblockOwnerRefsPatch returns the strategic merge patch that sets blockOwnerDeletion to
// false on every blocking reference of refs, on the object with UID objUID. It returns nil
// when no reference blocks.
func UnblockOwnerRefsPatch(objUID types.UID, refs []metav1.OwnerReference) ([]byte, error) {
	var unblocked []metav1.OwnerReference
	for _, ref := range refs {
		if gcgraph.IsBlocking(ref) {
			ref.BlockOwnerDeletion = ptr.To(false)
			unblocked = append(unblocked, ref)
		}
	}
	if len(unblocked) == 0 {
		return nil, nil
	}
	body, err := json.Marshal(unblockPatch{Metadata: unblockPatchMeta{OwnerReferences: unblocked, UID: objUID}})
	if err != nil {
		return nil, fmt.Errorf("encoding unblock patch: %w", err)
	}
	return body, nil
}

// unblockMergePatch is the JSON merge patch counterpart of UnblockOwnerRefsPatch: all of
// obj's references, none blocking, at obj's resourceVersion.
func unblockMergePatch(obj metav1.Object) ([]byte, error) {
	refs := make([]metav1.OwnerReference, 0, len(obj.GetOwnerReferences()))
	for _, ref := range obj.GetOwnerReferences() {
		if gcgraph.IsBlocking(ref) {
			ref.BlockOwnerDeletion = ptr.To(false)
		}
		refs = append(refs, ref)
	}
	return refmanager.OwnerRefsMergePatch(obj.GetResourceVersion(), refs, nil)
}

// unblockOwnerRefs makes every reference of the object id (currently refs) non-blocking.
func (c *Controller) unblockOwnerRefs(ctx context.Context, id gcgraph.Identity, refs []metav1.OwnerReference) error {
	body, err := UnblockOwnerRefsPatch(id.UID, refs)
	if err != nil || body == nil {
		return err
	}
	if err := c.patchOwnerRefs(ctx, id, body, unblockMergePatch); err != nil {
		return fmt.Errorf("unblocking the owner references: %w", err)
	}
	return nil
}
