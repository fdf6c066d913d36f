package webhook

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// resourcePointer is *T for an API type T with object metadata, such as
// *appsv1alpha1.NodeImage.
type resourcePointer[T any] interface {
	*T
	runtime.Object
	metav1.Object
}

// ResourceWebhook is what a resource's defaulting webhook, validating webhook or both have
// in common: both are called on CREATE and UPDATE of one resource, let every other
// operation through, and decode the object strictly (see DecodeAdmitted), answering 400 when
// it does not decode or is of another kind. The resource supplies only its defaults and its
// judgement.
//
// T is the API type and PT its pointer, for example
// ResourceWebhook[appsv1alpha1.DaemonSet, *appsv1alpha1.DaemonSet].
type ResourceWebhook[T any, PT resourcePointer[T]] struct {
	// Kind is the one kind admitted, and Resource its plural name in Kind's group and
	// version ("daemonsets").
	Kind     schema.GroupVersionKind
	Resource string

	// MutatingName and MutatingPath name the defaulting webhook, registered when Default
	// is set.
	MutatingName, MutatingPath string
	// Default sets the object's defaults in place and returns the additions that make the
	// same changes to the object as received, so that nothing else the user wrote is
	// rewritten (see AdditionsResponse). req tells a creation from an update.
	Default func(req *admissionv1.AdmissionRequest, obj PT) []Addition

	// ValidatingName and ValidatingPath name the validating webhook, registered when
	// Validate is set.
	ValidatingName, ValidatingPath string
	// Validate judges the object. Its namespace is filled in from the request when empty,
	// as the API server does before storing it. On an UPDATE, old is the object before the
	// update, decoded as strictly (400 when it does not decode); on a CREATE it is nil.
	Validate func(ctx context.Context, req *admissionv1.AdmissionRequest, obj, old PT) *admissionv1.AdmissionResponse
	// OldObjectUnused leaves old nil on UPDATE too, for a resource judged on the object
	// alone: the old object is then neither decoded nor able to fail the request.
	OldObjectUnused bool
}

// Registrations are the defaulting webhook (when Default is set) and then the validating
// one (when Validate is set), each for CREATE and UPDATE of the resource.
func (w *ResourceWebhook[T, PT]) Registrations() []Registration {
	var regs []Registration
	if w.Default != nil {
		regs = append(regs, Registration{
			Name:    w.MutatingName,
			Path:    w.MutatingPath,
			Type:    Mutating,
			Rules:   w.rules(),
			Handler: HandlerFunc(w.mutate),
		})
	}
	if w.Validate != nil {
		regs = append(regs, Registration{
			Name:    w.ValidatingName,
			Path:    w.ValidatingPath,
			Type:    Validating,
			Rules:   w.rules(),
			Handler: HandlerFunc(w.validate),
		})
	}
	return regs
}

func (w *ResourceWebhook[T, PT]) rules() []admissionregistrationv1.RuleWithOperations {
	return ResourceRules(w.Kind.GroupVersion(), w.Resource, admissionregistrationv1.Create, admissionregistrationv1.Update)
}

// mutate answers with the patch of Default's additions.
func (w *ResourceWebhook[T, PT]) mutate(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	obj, answer := DecodeAdmitted[T, PT](req, w.Kind)
	if answer != nil {
		return answer
	}
	resp, err := AdditionsResponse(w.Default(req, obj))
	if err != nil {
		return Errored(http.StatusInternalServerError, fmt.Errorf("defaulting %s %s: %w", w.Kind.Kind, klog.KRef(req.Namespace, req.Name), err))
	}
	return resp
}

// validate answers with Validate's verdict.
func (w *ResourceWebhook[T, PT]) validate(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	obj, answer := DecodeAdmitted[T, PT](req, w.Kind)
	if answer != nil {
		return answer
	}
	var old PT
	if req.Operation == admissionv1.Update && !w.OldObjectUnused {
		var err error
		if old, err = DecodeStrictNew[T, PT](req.OldObject.Raw, "oldObject", w.Kind); err != nil {
			return Errored(http.StatusBadRequest, err)
		}
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(req.Namespace)
	}
	return w.Validate(ctx, req, obj, old)
}

// ObjectName is the name of the object a request is about, for messages: the object's own,
// or the request's when the object carries none.
func ObjectName(req *admissionv1.AdmissionRequest, obj metav1.Object) string {
	if name := obj.GetName(); name != "" {
		return name
	}
	return req.Name
}
