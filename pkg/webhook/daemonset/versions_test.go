package daemonset

import (
	"encoding/json"
	"math/rand"
	"net/http"
	"strings"
	"testing"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"

	"github.com/bosun-dev/bosun/pkg/webhook"
	"github.com/bosun-dev/bosun/pkg/webhook/webhooktest"
)

// handleIn sends a request in version to the webhook of type typ.
func handleIn(t *testing.T, typ webhook.Type, version string, op admissionv1.Operation, object, oldObject runtime.Object) *admissionv1.AdmissionResponse {
	t.Helper()
	req := &admissionv1.AdmissionRequest{
		Kind:      metav1.GroupVersionKind{Group: "apps.kruise.io", Version: version, Kind: "DaemonSet"},
		Resource:  metav1.GroupVersionResource{Group: "apps.kruise.io", Version: version, Resource: "daemonsets"},
		Namespace: "kube-system",
		Name:      "agent",
		Operation: op,
	}
	encode := func(obj runtime.Object) []byte {
		raw, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	req.Object.Raw = encode(object)
	if oldObject != nil {
		req.OldObject.Raw = encode(oldObject)
	}
	for _, r := range Registrations() {
		if r.Type == typ {
			return r.Handler.Handle(t.Context(), req)
		}
	}
	t.Fatalf("no %s webhook", typ)
	return nil
}

// betaOf is the v1beta1 form of ds as a v1beta1 client writes it: without what a
// conversion records for the way back.
func betaOf(ds *appsv1alpha1.DaemonSet) *appsv1beta1.DaemonSet {
	hub := up(ds)
	delete(hub.Annotations, appsv1alpha1.V1alpha1ConversionAnnotation)
	hub.TypeMeta = metav1.TypeMeta{APIVersion: "apps.kruise.io/v1beta1", Kind: "DaemonSet"}
	return hub
}

// The same object gets the same verdict, code and fields in both versions.
func TestValidateBothVersions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*appsv1alpha1.DaemonSet)
		want   string
	}{
		{"valid", func(*appsv1alpha1.DaemonSet) {}, "allowed"},
		{"partitioned by annotation", func(ds *appsv1alpha1.DaemonSet) {
			ds.Annotations = map[string]string{appsv1alpha1.ProgressiveCreatePodAnnotation: "true"}
		}, "allowed"},
		{"annotation of any value", func(ds *appsv1alpha1.DaemonSet) {
			ds.Annotations = map[string]string{appsv1alpha1.ProgressiveCreatePodAnnotation: "yes please"}
		}, "allowed"},
		{"restart policy", func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure },
			"Unprocessable Entity spec.template.spec.restartPolicy"},
		{"no selector", func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Selector = nil }, "Unprocessable Entity spec.selector"},
		{"both limits", func(ds *appsv1alpha1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = intOrStr(intstr.FromInt32(1))
		}, "Unprocessable Entity spec.updateStrategy.rollingUpdate.maxSurge"},
		{"rollingUpdateType", func(ds *appsv1alpha1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.Type = "Sideways" },
			"Unprocessable Entity spec.updateStrategy.rollingUpdate.rollingUpdateType"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := validDaemonSet()
			tc.mutate(ds)
			alpha := handleIn(t, webhook.Validating, "v1alpha1", admissionv1.Create, ds, nil)
			beta := handleIn(t, webhook.Validating, "v1beta1", admissionv1.Create, betaOf(ds), nil)
			if got := webhooktest.Verdict(alpha); got != tc.want {
				t.Errorf("v1alpha1 answered %s, want %s", got, tc.want)
			}
			if got := webhooktest.Verdict(beta); got != tc.want {
				t.Errorf("v1beta1 answered %s, want %s", got, tc.want)
			}

			// Updates too, from the valid object.
			old := validDaemonSet()
			alpha = handleIn(t, webhook.Validating, "v1alpha1", admissionv1.Update, ds, old)
			beta = handleIn(t, webhook.Validating, "v1beta1", admissionv1.Update, betaOf(ds), betaOf(old))
			if webhooktest.Verdict(alpha) != webhooktest.Verdict(beta) {
				t.Errorf("update: v1alpha1 answered %s, v1beta1 %s", webhooktest.Verdict(alpha), webhooktest.Verdict(beta))
			}
		})
	}
}

// Surging is v1alpha1's: defaulted away there, and not a type v1beta1 accepts.
func TestSurgingPerVersion(t *testing.T) {
	ds := validDaemonSet()
	ds.Spec.UpdateStrategy.RollingUpdate = &appsv1alpha1.RollingUpdateDaemonSet{Type: appsv1alpha1.DeprecatedSurgingRollingUpdateType}
	if got := webhooktest.Verdict(handleIn(t, webhook.Validating, "v1alpha1", admissionv1.Create, ds, nil)); got != "allowed" {
		t.Errorf("v1alpha1 Surging answered %s, want allowed", got)
	}
	beta := betaOf(validDaemonSet())
	beta.Spec.UpdateStrategy.RollingUpdate.Type = "Surging"
	if got, want := webhooktest.Verdict(handleIn(t, webhook.Validating, "v1beta1", admissionv1.Create, beta, nil)),
		"Unprocessable Entity spec.updateStrategy.rollingUpdate.rollingUpdateType"; got != want {
		t.Errorf("v1beta1 Surging answered %s, want %s", got, want)
	}
	// v1beta1 defaulting leaves it for validation to refuse.
	beta.Spec.UpdateStrategy.RollingUpdate.MaxSurge, beta.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = nil, nil
	SetDefaultsV1beta1(beta)
	if beta.Spec.UpdateStrategy.RollingUpdate.Type != "Surging" {
		t.Errorf("v1beta1 defaulting rewrote Surging to %s", beta.Spec.UpdateStrategy.RollingUpdate.Type)
	}
}

// Scale strategy is mutable in v1beta1, as its v1alpha1 annotation always was.
func TestScaleStrategyMutable(t *testing.T) {
	old := betaOf(validDaemonSet())
	changed := old.DeepCopy()
	changed.Spec.ScaleStrategy = &appsv1beta1.DaemonSetScaleStrategy{PartitionedScaling: true}
	if got := webhooktest.Verdict(handleIn(t, webhook.Validating, "v1beta1", admissionv1.Update, changed, old)); got != "allowed" {
		t.Errorf("scaleStrategy change answered %s, want allowed", got)
	}
	changed.Spec.MinReadySeconds = 3
	changed.Spec.BurstReplicas = intOrStr(intstr.FromInt32(3))
	if got := webhooktest.Verdict(handleIn(t, webhook.Validating, "v1beta1", admissionv1.Update, changed, old)); got != "allowed" {
		t.Errorf("mutable fields answered %s, want allowed", got)
	}
}

// Defaulting commutes with conversion: defaulting a v1alpha1 object and converting it
// gives what converting it and defaulting in v1beta1 gives, up to the reserved
// annotation of the conversion.
func TestDefaultingCommutesWithConversion(t *testing.T) {
	ruTypes := []appsv1alpha1.RollingUpdateType{"", "Standard", "InPlaceIfPossible", "Surging", "Other"}
	strategyTypes := []appsv1alpha1.DaemonSetUpdateStrategyType{"", "RollingUpdate", "OnDelete"}
	filler := randfill.NewWithSeed(20261126).NilChance(0.4).NumElements(0, 2).MaxDepth(6).Funcs(
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromInt32(c.Int31n(4))
			} else {
				*v = intstr.FromString([]string{"0%", "25%", "100%"}[c.Intn(3)])
			}
		},
		func(v *appsv1alpha1.RollingUpdateType, c randfill.Continue) { *v = ruTypes[c.Intn(len(ruTypes))] },
		func(v *appsv1alpha1.DaemonSetUpdateStrategyType, c randfill.Continue) {
			*v = strategyTypes[c.Intn(len(strategyTypes))]
		},
		// The pod template is neither defaulted nor converted beyond a copy.
		func(*corev1.PodTemplateSpec, randfill.Continue) {},
		func(v *metav1.ObjectMeta, c randfill.Continue) {
			v.Name = "agent"
			if c.Intn(3) == 0 {
				v.Annotations = map[string]string{appsv1alpha1.ProgressiveCreatePodAnnotation: []string{"true", "false", ""}[c.Intn(3)]}
			}
		},
		func(*appsv1alpha1.DaemonSetStatus, randfill.Continue) {},
	)
	r := rand.New(rand.NewSource(1))
	const objects = 5000
	for i := range objects {
		a := &appsv1alpha1.DaemonSet{}
		filler.Fill(a)
		if r.Intn(4) == 0 {
			a.Spec = appsv1alpha1.DaemonSetSpec{}
		}

		defaultedAlpha := a.DeepCopy()
		SetDefaults(defaultedAlpha)
		left := up(defaultedAlpha)

		right := up(a)
		SetDefaultsV1beta1(right)

		delete(left.Annotations, appsv1alpha1.V1alpha1ConversionAnnotation)
		delete(right.Annotations, appsv1alpha1.V1alpha1ConversionAnnotation)
		if !apiequality.Semantic.DeepEqual(left, right) {
			t.Fatalf("object %d: up(default_α(a)) differs from default_β(up(a)) (-left +right):\n%s\na: %+v", i, cmp.Diff(left, right), a.Spec)
		}
	}
}

// Through the webhooks: the patch of each version, applied to the object as received, gives
// objects whose conversions agree.
func TestDefaultingPatchesCommute(t *testing.T) {
	for _, ru := range []*appsv1alpha1.RollingUpdateDaemonSet{
		nil,
		{Type: appsv1alpha1.DeprecatedSurgingRollingUpdateType},
		{Type: appsv1alpha1.DeprecatedSurgingRollingUpdateType, MaxUnavailable: intOrStr(intstr.FromString("10%"))},
		{MaxSurge: intOrStr(intstr.FromInt32(2))},
	} {
		ds := &appsv1alpha1.DaemonSet{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "DaemonSet"},
			ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "kube-system"},
		}
		ds.Spec.UpdateStrategy.RollingUpdate = ru
		alphaRaw, _ := json.Marshal(ds)
		resp := handleIn(t, webhook.Mutating, "v1alpha1", admissionv1.Create, ds, nil)
		if !resp.Allowed || resp.Patch == nil {
			t.Fatalf("v1alpha1: %+v, want allowed with defaults", resp)
		}
		alphaDoc := applyAdditions(t, string(alphaRaw), resp.Patch)
		alphaOut := &appsv1alpha1.DaemonSet{}
		remarshal(t, alphaDoc, alphaOut)

		beta := betaOf(ds)
		betaRaw, _ := json.Marshal(beta)
		resp = handleIn(t, webhook.Mutating, "v1beta1", admissionv1.Create, beta, nil)
		if !resp.Allowed || resp.Patch == nil {
			t.Fatalf("v1beta1: %+v, want allowed with defaults", resp)
		}
		betaOut := &appsv1beta1.DaemonSet{}
		remarshal(t, applyAdditions(t, string(betaRaw), resp.Patch), betaOut)

		left := up(alphaOut)
		delete(left.Annotations, appsv1alpha1.V1alpha1ConversionAnnotation)
		delete(betaOut.Annotations, appsv1alpha1.V1alpha1ConversionAnnotation)
		left.TypeMeta = betaOut.TypeMeta
		if !apiequality.Semantic.DeepEqual(left, betaOut) {
			t.Errorf("rollingUpdate %+v: patched objects disagree (-v1alpha1 +v1beta1):\n%s", ru, cmp.Diff(left, betaOut))
		}
	}
}

func remarshal(t *testing.T, doc map[string]any, out any) {
	t.Helper()
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
}

// A v1beta1 write whose scaleStrategy disagrees with the annotation loses the annotation,
// with a warning; one that agrees, or has no scaleStrategy, keeps it.
func TestStaleProgressiveCreatePod(t *testing.T) {
	for _, tc := range []struct {
		name       string
		annotation string
		scale      *appsv1beta1.DaemonSetScaleStrategy
		removed    bool
	}{
		{"field true, annotation false", "false", &appsv1beta1.DaemonSetScaleStrategy{PartitionedScaling: true}, true},
		{"field false, annotation true", "true", &appsv1beta1.DaemonSetScaleStrategy{}, true},
		{"both true", "true", &appsv1beta1.DaemonSetScaleStrategy{PartitionedScaling: true}, false},
		{"carrier without its field", "true", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := betaOf(validDaemonSet())
			ds.Annotations = map[string]string{appsv1beta1.ProgressiveCreatePodAnnotation: tc.annotation}
			ds.Spec.ScaleStrategy = tc.scale
			resp := handleIn(t, webhook.Mutating, "v1beta1", admissionv1.Update, ds, ds)
			if !resp.Allowed {
				t.Fatalf("denied: %+v", resp.Result)
			}
			removal := `{"op":"remove","path":"/metadata/annotations/daemonset.kruise.io~1progressive-create-pod"}`
			if got := strings.Contains(string(resp.Patch), removal); got != tc.removed {
				t.Errorf("patch %s, want the annotation removed: %t", resp.Patch, tc.removed)
			}
			if got := len(resp.Warnings) == 1 && strings.Contains(resp.Warnings[0], "spec.scaleStrategy.partitionedScaling"); got != tc.removed {
				t.Errorf("warnings %q, want one about the removal: %t", resp.Warnings, tc.removed)
			}
			// v1alpha1 writes have no field to disagree with: the annotation is theirs.
			alpha := validDaemonSet()
			alpha.Annotations = map[string]string{appsv1alpha1.ProgressiveCreatePodAnnotation: tc.annotation}
			if resp := handleIn(t, webhook.Mutating, "v1alpha1", admissionv1.Update, alpha, alpha); resp.Patch != nil || len(resp.Warnings) > 0 {
				t.Errorf("v1alpha1 write patched %s, warned %q", resp.Patch, resp.Warnings)
			}
		})
	}
}

// Both the version-less paths and the ones of earlier releases are answered.
func TestPathsServed(t *testing.T) {
	defaulted := validDaemonSet()
	raw, _ := json.Marshal(defaulted)
	for _, path := range []string{ValidatingPath, LegacyValidatingPath, MutatingPath, LegacyMutatingPath} {
		if resp := review(t, path, admissionv1.Create, string(raw), ""); !resp.Allowed {
			t.Errorf("%s denied a valid DaemonSet: %+v", path, resp.Result)
		}
	}
	if MutatingPath != "/mutate-apps-kruise-io-daemonset" || ValidatingPath != "/validate-apps-kruise-io-daemonset" {
		t.Errorf("paths %s and %s, want OpenKruise 1.9's", MutatingPath, ValidatingPath)
	}
}

// A request in a version the webhooks do not serve is refused with a 400.
func TestUnknownVersion(t *testing.T) {
	for _, typ := range []webhook.Type{webhook.Mutating, webhook.Validating} {
		resp := handleIn(t, typ, "v1", admissionv1.Create, validDaemonSet(), nil)
		if resp.Allowed || resp.Result.Code != http.StatusBadRequest {
			t.Errorf("%s: v1 request answered %+v, want 400", typ, resp.Result)
		}
	}
}

// A client may not write the reserved annotations of conversion.
func TestReservedAnnotationRefused(t *testing.T) {
	ds := validDaemonSet()
	ds.Annotations = map[string]string{appsv1alpha1.V1beta1ConversionAnnotation: "{}"}
	beta := betaOf(validDaemonSet())
	beta.Annotations = map[string]string{appsv1alpha1.V1alpha1ConversionAnnotation: "{}"}
	for _, typ := range []webhook.Type{webhook.Mutating, webhook.Validating} {
		for version, obj := range map[string]runtime.Object{"v1alpha1": ds, "v1beta1": beta} {
			resp := handleIn(t, typ, version, admissionv1.Create, obj, nil)
			if resp.Allowed || resp.Result.Code != http.StatusBadRequest || !strings.Contains(resp.Result.Message, "reserved") {
				t.Errorf("%s %s: answered %+v, want 400", typ, version, resp.Result)
			}
		}
	}
}
