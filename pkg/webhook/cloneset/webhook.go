package cloneset

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/component-base/featuregate"

	"github.com/bosun-dev/bosun/pkg/controller/cloneset/clonesetutil"
	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/webhook"
)

// The names of the webhooks and the version-less paths OpenKruise 1.9 serves them at, so
// that configurations and dashboards written for one work for the other. bosun never
// served CloneSets at the older paths, which named the version, so it does not answer
// there.
const (
	MutatingName   = "mcloneset.kb.io"
	MutatingPath   = "/mutate-apps-kruise-io-cloneset"
	ValidatingName = "vcloneset.kb.io"
	ValidatingPath = "/validate-apps-kruise-io-cloneset"
)

var (
	cloneSetKind      = appsv1beta1.SchemeGroupVersion.WithKind("CloneSet")
	cloneSetAlphaKind = appsv1alpha1.SchemeGroupVersion.WithKind("CloneSet")
	cloneSetGroupKind = cloneSetKind.GroupKind()
)

// Registrations are the CloneSet's two webhooks, both called on CREATE and UPDATE of
// v1alpha1 and v1beta1 objects: the defaulting one and the validating one. pods is where
// the validating webhook looks up, live, the pods a write adds to podsToDelete; gates is
// read on every request, features.DefaultFeatureGate when nil.
func Registrations(pods corev1client.PodsGetter, gates featuregate.FeatureGate) []webhook.Registration {
	if gates == nil {
		gates = features.DefaultFeatureGate
	}
	d := &defaulter{gates: gates}
	v := &validator{pods: pods}
	w := &webhook.ResourceWebhook[appsv1beta1.CloneSet, *appsv1beta1.CloneSet]{
		Kind:     cloneSetKind,
		Resource: "clonesets",
		Spokes: []webhook.Spoke[appsv1beta1.CloneSet, *appsv1beta1.CloneSet]{
			webhook.NewSpoke(cloneSetAlphaKind, d.alpha, appsv1alpha1.ConvertCloneSetToV1beta1),
		},
		MutatingName:   MutatingName,
		MutatingPath:   MutatingPath,
		Default:        d.beta,
		StaleCarriers:  staleCarriers,
		ValidatingName: ValidatingName,
		ValidatingPath: ValidatingPath,
		Validate:       v.validate,
	}
	return w.Registrations()
}

// staleCarriers returns the pre-download annotations of a v1beta1 CloneSet whose field is
// set and says otherwise: the field decides, and the annotation would only mislead whoever
// reads it (converting the object to v1alpha1 rewrites it anyway). An annotation without
// its field is left alone: it is honoured. So is the exclude-preparing-delete label: it is
// honoured whatever the field says.
func staleCarriers(cs *appsv1beta1.CloneSet) []webhook.StaleCarrier {
	var strategy appsv1beta1.InPlaceUpdateStrategy
	if ru := cs.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.InPlaceUpdateStrategy != nil {
		strategy = *ru.InPlaceUpdateStrategy
	}
	var stale []webhook.StaleCarrier
	for _, setting := range preDownloadSettings {
		value, present := cs.Annotations[setting.annotation]
		n, set, ok := setting.value(&strategy)
		if !present || !set {
			continue
		}
		if carried, parses := clonesetutil.PreDownloadAnnotation(cs, setting.annotation); parses && ok && carried == n {
			continue
		}
		stale = append(stale, webhook.StaleCarrier{
			Annotation: setting.annotation,
			Warning: fmt.Sprintf("metadata.annotations[%s]: removed: %q disagrees with spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy.%s, which takes precedence",
				setting.annotation, value, setting.field),
		})
	}
	return stale
}

type validator struct {
	pods corev1client.PodsGetter
}

// validate denies an invalid CloneSet with a 422 naming every offending field, on
// creation as on update. A v1alpha1 CloneSet is judged as its v1beta1 form, by the same
// rules, and its errors are named at the fields it wrote. A failed lookup of a pod named in
// podsToDelete is a 500: the client may retry.
func (v *validator) validate(ctx context.Context, req *admissionv1.AdmissionRequest, cs, old *appsv1beta1.CloneSet) *admissionv1.AdmissionResponse {
	if old != nil && sameSettings(cs, old) {
		// Judged when it was written; judging it again would only keep a CloneSet stored
		// around this webhook (or by OpenKruise, whose rules differ here and there) from
		// being labelled, finalized or migrated to the storage version.
		return webhook.Allowed()
	}
	var errs field.ErrorList
	if old != nil {
		errs = ValidateUpdate(cs, old)
	} else {
		errs = Validate(cs)
	}
	podErrs, err := v.podsToDeleteErrors(ctx, cs, old)
	if err != nil {
		return webhook.Errored(http.StatusInternalServerError, err)
	}
	errs = append(errs, podErrs...)
	if len(errs) == 0 {
		return webhook.Allowed()
	}
	if req.Kind.Version == cloneSetAlphaKind.Version {
		errs = alphaPaths(errs)
	}
	return webhook.Invalid(cloneSetGroupKind, webhook.ObjectName(req, cs), errs)
}

// sameSettings reports whether an update leaves the spec and the v1alpha1 forms of its
// fields (the exclude-preparing-delete label, the pre-download annotations) as they were.
func sameSettings(cs, old *appsv1beta1.CloneSet) bool {
	if !apiequality.Semantic.DeepEqual(cs.Spec, old.Spec) {
		return false
	}
	same := func(a, b map[string]string, key string) bool {
		va, oka := a[key]
		vb, okb := b[key]
		return oka == okb && va == vb
	}
	if !same(cs.Labels, old.Labels, appsv1beta1.CloneSetScalingExcludePreparingDeleteKey) {
		return false
	}
	for _, setting := range preDownloadSettings {
		if !same(cs.Annotations, old.Annotations, setting.annotation) {
			return false
		}
	}
	return true
}

// podsToDeleteErrors checks, live, the pods that cs's podsToDelete names and old's did not
// (every name on creation): each must exist, not be terminating and be controlled by the
// CloneSet, which would otherwise delete a pod that is not its own, or wait forever for one
// that never goes. A list with a name twice is reported by Validate and not looked up. err
// is set when a lookup fails for another reason than the pod's absence.
func (v *validator) podsToDeleteErrors(ctx context.Context, cs, old *appsv1beta1.CloneSet) (field.ErrorList, error) {
	names := cs.Spec.ScaleStrategy.PodsToDelete
	if len(names) == 0 || len(sets.New(names...)) != len(names) {
		return nil, nil
	}
	known := sets.New[string]()
	if old != nil {
		known.Insert(old.Spec.ScaleStrategy.PodsToDelete...)
	}
	namesPath := field.NewPath("spec", "scaleStrategy", "podsToDelete")
	var allErrs field.ErrorList
	for i, name := range names {
		if known.Has(name) {
			continue
		}
		pod, err := v.pods.Pods(cs.Namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			allErrs = append(allErrs, field.Invalid(namesPath.Index(i), name, "no such pod in the namespace of the CloneSet"))
		case err != nil:
			return nil, fmt.Errorf("looking up pod %s/%s named in spec.scaleStrategy.podsToDelete: %w", cs.Namespace, name, err)
		case pod.DeletionTimestamp != nil:
			allErrs = append(allErrs, field.Invalid(namesPath.Index(i), name, "the pod is already terminating"))
		default:
			if owner := metav1.GetControllerOf(pod); owner == nil || owner.UID != cs.UID {
				allErrs = append(allErrs, field.Invalid(namesPath.Index(i), name, "the pod is not controlled by this CloneSet"))
			}
		}
	}
	return allErrs, nil
}

// alphaPaths names errors found on the v1beta1 form of a v1alpha1 CloneSet at the fields
// the v1alpha1 client wrote: v1beta1's rollingUpdate is v1alpha1's updateStrategy, and its
// podUpdatePolicy v1alpha1's updateStrategy.type.
func alphaPaths(errs field.ErrorList) field.ErrorList {
	const (
		rollingUpdate = "spec.updateStrategy.rollingUpdate"
		policy        = rollingUpdate + ".podUpdatePolicy"
		strategy      = "spec.updateStrategy"
	)
	out := make(field.ErrorList, 0, len(errs))
	for _, e := range errs {
		switch {
		case e.Field == policy && e.Type == field.ErrorTypeNotSupported:
			out = append(out, field.NotSupported(field.NewPath("spec", "updateStrategy", "type"), e.BadValue, alphaUpdateTypes))
			continue
		case e.Field == rollingUpdate:
			renamed := *e
			renamed.Field = strategy
			e = &renamed
		case strings.HasPrefix(e.Field, rollingUpdate+"."), strings.HasPrefix(e.Field, rollingUpdate+"["):
			renamed := *e
			renamed.Field = strategy + strings.TrimPrefix(e.Field, rollingUpdate)
			e = &renamed
		}
		out = append(out, e)
	}
	return out
}

// alphaUpdateTypes are the values v1alpha1's updateStrategy.type accepts.
var alphaUpdateTypes = []string{
	string(appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType),
	string(appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType),
	string(appsv1alpha1.OnDeleteCloneSetUpdateStrategyType),
	string(appsv1alpha1.RecreateCloneSetUpdateStrategyType),
}
