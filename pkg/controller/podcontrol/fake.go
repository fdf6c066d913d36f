package podcontrol

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Fake records pod writes instead of sending them, for unit tests of controllers. Read its
// fields only after the calls under test have returned.
type Fake struct {
	mu sync.Mutex

	// Templates and ControllerRefs record every accepted create, in call order.
	Templates      []corev1.PodTemplateSpec
	ControllerRefs []metav1.OwnerReference
	// DeletedPods records "namespace/name" of every accepted delete.
	DeletedPods []string
	// Patches records the body of every accepted patch.
	Patches [][]byte

	// Err, if set, is returned by every call after recording it.
	Err error
	// CreateLimit, if positive, makes creates beyond that many calls fail.
	CreateLimit     int
	CreateCallCount int
}

var _ Interface = &Fake{}

// CreatePods implements Interface.
func (f *Fake) CreatePods(ctx context.Context, namespace string, template *corev1.PodTemplateSpec, owner runtime.Object, controllerRef *metav1.OwnerReference) error {
	return f.CreatePodsWithGenerateName(ctx, namespace, template, owner, controllerRef, "")
}

// CreatePodsWithGenerateName implements Interface; like Real it validates controllerRef
// first.
func (f *Fake) CreatePodsWithGenerateName(_ context.Context, _ string, template *corev1.PodTemplateSpec, _ runtime.Object, controllerRef *metav1.OwnerReference, _ string) error {
	if err := ValidateControllerRef(controllerRef); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.CreateCallCount++
	if f.CreateLimit > 0 && f.CreateCallCount > f.CreateLimit {
		return fmt.Errorf("not creating pod: limit %d reached (create call %d)", f.CreateLimit, f.CreateCallCount)
	}
	f.Templates = append(f.Templates, *template.DeepCopy())
	f.ControllerRefs = append(f.ControllerRefs, *controllerRef)
	return f.Err
}

// DeletePod implements Interface.
func (f *Fake) DeletePod(_ context.Context, namespace, name string, _ runtime.Object) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.DeletedPods = append(f.DeletedPods, namespace+"/"+name)
	return f.Err
}

// PatchPod implements Interface.
func (f *Fake) PatchPod(_ context.Context, _, _ string, patch []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Patches = append(f.Patches, patch)
	return f.Err
}

// Clear forgets every recorded call.
func (f *Fake) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Templates, f.ControllerRefs, f.DeletedPods, f.Patches = nil, nil, nil, nil
	f.CreateCallCount = 0
}
