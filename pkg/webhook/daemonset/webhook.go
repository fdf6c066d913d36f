package daemonset

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	"github.com/bosun-dev/bosun/pkg/webhook"
	admissionv1 "k8s.io/api/admission/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The names of the webhooks and the version-less paths OpenKruise 1.9 serves them at, so
// that configurations and dashboards written for one work for the other. The paths of
// earlier releases, which named the version, are still answered for one release: the
// configurations of replicas not yet upgraded point at them.
const (
	MutatingName         = "mdaemonset.kb.io"
	MutatingPath         = "/mutate-apps-kruise-io-daemonset"
	LegacyMutatingPath   = "/mutate-apps-kruise-io-v1alpha1-daemonset"
	ValidatingName       = "vdaemonset.kb.io"
	ValidatingPath       = "/validate-apps-kruise-io-daemonset"
	LegacyValidatingPath = "/validate-apps-kruise-io-v1alpha1-daemonset"
)

var (
	daemonSetKind      = appsv1beta1.SchemeGroupVersion.WithKind("DaemonSet")
	daemonSetGroupKind = daemonSetKind.GroupKind()
)

// Registrations are the DaemonSet's two webhooks, both called on CREATE and UPDATE of
// v1alpha1 and v1beta1 objects: the defaulting one and the validating one.
func Registrations() []webhook.Registration {
	w := &webhook.ResourceWebhook[appsv1beta1.DaemonSet, *appsv1beta1.DaemonSet]{
		Kind:     daemonSetKind,
		Resource: "daemonsets",
		Spokes: []webhook.Spoke[appsv1beta1.DaemonSet, *appsv1beta1.DaemonSet]{
			webhook.NewSpoke(appsv1alpha1.SchemeGroupVersion.WithKind("DaemonSet"), alphaDefaults, appsv1alpha1.ConvertDaemonSetToV1beta1),
		},
		MutatingName:          MutatingName,
		MutatingPath:          MutatingPath,
		LegacyMutatingPaths:   []string{LegacyMutatingPath},
		Default:               defaults,
		StaleCarriers:         staleCarriers,
		ValidatingName:        ValidatingName,
		ValidatingPath:        ValidatingPath,
		LegacyValidatingPaths: []string{LegacyValidatingPath},
		Validate:              validate,
	}
	return w.Registrations()
}

// alphaDefaults returns the patch that defaults a v1alpha1 object.
func alphaDefaults(_ *admissionv1.AdmissionRequest, ds *appsv1alpha1.DaemonSet) []webhook.Addition {
	before := ds.Spec.DeepCopy()
	SetDefaults(ds)
	return defaultedSpecFields(before, &ds.Spec)
}

// defaults returns the patch that defaults a v1beta1 object.
func defaults(_ *admissionv1.AdmissionRequest, ds *appsv1beta1.DaemonSet) []webhook.Addition {
	before := ds.Spec.DeepCopy()
	SetDefaultsV1beta1(ds)
	return defaultedSpecFields(before, &ds.Spec)
}

// staleCarriers returns the progressive-create-pod annotation of a v1beta1 object whose
// scaleStrategy is set and says otherwise: the field decides, and the annotation would only
// mislead whoever reads it.
func staleCarriers(ds *appsv1beta1.DaemonSet) []webhook.StaleCarrier {
	value, ok := ds.Annotations[appsv1beta1.ProgressiveCreatePodAnnotation]
	if !ok || ds.Spec.ScaleStrategy == nil || (value == "true") == ds.Spec.ScaleStrategy.PartitionedScaling {
		return nil
	}
	return []webhook.StaleCarrier{{
		Annotation: appsv1beta1.ProgressiveCreatePodAnnotation,
		Warning: fmt.Sprintf("metadata.annotations[%s]: removed: %q disagrees with spec.scaleStrategy.partitionedScaling (%t), which takes precedence",
			appsv1beta1.ProgressiveCreatePodAnnotation, value, ds.Spec.ScaleStrategy.PartitionedScaling),
	}}
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
//
// before and after point to specs of one version, v1alpha1 or v1beta1.
func defaultedSpecFields[S any](before, after *S) []webhook.Addition {
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
func validate(_ context.Context, req *admissionv1.AdmissionRequest, ds, old *appsv1beta1.DaemonSet) *admissionv1.AdmissionResponse {
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
