package daemonset

import (
	"context"
	"reflect"
	"strings"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	"github.com/bosun-dev/bosun/pkg/webhook"
	admissionv1 "k8s.io/api/admission/v1"
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
	w := &webhook.ResourceWebhook[appsv1alpha1.DaemonSet, *appsv1alpha1.DaemonSet]{
		Kind:           daemonSetKind,
		Resource:       "daemonsets",
		MutatingName:   MutatingName,
		MutatingPath:   MutatingPath,
		Default:        defaults,
		ValidatingName: ValidatingName,
		ValidatingPath: ValidatingPath,
		Validate:       validate,
	}
	return w.Registrations()
}

// defaults returns the patch that defaults the object.
func defaults(_ *admissionv1.AdmissionRequest, ds *appsv1alpha1.DaemonSet) []webhook.Addition {
	before := ds.Spec.DeepCopy()
	SetDefaults(ds)
	return defaultedSpecFields(before, &ds.Spec)
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
func validate(_ context.Context, req *admissionv1.AdmissionRequest, ds, old *appsv1alpha1.DaemonSet) *admissionv1.AdmissionResponse {
	var errs field.ErrorList
	if old != nil {
		errs = ValidateUpdate(ds, old)
	} else {
		errs = Validate(ds)
	}
	if len(errs) > 0 {
		return webhook.Invalid(daemonSetGroupKind, webhook.ObjectName(req, ds), errs)
	}
	return webhook.Allowed()
}
