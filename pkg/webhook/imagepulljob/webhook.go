package imagepulljob

import (
	"context"
	"net/http"
	"slices"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/featuregate"

	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/webhook"
)

// The names of the webhooks and the version-less paths OpenKruise 1.9 serves them at, so
// that configurations and dashboards written for one work for the other. The paths of
// earlier releases, which named the version, are still answered for one release: the
// configurations of replicas not yet upgraded point at them.
const (
	MutatingName         = "mimagepulljob.kb.io"
	MutatingPath         = "/mutate-apps-kruise-io-imagepulljob"
	LegacyMutatingPath   = "/mutate-apps-kruise-io-v1alpha1-imagepulljob"
	ValidatingName       = "vimagepulljob.kb.io"
	ValidatingPath       = "/validate-apps-kruise-io-imagepulljob"
	LegacyValidatingPath = "/validate-apps-kruise-io-v1alpha1-imagepulljob"
)

var (
	jobKind      = appsv1beta1.SchemeGroupVersion.WithKind("ImagePullJob")
	jobGroupKind = jobKind.GroupKind()
)

// Registrations are the ImagePullJob's two webhooks, both called on CREATE and UPDATE: the
// defaulting one and the validating one. gates is read on every request,
// features.DefaultFeatureGate when nil.
func Registrations(gates featuregate.FeatureGate) []webhook.Registration {
	if gates == nil {
		gates = features.DefaultFeatureGate
	}
	v := &validator{gates: gates}
	w := &webhook.ResourceWebhook[appsv1beta1.ImagePullJob, *appsv1beta1.ImagePullJob]{
		Kind:     jobKind,
		Resource: "imagepulljobs",
		Spokes: []webhook.Spoke[appsv1beta1.ImagePullJob, *appsv1beta1.ImagePullJob]{
			webhook.NewSpoke(appsv1alpha1.SchemeGroupVersion.WithKind("ImagePullJob"), alphaDefaults, appsv1alpha1.ConvertImagePullJobToV1beta1),
		},
		MutatingName:          MutatingName,
		MutatingPath:          MutatingPath,
		LegacyMutatingPaths:   []string{LegacyMutatingPath},
		Default:               defaults,
		ValidatingName:        ValidatingName,
		ValidatingPath:        ValidatingPath,
		LegacyValidatingPaths: []string{LegacyValidatingPath},
		Validate:              v.validate,
	}
	return w.Registrations()
}

// alphaDefaults returns the patch that defaults a v1alpha1 job. The versions have the same
// schema and defaults, so the patch is the one of the job's v1beta1 form.
func alphaDefaults(req *admissionv1.AdmissionRequest, job *appsv1alpha1.ImagePullJob) []webhook.Addition {
	hub := &appsv1beta1.ImagePullJob{}
	appsv1alpha1.ConvertImagePullJobToV1beta1(job.DeepCopy(), hub)
	return defaults(req, hub)
}

// defaults returns the patch that defaults the spec and, on CREATE, adds the deletion
// protection finalizer.
func defaults(req *admissionv1.AdmissionRequest, job *appsv1beta1.ImagePullJob) []webhook.Addition {
	before := job.Spec.DeepCopy()
	appsv1beta1.SetDefaults_ImagePullJob(job)
	additions := defaultedSpecFields(before, &job.Spec)
	if req.Operation == admissionv1.Create && !slices.Contains(job.Finalizers, appsv1beta1.ImagePullJobProtectionFinalizer) {
		finalizers := append(slices.Clone(job.Finalizers), appsv1beta1.ImagePullJobProtectionFinalizer)
		additions = append(additions, webhook.Addition{Path: "/metadata/finalizers", Value: finalizers})
	}
	return additions
}

// defaultedSpecFields returns one addition per spec field that defaulting changed, with its
// defaulted value. Only the fields defaulting touches are compared; patching the whole spec
// would rewrite what the user wrote in other spellings. An empty spec (the API server checks
// that image is set only after mutation) is set whole, since "add" needs the parent.
func defaultedSpecFields(before, after *appsv1beta1.ImagePullJobSpec) []webhook.Addition {
	var additions []webhook.Addition
	if !apiequality.Semantic.DeepEqual(before.CompletionPolicy, after.CompletionPolicy) {
		additions = append(additions, webhook.Addition{Path: "/spec/completionPolicy", Value: after.CompletionPolicy})
	}
	if !apiequality.Semantic.DeepEqual(before.PullPolicy, after.PullPolicy) {
		additions = append(additions, webhook.Addition{Path: "/spec/pullPolicy", Value: after.PullPolicy})
	}
	if before.ImagePullPolicy != after.ImagePullPolicy {
		additions = append(additions, webhook.Addition{Path: "/spec/imagePullPolicy", Value: after.ImagePullPolicy})
	}
	if len(additions) > 0 && apiequality.Semantic.DeepEqual(*before, appsv1beta1.ImagePullJobSpec{}) {
		return []webhook.Addition{{Path: "/spec", Value: after}}
	}
	return additions
}

type validator struct {
	gates featuregate.FeatureGate
}

// validate denies an invalid job with a 400 naming every offending field, a change of
// pullSecrets with a 403, and, while the feature is off, new jobs and spec changes with a
// 403.
func (v *validator) validate(_ context.Context, req *admissionv1.AdmissionRequest, job, old *appsv1beta1.ImagePullJob) *admissionv1.AdmissionResponse {
	name := webhook.ObjectName(req, job)
	if !v.gates.Enabled(features.ImagePullJobGate) {
		// Metadata-only updates still pass: refusing them would keep the controller from
		// removing the finalizer, and the job from ever going away.
		if old == nil || !apiequality.Semantic.DeepEqual(old.Spec, job.Spec) {
			return webhook.Denied(http.StatusForbidden, "ImagePullJob is disabled: enable feature gate %s", features.ImagePullJobGate)
		}
	}
	if old != nil {
		if job.DeletionTimestamp != nil && apiequality.Semantic.DeepEqual(old.Spec, job.Spec) {
			// A job being deleted only has its finalizer removed; nothing to judge.
			return webhook.Allowed()
		}
		if errs := ValidateUpdate(job, old); len(errs) > 0 {
			return forbidden(name, errs)
		}
	}
	if errs := Validate(job); len(errs) > 0 {
		return invalid(name, errs)
	}
	return webhook.Allowed()
}

// invalid refuses the request with the status the API server gives an invalid object, one
// cause per field error, but with code 400 (Bad Request), the code OpenKruise answers with.
func invalid(name string, errs field.ErrorList) *admissionv1.AdmissionResponse {
	return webhook.InvalidWithCode(http.StatusBadRequest, jobGroupKind, name, errs)
}

// forbidden refuses an update that changes an immutable field with 403, naming the fields.
func forbidden(name string, errs field.ErrorList) *admissionv1.AdmissionResponse {
	return webhook.InvalidWithCode(http.StatusForbidden, jobGroupKind, name, errs)
}
