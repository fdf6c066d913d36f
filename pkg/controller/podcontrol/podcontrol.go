// Package podcontrol creates, deletes and patches the pods of a workload controller and
// records the matching events on the owner. StatusUpdater writes pod status for the
// controllers that set pod conditions.
//
// Every pod a controller creates carries exactly one controller reference with
// blockOwnerDeletion set, so that foreground deletion of the owner waits for its pods;
// the reference is validated before any API call. Pods are built from the owner's
// template only: labels, annotations, finalizers, a generateName derived from the owner's
// name, the owner reference, and the spec. Nothing else is copied.
package podcontrol

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// Event reasons recorded on the owner.
const (
	FailedCreatePodReason     = "FailedCreate"
	SuccessfulCreatePodReason = "SuccessfulCreate"
	FailedDeletePodReason     = "FailedDelete"
	SuccessfulDeletePodReason = "SuccessfulDelete"
)

// Interface is what controllers use to write pods; tests substitute Fake.
type Interface interface {
	// CreatePods creates one pod from template in namespace, owned by owner through
	// controllerRef, with generateName "<owner name>-".
	CreatePods(ctx context.Context, namespace string, template *corev1.PodTemplateSpec, owner runtime.Object, controllerRef *metav1.OwnerReference) error
	// CreatePodsWithGenerateName is CreatePods with an explicit generateName.
	CreatePodsWithGenerateName(ctx context.Context, namespace string, template *corev1.PodTemplateSpec, owner runtime.Object, controllerRef *metav1.OwnerReference, generateName string) error
	// DeletePod deletes the pod namespace/name on behalf of owner. A NotFound error is
	// returned as is; callers treat it as done.
	DeletePod(ctx context.Context, namespace, name string, owner runtime.Object) error
	// PatchPod applies a strategic merge patch to the pod namespace/name.
	PatchPod(ctx context.Context, namespace, name string, patch []byte) error
}

// WriteHook observes the server's response to every successful create and patch.
// controllerRef is the reference used to create the pod, or for patches the patched
// pod's controller reference (nil for orphans). The read-your-writes guard uses it.
type WriteHook func(pod *corev1.Pod, controllerRef *metav1.OwnerReference)

// Real writes pods through the API server and records events through Recorder, whose
// event source is the controller's name (for example "replicaset-controller").
type Real struct {
	Client   kubernetes.Interface
	Recorder record.EventRecorder
	// OnWrite, if set, is called after every successful create and patch.
	OnWrite WriteHook
}

var _ Interface = &Real{}

// CreatePods implements Interface.
func (r *Real) CreatePods(ctx context.Context, namespace string, template *corev1.PodTemplateSpec, owner runtime.Object, controllerRef *metav1.OwnerReference) error {
	return r.CreatePodsWithGenerateName(ctx, namespace, template, owner, controllerRef, "")
}

// CreatePodsWithGenerateName implements Interface.
func (r *Real) CreatePodsWithGenerateName(ctx context.Context, namespace string, template *corev1.PodTemplateSpec, owner runtime.Object, controllerRef *metav1.OwnerReference, generateName string) error {
	if err := ValidateControllerRef(controllerRef); err != nil {
		return err
	}
	pod, err := PodFromTemplate(template, owner, controllerRef)
	if err != nil {
		return err
	}
	if generateName != "" {
		pod.GenerateName = generateName
	}
	return r.create(ctx, namespace, pod, owner, controllerRef)
}

func (r *Real) create(ctx context.Context, namespace string, pod *corev1.Pod, owner runtime.Object, controllerRef *metav1.OwnerReference) error {
	if len(pod.Labels) == 0 {
		// A pod without labels could never be matched by the owner's selector again.
		return errors.New("unable to create pods, no labels")
	}
	created, err := r.Client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		// Creates into a terminating namespace fail by design; an event per pod would only
		// be noise.
		if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			r.Recorder.Eventf(owner, corev1.EventTypeWarning, FailedCreatePodReason, "Error creating: %v", err)
		}
		return fmt.Errorf("creating pod in namespace %s for %s %s: %w", namespace, controllerRef.Kind, controllerRef.Name, err)
	}
	klog.FromContext(ctx).V(4).Info("Controller created pod", "controller", controllerRef.Name, "pod", klog.KObj(created))
	r.Recorder.Eventf(owner, corev1.EventTypeNormal, SuccessfulCreatePodReason, "Created pod: %v", created.Name)
	if r.OnWrite != nil {
		r.OnWrite(created, controllerRef)
	}
	return nil
}

// DeletePod implements Interface.
func (r *Real) DeletePod(ctx context.Context, namespace, name string, owner runtime.Object) error {
	logger := klog.FromContext(ctx)
	logger.V(2).Info("Deleting pod", "pod", klog.KRef(namespace, name))
	if err := r.Client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			logger.V(4).Info("Pod has already been deleted", "pod", klog.KRef(namespace, name))
			return err
		}
		r.Recorder.Eventf(owner, corev1.EventTypeWarning, FailedDeletePodReason, "Error deleting: %v", err)
		return fmt.Errorf("unable to delete pods: %w", err)
	}
	r.Recorder.Eventf(owner, corev1.EventTypeNormal, SuccessfulDeletePodReason, "Deleted pod: %v", name)
	return nil
}

// PatchPod implements Interface.
func (r *Real) PatchPod(ctx context.Context, namespace, name string, patch []byte) error {
	patched, err := r.Client.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("patching pod %s/%s: %w", namespace, name, err)
	}
	if r.OnWrite != nil {
		r.OnWrite(patched, metav1.GetControllerOf(patched))
	}
	return nil
}

// ValidateControllerRef checks that ref is a complete controller reference that blocks
// the owner's foreground deletion.
func ValidateControllerRef(ref *metav1.OwnerReference) error {
	switch {
	case ref == nil:
		return errors.New("controllerRef is nil")
	case ref.APIVersion == "":
		return errors.New("controllerRef has empty apiVersion")
	case ref.Kind == "":
		return errors.New("controllerRef has empty kind")
	case ref.Controller == nil || !*ref.Controller:
		return errors.New("controllerRef.controller is not set to true")
	case ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion:
		return errors.New("controllerRef.blockOwnerDeletion is not set to true")
	}
	return nil
}

// PodFromTemplate builds the pod a controller creates: fresh copies of the template's
// labels, annotations and finalizers, GenerateNamePrefix(owner name), ownerReferences set
// to [controllerRef] (when non-nil), and a deep copy of the template's spec.
func PodFromTemplate(template *corev1.PodTemplateSpec, owner runtime.Object, controllerRef *metav1.OwnerReference) (*corev1.Pod, error) {
	if template == nil {
		return nil, errors.New("pod template is nil")
	}
	accessor, err := meta.Accessor(owner)
	if err != nil {
		return nil, fmt.Errorf("reading owner metadata: %w", err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: GenerateNamePrefix(accessor.GetName()),
			Labels:       maps.Clone(template.Labels),
			Annotations:  maps.Clone(template.Annotations),
			Finalizers:   slices.Clone(template.Finalizers),
		},
		Spec: *template.Spec.DeepCopy(),
	}
	if controllerRef != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*controllerRef}
	}
	return pod, nil
}

// GenerateNamePrefix returns "<ownerName>-", or ownerName alone when the dashed form is
// not a valid pod-name prefix (an owner name of the maximum 253 characters). The API
// server truncates generateName to 58 characters before appending its random suffix, so
// both forms give the same kind of pod name.
func GenerateNamePrefix(ownerName string) string {
	prefix := ownerName + "-"
	if len(prefix) > validation.DNS1123SubdomainMaxLength || len(apimachineryvalidation.NameIsDNSSubdomain(prefix, true)) != 0 {
		return ownerName
	}
	return prefix
}
