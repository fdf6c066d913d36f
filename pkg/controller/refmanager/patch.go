package refmanager

import (
	"encoding/json"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// adoptPatch is the strategic merge patch that adds a controller reference. Field order
// is part of the wire format bosun promises: ownerReferences, uid, finalizers.
type adoptPatch struct {
	Metadata adoptPatchMeta `json:"metadata"`
}

type adoptPatchMeta struct {
	OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
	UID             types.UID               `json:"uid"`
	Finalizers      []string                `json:"finalizers,omitempty"`
}

// AdoptPatch returns the strategic merge patch that adds ref (expected to be a controller
// reference) to the object with UID objUID, plus finalizers when given. The UID acts as a
// precondition: it is immutable, so the API server rejects the patch (422) if the object
// was replaced by another of the same name.
func AdoptPatch(ref metav1.OwnerReference, objUID types.UID, finalizers ...string) ([]byte, error) {
	body, err := json.Marshal(adoptPatch{Metadata: adoptPatchMeta{
		OwnerReferences: []metav1.OwnerReference{ref},
		UID:             objUID,
		Finalizers:      finalizers,
	}})
	if err != nil {
		return nil, fmt.Errorf("encoding adopt patch: %w", err)
	}
	return body, nil
}

// releasePatch is the strategic merge patch that removes owner references by UID.
type releasePatch struct {
	Metadata releasePatchMeta `json:"metadata"`
}

type releasePatchMeta struct {
	UID              types.UID       `json:"uid"`
	OwnerReferences  []deleteByUIDOp `json:"ownerReferences"`
	DeleteFinalizers []string        `json:"$deleteFromPrimitiveList/finalizers,omitempty"`
}

type deleteByUIDOp struct {
	Patch string    `json:"$patch"`
	UID   types.UID `json:"uid"`
}

// ReleasePatch returns the strategic merge patch that removes the references to every
// owner in ownerUIDs from the object with UID objUID (a precondition, as in AdoptPatch),
// and removes finalizers when given. The garbage collector uses it to strip dangling
// owners.
func ReleasePatch(objUID types.UID, ownerUIDs []types.UID, finalizers ...string) ([]byte, error) {
	ops := make([]deleteByUIDOp, len(ownerUIDs))
	for i, uid := range ownerUIDs {
		ops[i] = deleteByUIDOp{Patch: "delete", UID: uid}
	}
	body, err := json.Marshal(releasePatch{Metadata: releasePatchMeta{
		UID:              objUID,
		OwnerReferences:  ops,
		DeleteFinalizers: finalizers,
	}})
	if err != nil {
		return nil, fmt.Errorf("encoding release patch: %w", err)
	}
	return body, nil
}

// mergePatch is a JSON merge patch replacing the ownerReferences list (null when empty)
// and, when set, the finalizers list, guarded by resourceVersion.
type mergePatch struct {
	Metadata mergePatchMeta `json:"metadata"`
}

type mergePatchMeta struct {
	ResourceVersion string                  `json:"resourceVersion"`
	OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
	Finalizers      *[]string               `json:"finalizers,omitempty"`
}

// OwnerRefsMergePatch returns a JSON merge patch that sets the object's ownerReferences to
// refs (null when empty) and, when finalizers is non-nil, its finalizers to *finalizers,
// conditional on resourceVersion. A merge patch replaces lists wholesale, so refs must
// be the complete new list; resourceVersion makes the API server reject the patch (409)
// if the object changed since the list was computed.
func OwnerRefsMergePatch(resourceVersion string, refs []metav1.OwnerReference, finalizers *[]string) ([]byte, error) {
	if len(refs) == 0 {
		refs = nil
	}
	body, err := json.Marshal(mergePatch{Metadata: mergePatchMeta{
		ResourceVersion: resourceVersion,
		OwnerReferences: refs,
		Finalizers:      finalizers,
	}})
	if err != nil {
		return nil, fmt.Errorf("encoding owner references merge patch: %w", err)
	}
	return body, nil
}

// ReleaseMergePatch returns the JSON merge patch that removes the references to every
// owner in ownerUIDs from obj, built from obj's current ownerReferences and
// resourceVersion. It is the custom-resource counterpart of ReleasePatch.
func ReleaseMergePatch(obj metav1.Object, ownerUIDs []types.UID, finalizers ...string) ([]byte, error) {
	refs := slices.DeleteFunc(slices.Clone(obj.GetOwnerReferences()), func(r metav1.OwnerReference) bool {
		return slices.Contains(ownerUIDs, r.UID)
	})
	var newFinalizers *[]string
	if len(finalizers) > 0 {
		rest := slices.DeleteFunc(slices.Clone(obj.GetFinalizers()), func(f string) bool {
			return slices.Contains(finalizers, f)
		})
		newFinalizers = &rest
	}
	return OwnerRefsMergePatch(obj.GetResourceVersion(), refs, newFinalizers)
}

// adoptMergePatch is the custom-resource counterpart of AdoptPatch: obj's references with
// ref merged in by UID (an existing reference to the same owner is replaced in place,
// others are kept), and finalizers added to obj's finalizers.
func adoptMergePatch(obj metav1.Object, ref metav1.OwnerReference, finalizers []string) ([]byte, error) {
	refs := slices.Clone(obj.GetOwnerReferences())
	if i := slices.IndexFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == ref.UID }); i >= 0 {
		refs[i] = ref
	} else {
		refs = append(refs, ref)
	}
	var newFinalizers *[]string
	if len(finalizers) > 0 {
		all := slices.Clone(obj.GetFinalizers())
		for _, f := range finalizers {
			if !slices.Contains(all, f) {
				all = append(all, f)
			}
		}
		newFinalizers = &all
	}
	return OwnerRefsMergePatch(obj.GetResourceVersion(), refs, newFinalizers)
}
