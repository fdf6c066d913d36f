package daemonset

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	"github.com/bosun-dev/bosun/pkg/webhook"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
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
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{
			APIGroups:   []string{appsv1alpha1.GroupName},
			APIVersions: []string{appsv1alpha1.SchemeGroupVersion.Version},
			Resources:   []string{"daemonsets"},
		},
	}}
}

// admittedObject decodes the DaemonSet of a CREATE or UPDATE. For any other operation, or
// a request that is not a DaemonSet of this version, it returns the answer instead.
func admittedObject(req *admissionv1.AdmissionRequest) (*appsv1alpha1.DaemonSet, *admissionv1.AdmissionResponse) {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return nil, webhook.Allowed()
	}
	if err := checkKind(req); err != nil {
		return nil, webhook.Errored(http.StatusBadRequest, err)
	}
	ds, err := decode(req.Object.Raw, "object")
	if err != nil {
		return nil, webhook.Errored(http.StatusBadRequest, err)
	}
	return ds, nil
}

// mutate answers with the patch that defaults the object.
func mutate(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	ds, answer := admittedObject(req)
	if answer != nil {
		return answer
	}
	before := ds.Spec.DeepCopy()
	SetDefaults(ds)
	mutated, err := withDefaultedSpecFields(req.Object.Raw, before, &ds.Spec)
	if err != nil {
		return defaultingFailed(req, err)
	}
	resp, err := webhook.PatchResponse(req.Object.Raw, mutated)
	if err != nil {
		return defaultingFailed(req, err)
	}
	return resp
}

func defaultingFailed(req *admissionv1.AdmissionRequest, err error) *admissionv1.AdmissionResponse {
	return webhook.Errored(http.StatusInternalServerError, fmt.Errorf("defaulting DaemonSet %s/%s: %w", req.Namespace, req.Name, err))
}

// withDefaultedSpecFields returns the object as received, raw, with each spec field that
// defaulting changed (from before to after) replaced by its defaulted value.
//
// Patching from the whole typed object instead would also rewrite what the Go types merely
// spell differently, such as the empty "resources" and null "creationTimestamp" they add
// to the pod template: the stored template would differ from what the user wrote although
// no default applies to it.
func withDefaultedSpecFields(raw []byte, before, after *appsv1alpha1.DaemonSetSpec) (*unstructured.Unstructured, error) {
	var object map[string]any
	if err := utiljson.Unmarshal(raw, &object); err != nil {
		return nil, fmt.Errorf("decoding the object: %w", err)
	}
	beforeFields, err := jsonFields(before)
	if err != nil {
		return nil, err
	}
	afterFields, err := jsonFields(after)
	if err != nil {
		return nil, err
	}
	spec, _ := object["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	changed := false
	for key, value := range afterFields {
		if !apiequality.Semantic.DeepEqual(beforeFields[key], value) {
			spec[key] = value
			changed = true
		}
	}
	if changed {
		object["spec"] = spec
	}
	return &unstructured.Unstructured{Object: object}, nil
}

// jsonFields is v's JSON object as a map, numbers decoded as the API server decodes them.
func jsonFields(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding the spec: %w", err)
	}
	var fields map[string]any
	if err := utiljson.Unmarshal(data, &fields); err != nil {
		return nil, fmt.Errorf("decoding the spec: %w", err)
	}
	return fields, nil
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
		old, err := decode(req.OldObject.Raw, "oldObject")
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

// checkKind refuses requests about anything but a v1alpha1 DaemonSet. The rules only ask
// for those, and the API server converts requests made through other versions, so anything
// else is a misconfigured webhook: decoding it as a DaemonSet would judge the wrong object.
func checkKind(req *admissionv1.AdmissionRequest) error {
	got := schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind}
	if got != daemonSetKind {
		return fmt.Errorf("this webhook admits %s only, not %s", daemonSetKind, got)
	}
	return nil
}

// decode decodes what the request holds under name into a DaemonSet, strictly: field
// names match case-sensitively, and duplicate or unknown fields are refused. The mutating
// webhook's patch is computed against the typed object, so an unknown field would be
// silently removed from the user's object; refusing it says so instead.
func decode(raw []byte, name string) (*appsv1alpha1.DaemonSet, error) {
	// The review's decoding leaves a null object empty.
	if len(raw) == 0 {
		return nil, fmt.Errorf("request.%s is empty", name)
	}
	ds := &appsv1alpha1.DaemonSet{}
	strictErrs, err := sigsjson.UnmarshalStrict(raw, ds)
	if err != nil {
		return nil, fmt.Errorf("decoding request.%s as a DaemonSet: %w", name, err)
	}
	if len(strictErrs) > 0 {
		problems := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			problems[i] = e.Error()
		}
		return nil, fmt.Errorf("decoding request.%s as a DaemonSet: %s", name, strings.Join(problems, "; "))
	}
	if (ds.APIVersion != "" || ds.Kind != "") && ds.GroupVersionKind() != daemonSetKind {
		return nil, fmt.Errorf("request.%s is %s %s, not a %s", name, ds.APIVersion, ds.Kind, daemonSetKind)
	}
	return ds, nil
}
