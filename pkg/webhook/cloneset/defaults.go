package cloneset

import (
	"encoding/json"
	"reflect"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-base/featuregate"

	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/webhook"
	"github.com/bosun-dev/bosun/pkg/webhook/podtemplate"
)

// SetDefaults writes the defaults of a v1alpha1 CloneSet in place: replicas 1,
// revisionHistoryLimit 10, updateStrategy.type ReCreate, inPlaceUpdateStrategy {} for the
// in-place types and, unless the type is OnDelete, partition 0, maxUnavailable 20% and
// maxSurge 0 (the rules live with the API types, appsv1alpha1.SetDefaults_CloneSet). With
// templates, the core defaults of the pod template and of every volume claim template
// too (package podtemplate).
func SetDefaults(cs *appsv1alpha1.CloneSet, templates bool) {
	appsv1alpha1.SetObjectDefaults_CloneSet(cs)
	if templates {
		setTemplateDefaults(&cs.Spec.Template, cs.Spec.VolumeClaimTemplates)
	}
}

// SetDefaultsV1beta1 writes the defaults of a v1beta1 CloneSet in place: replicas 1,
// revisionHistoryLimit 10, updateStrategy.type RollingUpdate and, for RollingUpdate,
// rollingUpdate {} when nil, podUpdatePolicy ReCreate, inPlaceUpdateStrategy {} for the
// in-place policies, partition 0, maxUnavailable 20% and maxSurge 0
// (appsv1beta1.SetDefaults_CloneSet). With templates, the core defaults of the pod template
// and of every volume claim template too. Defaulting a v1alpha1 CloneSet with SetDefaults
// and converting it gives what converting it and defaulting it with this gives, up to the
// reserved annotation of the conversion.
func SetDefaultsV1beta1(cs *appsv1beta1.CloneSet, templates bool) {
	appsv1beta1.SetObjectDefaults_CloneSet(cs)
	if templates {
		setTemplateDefaults(&cs.Spec.Template, cs.Spec.VolumeClaimTemplates)
	}
}

func setTemplateDefaults(template *corev1.PodTemplateSpec, claims []corev1.PersistentVolumeClaim) {
	podtemplate.SetDefaults(&template.Spec)
	for i := range claims {
		podtemplate.SetClaimDefaults(&claims[i])
	}
}

// defaulter answers the defaulting requests of both versions.
type defaulter struct {
	gates featuregate.FeatureGate
}

// alpha returns the patch that defaults a v1alpha1 CloneSet.
func (d *defaulter) alpha(req *admissionv1.AdmissionRequest, cs *appsv1alpha1.CloneSet) []webhook.Addition {
	before := cs.DeepCopy()
	SetDefaults(cs, templatesDefaulted(d.gates, req, &before.Spec.Template,
		func(old *appsv1alpha1.CloneSet) *corev1.PodTemplateSpec { return &old.Spec.Template }))
	return defaultsPatch(req, before, cs, &cs.Spec)
}

// beta returns the patch that defaults a v1beta1 CloneSet.
func (d *defaulter) beta(req *admissionv1.AdmissionRequest, cs *appsv1beta1.CloneSet) []webhook.Addition {
	before := cs.DeepCopy()
	SetDefaultsV1beta1(cs, templatesDefaulted(d.gates, req, &before.Spec.Template,
		func(old *appsv1beta1.CloneSet) *corev1.PodTemplateSpec { return &old.Spec.Template }))
	return defaultsPatch(req, before, cs, &cs.Spec)
}

// templatesDefaulted reports whether a request's pod and claim templates get the core
// defaults: never with feature gate TemplateNoDefaults; otherwise on CREATE, and on UPDATE
// only when the pod template differs from the old object's (T, the request's version).
// template is the pod template as received. The template is hashed into the revision
// name, so a CloneSet stored before these defaults existed, or while the gate was on, must
// keep its revision until its template is changed on purpose, as in OpenKruise.
//
// The old object is the stored one and decodes; should it not, the template counts as
// changed.
func templatesDefaulted[T any](gates featuregate.FeatureGate, req *admissionv1.AdmissionRequest, template *corev1.PodTemplateSpec,
	oldTemplate func(*T) *corev1.PodTemplateSpec) bool {
	if gates.Enabled(features.TemplateNoDefaults) {
		return false
	}
	if req.Operation != admissionv1.Update {
		return true
	}
	old := new(T)
	if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
		return true
	}
	return !reflect.DeepEqual(*oldTemplate(old), *template)
}

// defaultsPatch returns the additions that write what defaulting changed from before to
// after into the object as received. Defaults only add members, which additions can
// always express; should one ever not, the whole defaulted spec replaces the received one.
func defaultsPatch(req *admissionv1.AdmissionRequest, before, after, spec any) []webhook.Addition {
	additions, err := webhook.DefaultedAdditions(req.Object.Raw, before, after)
	if err != nil {
		return []webhook.Addition{{Path: "/spec", Value: spec}}
	}
	return additions
}
