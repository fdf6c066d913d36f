package imagelistpulljob

import (
	"context"
	"net/http"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/featuregate"

	"github.com/bosun-dev/bosun/pkg/controller/imagelistpulljob"
	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/webhook"
)

// The names and the version-less paths OpenKruise 1.9 gives the same webhooks, so that
// configurations and dashboards written for one work for the other.
const (
	MutatingName   = "mimagelistpulljob-v1beta1.kb.io"
	MutatingPath   = "/mutate-apps-kruise-io-imagelistpulljob"
	ValidatingName = "vimagelistpulljob-v1beta1.kb.io"
	ValidatingPath = "/validate-apps-kruise-io-imagelistpulljob"
)

var (
	listJobKind      = appsv1beta1.SchemeGroupVersion.WithKind("ImageListPullJob")
	listJobGroupKind = listJobKind.GroupKind()
)

// Registrations are the ImageListPullJob's two webhooks, both called on CREATE and UPDATE:
// the defaulting one and the validating one. gates is read on every request,
// features.DefaultFeatureGate when nil.
func Registrations(gates featuregate.FeatureGate) []webhook.Registration {
	if gates == nil {
		gates = features.DefaultFeatureGate
	}
	v := &validator{gates: gates}
	w := &webhook.ResourceWebhook[appsv1beta1.ImageListPullJob, *appsv1beta1.ImageListPullJob]{
		Kind:     listJobKind,
		Resource: "imagelistpulljobs",
		Spokes: []webhook.Spoke[appsv1beta1.ImageListPullJob, *appsv1beta1.ImageListPullJob]{
			webhook.NewSpoke(appsv1alpha1.SchemeGroupVersion.WithKind("ImageListPullJob"), alphaDefaults, appsv1alpha1.ConvertImageListPullJobToV1beta1),
		},
		MutatingName:   MutatingName,
		MutatingPath:   MutatingPath,
		Default:        defaults,
		ValidatingName: ValidatingName,
		ValidatingPath: ValidatingPath,
		Validate:       v.validate,
	}
	return w.Registrations()
}

// alphaDefaults returns the patch that defaults a v1alpha1 list job. The versions have the
// same schema and defaults, so the patch is the one of the list job's v1beta1 form.
func alphaDefaults(req *admissionv1.AdmissionRequest, listJob *appsv1alpha1.ImageListPullJob) []webhook.Addition {
	hub := &appsv1beta1.ImageListPullJob{}
	appsv1alpha1.ConvertImageListPullJobToV1beta1(listJob.DeepCopy(), hub)
	return defaults(req, hub)
}

// defaults returns the patch that defaults the spec, one addition per field defaulting
// changed: patching the whole spec would rewrite what the user wrote in other spellings. An
// empty spec is set whole, since "add" needs the parent.
func defaults(_ *admissionv1.AdmissionRequest, listJob *appsv1beta1.ImageListPullJob) []webhook.Addition {
	before := listJob.Spec.DeepCopy()
	appsv1beta1.SetDefaults_ImageListPullJob(listJob)
	after := &listJob.Spec
	var additions []webhook.Addition
	if !apiequality.Semantic.DeepEqual(before.CompletionPolicy, after.CompletionPolicy) {
		additions = append(additions, webhook.Addition{Path: "/spec/completionPolicy", Value: after.CompletionPolicy})
	}
	if !apiequality.Semantic.DeepEqual(before.PullPolicy, after.PullPolicy) {
		additions = append(additions, webhook.Addition{Path: "/spec/pullPolicy", Value: after.PullPolicy})
	}
	if len(additions) > 0 && apiequality.Semantic.DeepEqual(*before, appsv1beta1.ImageListPullJobSpec{}) {
		return []webhook.Addition{{Path: "/spec", Value: after}}
	}
	return additions
}

type validator struct {
	gates featuregate.FeatureGate
}

// validate denies an invalid list job with a 400 naming every offending field and, while
// the feature is off, new list jobs and spec changes with a 403.
func (v *validator) validate(_ context.Context, req *admissionv1.AdmissionRequest, listJob, old *appsv1beta1.ImageListPullJob) *admissionv1.AdmissionResponse {
	specUnchanged := old != nil && apiequality.Semantic.DeepEqual(old.Spec, listJob.Spec)
	if !v.gates.Enabled(features.ImagePullJobGate) && !specUnchanged {
		// Metadata-only updates still pass: the controller labels list jobs with their
		// template hash.
		return webhook.Denied(http.StatusForbidden, "ImageListPullJob is disabled: enable feature gate %s", features.ImagePullJobGate)
	}
	if specUnchanged && sameMaxActiveImages(old, listJob) {
		// Judged when it was written; judging it again would only keep a list job written
		// while the webhook was away from being labelled or deleted.
		return webhook.Allowed()
	}
	if errs := Validate(listJob); len(errs) > 0 {
		return invalid(webhook.ObjectName(req, listJob), errs)
	}
	return webhook.Allowed()
}

// invalid refuses the request with the status the API server gives an invalid object, one
// cause per field error, but with code 400 (Bad Request), the code OpenKruise answers with.
func invalid(name string, errs field.ErrorList) *admissionv1.AdmissionResponse {
	return webhook.InvalidWithCode(http.StatusBadRequest, listJobGroupKind, name, errs)
}

// sameMaxActiveImages reports whether both list jobs carry the same value of the
// annotation limiting running children, or neither carries it.
func sameMaxActiveImages(a, b *appsv1beta1.ImageListPullJob) bool {
	va, oka := a.Annotations[imagelistpulljob.MaxActiveImagesAnnotation]
	vb, okb := b.Annotations[imagelistpulljob.MaxActiveImagesAnnotation]
	return oka == okb && va == vb
}
