package cloneset

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	"github.com/bosun-dev/bosun/pkg/webhook"
)

func readJSON(t *testing.T, name string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// asJSON is v encoded and decoded generically: what a client reads back.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func intOrStr(v intstr.IntOrString) *intstr.IntOrString { return &v }

// The defaults of both versions are exactly OpenKruise's: the *-defaulted.json files are
// what OpenKruise 1.9's CloneSet webhook makes of the other two (a v1alpha1 in-place
// CloneSet with a surge, a v1beta1 InPlaceOnly one with a percentage partition, both with
// a pod template and claim templates that every core default applies to). The template is
// hashed into the revision name: a difference would roll every pod on a handover.
func TestSetDefaultsAsOpenKruise(t *testing.T) {
	t.Run("v1alpha1", func(t *testing.T) {
		var cs, want appsv1alpha1.CloneSet
		readJSON(t, "cloneset-v1alpha1.json", &cs)
		readJSON(t, "cloneset-v1alpha1-defaulted.json", &want)
		SetDefaults(&cs, true)
		if diff := cmp.Diff(asJSON(t, &want), asJSON(t, &cs)); diff != "" {
			t.Errorf("defaulted CloneSet differs from OpenKruise's (-want +got):\n%s", diff)
		}
	})
	t.Run("v1beta1", func(t *testing.T) {
		var cs, want appsv1beta1.CloneSet
		readJSON(t, "cloneset-v1beta1.json", &cs)
		readJSON(t, "cloneset-v1beta1-defaulted.json", &want)
		SetDefaultsV1beta1(&cs, true)
		if diff := cmp.Diff(asJSON(t, &want), asJSON(t, &cs)); diff != "" {
			t.Errorf("defaulted CloneSet differs from OpenKruise's (-want +got):\n%s", diff)
		}
	})
}

// Without templates, only the spec's own fields are defaulted.
func TestSetDefaultsWithoutTemplates(t *testing.T) {
	var cs appsv1beta1.CloneSet
	readJSON(t, "cloneset-v1beta1.json", &cs)
	template := cs.Spec.Template.DeepCopy()
	claims := append([]corev1.PersistentVolumeClaim(nil), cs.Spec.VolumeClaimTemplates...)
	SetDefaultsV1beta1(&cs, false)
	if !apiequality.Semantic.DeepEqual(&cs.Spec.Template, template) || !apiequality.Semantic.DeepEqual(cs.Spec.VolumeClaimTemplates, claims) {
		t.Error("the templates were defaulted")
	}
	if cs.Spec.Replicas == nil || *cs.Spec.Replicas != 1 || cs.Spec.RevisionHistoryLimit == nil || *cs.Spec.RevisionHistoryLimit != 10 {
		t.Errorf("replicas %v, revisionHistoryLimit %v; want 1 and 10", cs.Spec.Replicas, cs.Spec.RevisionHistoryLimit)
	}
}

// The spec's defaults per version, the rules OpenKruise applies, and for v1alpha1 OnDelete
// bosun's: no rolling-update limits, which v1beta1 has no place for.
func TestSpecDefaults(t *testing.T) {
	twenty := intOrStr(intstr.FromString("20%"))
	zero := intOrStr(intstr.FromInt32(0))
	alpha := []struct {
		name string
		in   appsv1alpha1.CloneSetUpdateStrategy
		want appsv1alpha1.CloneSetUpdateStrategy
	}{
		{"empty", appsv1alpha1.CloneSetUpdateStrategy{},
			appsv1alpha1.CloneSetUpdateStrategy{Type: appsv1alpha1.RecreateCloneSetUpdateStrategyType, Partition: zero, MaxUnavailable: twenty, MaxSurge: zero}},
		{"in place", appsv1alpha1.CloneSetUpdateStrategy{Type: appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType, MaxUnavailable: zero, MaxSurge: intOrStr(intstr.FromInt32(1))},
			appsv1alpha1.CloneSetUpdateStrategy{Type: appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType, Partition: zero, MaxUnavailable: zero,
				MaxSurge: intOrStr(intstr.FromInt32(1)), InPlaceUpdateStrategy: &appsv1alpha1.InPlaceUpdateStrategy{}}},
		{"OnDelete", appsv1alpha1.CloneSetUpdateStrategy{Type: appsv1alpha1.OnDeleteCloneSetUpdateStrategyType},
			appsv1alpha1.CloneSetUpdateStrategy{Type: appsv1alpha1.OnDeleteCloneSetUpdateStrategyType}},
	}
	for _, tc := range alpha {
		t.Run("v1alpha1 "+tc.name, func(t *testing.T) {
			cs := &appsv1alpha1.CloneSet{Spec: appsv1alpha1.CloneSetSpec{UpdateStrategy: tc.in}}
			SetDefaults(cs, false)
			if diff := cmp.Diff(asJSON(t, tc.want), asJSON(t, cs.Spec.UpdateStrategy)); diff != "" {
				t.Errorf("updateStrategy (-want +got):\n%s", diff)
			}
		})
	}
	beta := []struct {
		name string
		in   appsv1beta1.CloneSetUpdateStrategy
		want appsv1beta1.CloneSetUpdateStrategy
	}{
		{"empty", appsv1beta1.CloneSetUpdateStrategy{}, appsv1beta1.CloneSetUpdateStrategy{Type: appsv1beta1.RollingUpdateCloneSetUpdateStrategyType,
			RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{PodUpdatePolicy: appsv1beta1.RecreateCloneSetPodUpdateStrategyType,
				Partition: zero, MaxUnavailable: twenty, MaxSurge: zero}}},
		{"in place", appsv1beta1.CloneSetUpdateStrategy{RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{
			PodUpdatePolicy: appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType, Partition: intOrStr(intstr.FromString("50%"))}},
			appsv1beta1.CloneSetUpdateStrategy{Type: appsv1beta1.RollingUpdateCloneSetUpdateStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{PodUpdatePolicy: appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType,
					Partition: intOrStr(intstr.FromString("50%")), MaxUnavailable: twenty, MaxSurge: zero,
					InPlaceUpdateStrategy: &appsv1beta1.InPlaceUpdateStrategy{}}}},
		{"OnDelete", appsv1beta1.CloneSetUpdateStrategy{Type: appsv1beta1.OnDeleteCloneSetUpdateStrategyType},
			appsv1beta1.CloneSetUpdateStrategy{Type: appsv1beta1.OnDeleteCloneSetUpdateStrategyType}},
	}
	for _, tc := range beta {
		t.Run("v1beta1 "+tc.name, func(t *testing.T) {
			cs := &appsv1beta1.CloneSet{Spec: appsv1beta1.CloneSetSpec{UpdateStrategy: tc.in}}
			SetDefaultsV1beta1(cs, false)
			if diff := cmp.Diff(asJSON(t, tc.want), asJSON(t, cs.Spec.UpdateStrategy)); diff != "" {
				t.Errorf("updateStrategy (-want +got):\n%s", diff)
			}
		})
	}
	cs := &appsv1beta1.CloneSet{Spec: appsv1beta1.CloneSetSpec{Replicas: ptr.To[int32](0), RevisionHistoryLimit: ptr.To[int32](0)}}
	SetDefaultsV1beta1(cs, false)
	if *cs.Spec.Replicas != 0 || *cs.Spec.RevisionHistoryLimit != 0 {
		t.Errorf("set zeros were replaced: replicas %d, revisionHistoryLimit %d", *cs.Spec.Replicas, *cs.Spec.RevisionHistoryLimit)
	}
}

// up is the v1beta1 form of a v1alpha1 CloneSet, without what the conversion records for
// the way back.
func up(cs *appsv1alpha1.CloneSet) *appsv1beta1.CloneSet {
	hub := &appsv1beta1.CloneSet{}
	appsv1alpha1.ConvertCloneSetToV1beta1(cs.DeepCopy(), hub)
	delete(hub.Annotations, appsv1alpha1.V1alpha1ConversionAnnotation)
	if len(hub.Annotations) == 0 {
		hub.Annotations = nil
	}
	hub.TypeMeta = metav1.TypeMeta{APIVersion: "apps.kruise.io/v1beta1", Kind: "CloneSet"}
	return hub
}

// commutationCases are v1alpha1 CloneSets that exercise every default and every carrier.
func commutationCases(t *testing.T) map[string]*appsv1alpha1.CloneSet {
	var full appsv1alpha1.CloneSet
	readJSON(t, "cloneset-v1alpha1.json", &full)
	cases := map[string]*appsv1alpha1.CloneSet{"templates and claims": &full}
	for _, typ := range []appsv1alpha1.CloneSetUpdateStrategyType{"", appsv1alpha1.RecreateCloneSetUpdateStrategyType,
		appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType,
		appsv1alpha1.OnDeleteCloneSetUpdateStrategyType} {
		cs := validAlpha()
		cs.Spec.UpdateStrategy = appsv1alpha1.CloneSetUpdateStrategy{Type: typ}
		cases["type "+string(typ)] = cs
		limited := cs.DeepCopy()
		limited.Spec.UpdateStrategy.Partition = intOrStr(intstr.FromInt32(2))
		limited.Spec.UpdateStrategy.Paused = true
		cases["type "+string(typ)+" with partition"] = limited
	}
	carried := validAlpha()
	carried.Labels = map[string]string{appsv1alpha1.CloneSetScalingExcludePreparingDeleteKey: "true"}
	carried.Annotations = map[string]string{
		appsv1alpha1.ImagePreDownloadParallelismKey:      "3",
		appsv1alpha1.ImagePreDownloadTimeoutSecondsKey:   "not a number",
		appsv1alpha1.ImagePreDownloadMinUpdatedReadyPods: "2",
	}
	carried.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	carried.Spec.ScaleStrategy.DisablePVCReuse = true
	cases["carriers"] = carried
	return cases
}

// Defaulting commutes with conversion: defaulting a v1alpha1 CloneSet and converting it
// gives what converting it and defaulting the v1beta1 form gives, templates included, on
// creation as on an update that changes the template.
func TestDefaultingCommutesWithConversion(t *testing.T) {
	for name, cs := range commutationCases(t) {
		t.Run(name, func(t *testing.T) {
			for _, templates := range []bool{true, false} {
				alpha := cs.DeepCopy()
				SetDefaults(alpha, templates)
				defaultedThenUp := up(alpha)

				upThenDefaulted := up(cs)
				SetDefaultsV1beta1(upThenDefaulted, templates)
				if diff := cmp.Diff(asJSON(t, defaultedThenUp), asJSON(t, upThenDefaulted)); diff != "" {
					t.Errorf("templates %t: up(default(a)) differs from default(up(a)) (-up(default) +default(up)):\n%s", templates, diff)
				}
			}
		})
	}
}

// The same over many random v1alpha1 CloneSets: every update type (and one no version
// defines), partial rolling-update settings, the exclude-preparing-delete label and the
// pre-download annotations in every form.
func TestDefaultingCommutesWithConversionRandomly(t *testing.T) {
	types := []appsv1alpha1.CloneSetUpdateStrategyType{"", "ReCreate", "InPlaceIfPossible", "InPlaceOnly", "OnDelete", "Sideways"}
	annotationValues := []string{"3", "-1", "many", ""}
	filler := randfill.NewWithSeed(20261126).NilChance(0.5).NumElements(0, 2).MaxDepth(6).Funcs(
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromInt32(c.Int31n(4))
			} else {
				*v = intstr.FromString([]string{"0%", "25%", "100%"}[c.Intn(3)])
			}
		},
		func(v *appsv1alpha1.CloneSetUpdateStrategyType, c randfill.Continue) { *v = types[c.Intn(len(types))] },
		// The templates are defaulted alike in both versions, and converted as copies.
		func(*corev1.PodTemplateSpec, randfill.Continue) {},
		func(*[]corev1.PersistentVolumeClaim, randfill.Continue) {},
		func(*appsv1alpha1.Lifecycle, randfill.Continue) {},
		func(v *metav1.ObjectMeta, c randfill.Continue) {
			v.Name = "web"
			if c.Intn(3) == 0 {
				v.Labels = map[string]string{appsv1alpha1.CloneSetScalingExcludePreparingDeleteKey: []string{"true", "false"}[c.Intn(2)]}
			}
			for _, key := range []string{appsv1alpha1.ImagePreDownloadParallelismKey, appsv1alpha1.ImagePreDownloadTimeoutSecondsKey,
				appsv1alpha1.ImagePreDownloadMinUpdatedReadyPods} {
				if c.Intn(3) == 0 {
					if v.Annotations == nil {
						v.Annotations = map[string]string{}
					}
					v.Annotations[key] = annotationValues[c.Intn(len(annotationValues))]
				}
			}
		},
		func(*appsv1alpha1.CloneSetStatus, randfill.Continue) {},
	)
	const objects = 2000
	for i := range objects {
		a := &appsv1alpha1.CloneSet{}
		filler.Fill(a)
		alpha := a.DeepCopy()
		SetDefaults(alpha, false)
		left := up(alpha)
		right := up(a)
		SetDefaultsV1beta1(right, false)
		if !apiequality.Semantic.DeepEqual(left, right) {
			t.Fatalf("object %d: up(default_α(a)) differs from default_β(up(a)) (-left +right):\n%s\na: %+v", i, cmp.Diff(left, right), a.Spec)
		}
	}
}

// Through the webhooks: each version's patch, applied to the object as received, gives
// objects whose conversions agree.
func TestDefaultingPatchesCommute(t *testing.T) {
	for name, cs := range commutationCases(t) {
		t.Run(name, func(t *testing.T) {
			f := newFixture()
			alphaReq := request(t, "v1alpha1", admissionv1.Create, cs, nil)
			var alpha appsv1alpha1.CloneSet
			if err := json.Unmarshal(patched(t, alphaReq, f.handle(t, webhook.Mutating, alphaReq)), &alpha); err != nil {
				t.Fatal(err)
			}
			betaReq := request(t, "v1beta1", admissionv1.Create, up(cs), nil)
			var beta appsv1beta1.CloneSet
			if err := json.Unmarshal(patched(t, betaReq, f.handle(t, webhook.Mutating, betaReq)), &beta); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(asJSON(t, up(&alpha)), asJSON(t, &beta)); diff != "" {
				t.Errorf("patched objects disagree (-v1alpha1 +v1beta1):\n%s", diff)
			}
		})
	}
}
