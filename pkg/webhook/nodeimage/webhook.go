package nodeimage

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

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
	MutatingName         = "mnodeimage.kb.io"
	MutatingPath         = "/mutate-apps-kruise-io-nodeimage"
	LegacyMutatingPath   = "/mutate-apps-kruise-io-v1alpha1-nodeimage"
	ValidatingName       = "vnodeimage.kb.io"
	ValidatingPath       = "/validate-apps-kruise-io-nodeimage"
	LegacyValidatingPath = "/validate-apps-kruise-io-v1alpha1-nodeimage"
)

var (
	nodeImageKind      = appsv1beta1.SchemeGroupVersion.WithKind("NodeImage")
	nodeImageGroupKind = nodeImageKind.GroupKind()
)

// Registrations are the NodeImage's two webhooks, both called on CREATE and UPDATE: the
// defaulting one and the validating one. gates is read on every request,
// features.DefaultFeatureGate when nil.
func Registrations(gates featuregate.FeatureGate) []webhook.Registration {
	if gates == nil {
		gates = features.DefaultFeatureGate
	}
	v := &validator{gates: gates}
	w := &webhook.ResourceWebhook[appsv1beta1.NodeImage, *appsv1beta1.NodeImage]{
		Kind:     nodeImageKind,
		Resource: "nodeimages",
		Spokes: []webhook.Spoke[appsv1beta1.NodeImage, *appsv1beta1.NodeImage]{
			webhook.NewSpoke(appsv1alpha1.SchemeGroupVersion.WithKind("NodeImage"), alphaDefaults, appsv1alpha1.ConvertNodeImageToV1beta1),
		},
		MutatingName:          MutatingName,
		MutatingPath:          MutatingPath,
		LegacyMutatingPaths:   []string{LegacyMutatingPath},
		Default:               defaults,
		ValidatingName:        ValidatingName,
		ValidatingPath:        ValidatingPath,
		LegacyValidatingPaths: []string{LegacyValidatingPath},
		Validate:              v.validate,
		// Every update is judged on the NodeImage alone.
		OldObjectUnused: true,
	}
	return w.Registrations()
}

// alphaDefaults returns the patch that defaults a v1alpha1 NodeImage. The versions have the
// same schema and defaults, so the patch is the one of its v1beta1 form.
func alphaDefaults(req *admissionv1.AdmissionRequest, ni *appsv1alpha1.NodeImage) []webhook.Addition {
	hub := &appsv1beta1.NodeImage{}
	appsv1alpha1.ConvertNodeImageToV1beta1(ni.DeepCopy(), hub)
	return defaults(req, hub)
}

// defaults returns the patch that defaults every tag: createdAt now when absent, and a
// pull policy with the default timeout and backoff limit.
func defaults(_ *admissionv1.AdmissionRequest, ni *appsv1beta1.NodeImage) []webhook.Addition {
	before := ni.Spec.DeepCopy()
	SetDefaults(ni)
	return defaultedTagFields(before, &ni.Spec)
}

// SetDefaults writes the defaults of a NodeImage's tags in place. The rules live with the
// API types, so that the webhook, a scheme's defaulter and tests all apply the same ones.
func SetDefaults(ni *appsv1beta1.NodeImage) {
	appsv1beta1.SetDefaults_NodeImage(ni)
}

// defaultedTagFields returns one addition per tag field that defaulting changed (from
// before to after): createdAt and pullPolicy. Only these members are patched, each as an
// object member (which "add" replaces), never as an array element (which "add" would
// insert), and nothing else of the user's object is rewritten. The exception is an image
// with an empty tag, which may have been sent as null: a null has no members to add to, so
// that image's tags are set whole.
func defaultedTagFields(before, after *appsv1beta1.NodeImageSpec) []webhook.Addition {
	names := make([]string, 0, len(after.Images))
	for name := range after.Images {
		names = append(names, name)
	}
	// Sorted so that the same object always gets the same patch.
	sort.Strings(names)
	var additions []webhook.Addition
	for _, name := range names {
		afterTags, beforeTags := after.Images[name].Tags, before.Images[name].Tags
		if slices.ContainsFunc(beforeTags, func(tag appsv1beta1.ImageTagSpec) bool {
			return apiequality.Semantic.DeepEqual(tag, appsv1beta1.ImageTagSpec{})
		}) {
			additions = append(additions, webhook.Addition{Path: "/spec/images/" + escapePointer(name) + "/tags", Value: afterTags})
			continue
		}
		for i := range afterTags {
			prefix := "/spec/images/" + escapePointer(name) + "/tags/" + strconv.Itoa(i)
			if !apiequality.Semantic.DeepEqual(beforeTags[i].CreatedAt, afterTags[i].CreatedAt) {
				additions = append(additions, webhook.Addition{Path: prefix + "/createdAt", Value: afterTags[i].CreatedAt})
			}
			if !apiequality.Semantic.DeepEqual(beforeTags[i].PullPolicy, afterTags[i].PullPolicy) {
				additions = append(additions, webhook.Addition{Path: prefix + "/pullPolicy", Value: afterTags[i].PullPolicy})
			}
		}
	}
	return additions
}

// escapePointer escapes a map key for use as one token of a JSON pointer (RFC 6901):
// image names hold slashes.
func escapePointer(token string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(token)
}

type validator struct {
	gates featuregate.FeatureGate
}

// validate denies an invalid NodeImage with a 400 naming every offending field, and every
// new NodeImage while the node agent's APIs are switched off (403).
func (v *validator) validate(_ context.Context, req *admissionv1.AdmissionRequest, ni, _ *appsv1beta1.NodeImage) *admissionv1.AdmissionResponse {
	if req.Operation == admissionv1.Create && !v.gates.Enabled(features.KruiseDaemon) {
		return webhook.Denied(http.StatusForbidden, "feature-gate %s is not enabled", features.KruiseDaemon)
	}
	// A NodeImage being deleted is going whatever it says; refusing its updates, such as
	// the removal of a finalizer, could only keep it from going.
	if req.Operation == admissionv1.Update && ni.DeletionTimestamp != nil {
		return webhook.Allowed()
	}
	if errs := Validate(ni); len(errs) > 0 {
		return invalid(webhook.ObjectName(req, ni), errs)
	}
	return webhook.Allowed()
}

// invalid refuses the request with the status the API server gives an invalid object, one
// cause per field error, but with code 400 (Bad Request) instead of 422: OpenKruise answers
// 400, and clients written against it may test for that code.
func invalid(name string, errs field.ErrorList) *admissionv1.AdmissionResponse {
	return webhook.InvalidWithCode(http.StatusBadRequest, nodeImageGroupKind, name, errs)
}
