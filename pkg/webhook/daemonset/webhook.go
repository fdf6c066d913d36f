package daemonset

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	"github.com/bosun-dev/bosun/pkg/webhook"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The names and paths OpenKruise gives the same webhooks, so that configurations and
// dashboards written for one work for the other.
const (
	MutatingName   = "mdaemonset.kb.io"
	MutatingPath   = "/mutate-apps-kruise-io-v1alpha1-daemonset"
	ValidatingName = "vdaemonset.kb.io"
	ValidatingPath = "/validate-apps-kruise-io-v1alpha1-daemonset"
)

var (
	daemonSetKind      = appsv1alpha1.SchemeGroupVersion.WithKind("DaemonSet")
	daemonSetGroupKind = daemonSetKind.GroupKind()
)

// Registrations are the DaemonSet's two webhooks, both called on CREATE and UPDATE: the
// defaulting one and the validating one.
func Registrations() []webhook.Registration {
	return []webhook.Registration{
		{
			Name:    MutatingName,
			Path:    MutatingPath,
			Type:    webhook.Mutating,
			Rules:   rules(),
			Handler: webhook.HandlerFunc(mutate),
		},
		{
			Name:    ValidatingName,
			Path:    ValidatingPath,
			Type:    webhook.Validating,
			Rules:   rules(),
			Handler: webhook.HandlerFunc(validate),
		},
	}
}

func rules() []admissionregistrationv1.RuleWithOperations {
	return webhook.ResourceRules(appsv1alpha1.SchemeGroupVersion, "daemonsets", admissionregistrationv1.Create, admissionregistrationv1.Update)
}

// admittedObject decodes the DaemonSet of a CREATE or UPDATE, or returns the answer (see
// webhook.DecodeAdmitted).
func admittedObject(req *admissionv1.AdmissionRequest) (*appsv1alpha1.DaemonSet, *admissionv1.AdmissionResponse) {
	return webhook.DecodeAdmitted[appsv1alpha1.DaemonSet](req, daemonSetKind)
}

// mutate answers with the patch that defaults the object.
func mutate(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	ds, answer := admittedObject(req)
	if answer != nil {
		return answer
	}
	before := ds.Spec.DeepCopy()
	SetDefaults(ds)
	resp, err := webhook.AdditionsResponse(defaultedSpecFields(before, &ds.Spec))
	if err != nil {
		return webhook.Errored(http.StatusInternalServerError, fmt.Errorf("defaulting DaemonSet %s/%s: %w", req.Namespace, req.Name, err))
	}
	return resp
}

// defaultedSpecFields returns one addition per spec field that defaulting changed (from
// before to after), with its defaulted value.
//
// Only those fields are patched. Patching the difference between the object as received
// and the whole typed object would also rewrite what the Go types merely spell
// differently, such as the empty "resources" and null "creationTimestamp" they add to the
// pod template: the stored template would differ from what the user wrote although no
// default applies to it.
//
// An empty (or absent) spec is set whole: "add" of a member needs its parent to exist, and
// the strict decoding of the object has made sure that an empty spec holds nothing the
// patch could drop.
func defaultedSpecFields(before, after *appsv1alpha1.DaemonSetSpec) []webhook.Addition {
	changed := map[string]any{}
	var names []string
	beforeValue, afterValue := reflect.ValueOf(before).Elem(), reflect.ValueOf(after).Elem()
	for i := range afterValue.NumField() {
		name, _, _ := strings.Cut(afterValue.Type().Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		value := afterValue.Field(i).Interface()
		if !apiequality.Semantic.DeepEqual(beforeValue.Field(i).Interface(), value) {
			changed[name] = value
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	if beforeValue.IsZero() {
		return []webhook.Addition{{Path: "/spec", Value: changed}}
	}
	additions := make([]webhook.Addition, 0, len(names))
	for _, name := range names {
		additions = append(additions, webhook.Addition{Path: "/spec/" + name, Value: changed[name]})
	}
	return additions
}

// validate denies an invalid object with a 422 naming every offending field, on creation
// as on update (OpenKruise answers creations with a 500, which clients show as a server
// fault rather than as a mistake in their object).
func validate(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	ds, answer := admittedObject(req)
	if answer != nil {
		return answer
	}
	// The API server fills the namespace in from the request; this keeps the metadata
	// validation from reporting it missing should it not have.
	if ds.Namespace == "" {
		ds.Namespace = req.Namespace
	}

	var errs field.ErrorList
	if req.Operation == admissionv1.Update {
		old, err := webhook.DecodeStrictNew[appsv1alpha1.DaemonSet](req.OldObject.Raw, "oldObject", daemonSetKind)
		if err != nil {
			return webhook.Errored(http.StatusBadRequest, err)
		}
		errs = ValidateUpdate(ds, old)
	} else {
		errs = Validate(ds)
	}
	if len(errs) > 0 {
		name := ds.Name
		if name == "" {
			name = req.Name
		}
		return webhook.Invalid(daemonSetGroupKind, name, errs)
	}
	return webhook.Allowed()
}
