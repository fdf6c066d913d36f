package refmanager

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/bosun-dev/bosun/pkg/controller/podcontrol"
)

// Patcher writes ownership changes to objects of one kind.
type Patcher interface {
	// Kind names the kind of object patched ("Pod"), for messages.
	Kind() string
	// Adopt adds ref, a controller reference, to obj, and finalizers when given.
	Adopt(ctx context.Context, obj metav1.Object, ref metav1.OwnerReference, finalizers []string) error
	// Release removes obj's reference to ownerUID, and finalizers when given.
	Release(ctx context.Context, obj metav1.Object, ownerUID types.UID, finalizers []string) error
}

// SendPatchFunc sends a strategic merge patch to the object namespace/name.
type SendPatchFunc func(ctx context.Context, namespace, name string, body []byte) error

// StrategicMergePatcher is the Patcher for built-in kinds: it builds AdoptPatch and
// ReleasePatch bodies and hands them to Send.
type StrategicMergePatcher struct {
	ObjectKind string
	Send       SendPatchFunc
}

var _ Patcher = &StrategicMergePatcher{}

// Kind implements Patcher.
func (p *StrategicMergePatcher) Kind() string { return p.ObjectKind }

// Adopt implements Patcher.
func (p *StrategicMergePatcher) Adopt(ctx context.Context, obj metav1.Object, ref metav1.OwnerReference, finalizers []string) error {
	body, err := AdoptPatch(ref, obj.GetUID(), finalizers...)
	if err != nil {
		return err
	}
	return p.Send(ctx, obj.GetNamespace(), obj.GetName(), body)
}

// Release implements Patcher.
func (p *StrategicMergePatcher) Release(ctx context.Context, obj metav1.Object, ownerUID types.UID, finalizers []string) error {
	body, err := ReleasePatch(obj.GetUID(), []types.UID{ownerUID}, finalizers...)
	if err != nil {
		return err
	}
	return p.Send(ctx, obj.GetNamespace(), obj.GetName(), body)
}

// PodControlPatcher patches pods through a podcontrol.Interface, so that its write hook
// (the read-your-writes guard) also sees adoptions and releases.
func PodControlPatcher(control podcontrol.Interface) *StrategicMergePatcher {
	return &StrategicMergePatcher{ObjectKind: "Pod", Send: control.PatchPod}
}

// ReplicaSetPatcher patches apps/v1 ReplicaSets through client.
func ReplicaSetPatcher(client kubernetes.Interface) *StrategicMergePatcher {
	return &StrategicMergePatcher{ObjectKind: "ReplicaSet", Send: func(ctx context.Context, namespace, name string, body []byte) error {
		_, err := client.AppsV1().ReplicaSets(namespace).Patch(ctx, name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
		return err
	}}
}

// ControllerRevisionPatcher patches apps/v1 ControllerRevisions through client.
func ControllerRevisionPatcher(client kubernetes.Interface) *StrategicMergePatcher {
	return &StrategicMergePatcher{ObjectKind: "ControllerRevision", Send: func(ctx context.Context, namespace, name string, body []byte) error {
		_, err := client.AppsV1().ControllerRevisions(namespace).Patch(ctx, name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
		return err
	}}
}

// MergePatcher is the Patcher for custom resources, which reject strategic merge patches
// (415). It sends JSON merge patches through the metadata client, so it works for any
// resource. The patch is computed from the object as passed (usually from the informer
// cache) and carries its resourceVersion: if the cache is stale the API server answers
// 409 Conflict and the controller retries with fresher data.
type MergePatcher struct {
	ObjectKind string
	Client     metadata.Interface
	Resource   schema.GroupVersionResource
}

var _ Patcher = &MergePatcher{}

// Kind implements Patcher.
func (p *MergePatcher) Kind() string { return p.ObjectKind }

// Adopt implements Patcher.
func (p *MergePatcher) Adopt(ctx context.Context, obj metav1.Object, ref metav1.OwnerReference, finalizers []string) error {
	body, err := adoptMergePatch(obj, ref, finalizers)
	if err != nil {
		return err
	}
	return p.send(ctx, obj, body)
}

// Release implements Patcher.
func (p *MergePatcher) Release(ctx context.Context, obj metav1.Object, ownerUID types.UID, finalizers []string) error {
	body, err := ReleaseMergePatch(obj, []types.UID{ownerUID}, finalizers...)
	if err != nil {
		return err
	}
	return p.send(ctx, obj, body)
}

func (p *MergePatcher) send(ctx context.Context, obj metav1.Object, body []byte) error {
	var client metadata.ResourceInterface = p.Client.Resource(p.Resource)
	if ns := obj.GetNamespace(); ns != "" {
		client = p.Client.Resource(p.Resource).Namespace(ns)
	}
	if _, err := client.Patch(ctx, obj.GetName(), types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("merge-patching %s: %w", p.Resource.String(), err)
	}
	return nil
}
