package webhook

import (
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ResourceRules are the rules of a webhook that the API server calls for ops on one
// resource (its plural name, such as "nodeimages") of gv.
func ResourceRules(gv schema.GroupVersion, resource string, ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: ops,
		Rule: admissionregistrationv1.Rule{
			APIGroups:   []string{gv.Group},
			APIVersions: []string{gv.Version},
			Resources:   []string{resource},
		},
	}}
}

// objectPointer is *T for an API type T, such as *appsv1alpha1.NodeImage.
type objectPointer[T any] interface {
	*T
	runtime.Object
}

// DecodeAdmitted decodes the object of a CREATE or UPDATE request, of kind want, into a new
// T (see CheckKind and DecodeStrict). When there is nothing to judge or it cannot judge, it
// returns the answer instead: Allowed for any other operation, and a 400 for a request about
// another kind or an object that does not decode.
func DecodeAdmitted[T any, PT objectPointer[T]](req *admissionv1.AdmissionRequest, want schema.GroupVersionKind) (PT, *admissionv1.AdmissionResponse) {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return nil, Allowed()
	}
	if err := CheckKind(req, want); err != nil {
		return nil, Errored(http.StatusBadRequest, err)
	}
	obj, err := DecodeStrictNew[T, PT](req.Object.Raw, "object", want)
	if err != nil {
		return nil, Errored(http.StatusBadRequest, err)
	}
	return obj, nil
}

// DecodeStrictNew decodes what a request holds under name ("object" or "oldObject") into a
// new T of kind want, strictly (see DecodeStrict).
func DecodeStrictNew[T any, PT objectPointer[T]](raw []byte, name string, want schema.GroupVersionKind) (PT, error) {
	obj := PT(new(T))
	if err := DecodeStrict(raw, name, want, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// InvalidWithCode is Invalid answered with another code than 422, for webhooks whose clients
// expect OpenKruise's codes (400 for an invalid object, 403 for a forbidden change): the
// status still carries one cause per field error, with the reason the API server gives
// that code.
func InvalidWithCode(code int32, gk schema.GroupKind, name string, errs field.ErrorList) *admissionv1.AdmissionResponse {
	status := apierrors.NewInvalid(gk, name, errs).ErrStatus
	status.Code = code
	status.Reason = reasonForCode(code)
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &status}
}
