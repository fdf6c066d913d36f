package api_test

import (
	"math/rand"
	"strconv"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

// The CloneSet's part of the fuzzed conversion tests: injection of its carriers (a label
// and three annotations) and of the update strategy shapes that random values would hardly
// ever produce, and the commutation of its defaulting with conversion.

var cloneSetPreDownloadKeys = []string{
	appsv1alpha1.ImagePreDownloadParallelismKey,
	appsv1alpha1.ImagePreDownloadTimeoutSecondsKey,
	appsv1alpha1.ImagePreDownloadMinUpdatedReadyPods,
}

func cloneSetRecordPaths() []string {
	paths := []string{
		"metadata.labels[" + appsv1alpha1.CloneSetScalingExcludePreparingDeleteKey + "]",
		"spec.scaleStrategy.excludePreparingDelete", "spec.updateStrategy",
	}
	for _, key := range cloneSetPreDownloadKeys {
		paths = append(paths, "metadata.annotations["+key+"]")
	}
	return paths
}

// withoutKeys returns m without keys, nil when nothing is left; m itself when there are
// no keys to leave out.
func withoutKeys(m map[string]string, keys []string) map[string]string {
	if len(keys) == 0 {
		return m
	}
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for _, k := range keys {
		delete(out, k)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// maybeLabel gives labels the carrier label key with a carrier value or a random one, or
// removes it.
func maybeLabel(r *rand.Rand, labels map[string]string, key string) map[string]string {
	switch r.Intn(4) {
	case 0:
		delete(labels, key)
		return labels
	case 1:
		return setAnnotation(labels, key, randomString(r))
	default:
		return setAnnotation(labels, key, pick(r, "true", "true", "TRUE", "false", "", " true"))
	}
}

func randomInt32(r *rand.Rand) *int32 {
	if r.Intn(3) == 0 {
		return nil
	}
	n := int32(pick(r, 0, 1, 3, -1, 2147483647, -2147483648, int(r.Int31())))
	return &n
}

func randomParallelism(r *rand.Rand) *intstr.IntOrString {
	switch r.Intn(4) {
	case 0:
		return nil
	case 1:
		v := intstr.FromString(pick(r, "50", "050", "50%", "abc", "", "-2", randomString(r)))
		return &v
	default:
		v := intstr.FromInt32(int32(pick(r, 0, 1, 3, -1, 2147483647, int(r.Int31()))))
		return &v
	}
}

func randomIntOrString(r *rand.Rand) *intstr.IntOrString {
	switch r.Intn(3) {
	case 0:
		return nil
	case 1:
		v := intstr.FromString(pick(r, "20%", "100%", "x", ""))
		return &v
	default:
		v := intstr.FromInt32(int32(pick(r, 0, 1, 2, -1)))
		return &v
	}
}

// preDownloadText gives an annotation text for a pre-download field: its own formatting,
// another one that parses to the same number, or nothing.
func preDownloadText(r *rand.Rand, text string) (string, bool) {
	switch r.Intn(4) {
	case 0:
		return text, true
	case 1:
		return "0" + text, true
	case 2:
		return "+" + text, true
	}
	return "", false
}

func carryAlphaCloneSet(r *rand.Rand, obj runtime.Object) {
	cs := obj.(*appsv1alpha1.CloneSet)
	cs.Labels = maybeLabel(r, cs.Labels, appsv1alpha1.CloneSetScalingExcludePreparingDeleteKey)
	for _, key := range cloneSetPreDownloadKeys {
		maybeCarrier(r, &cs.ObjectMeta, key)
	}
	us := &cs.Spec.UpdateStrategy
	us.Type = appsv1alpha1.CloneSetUpdateStrategyType(pick(r,
		"", "ReCreate", "InPlaceIfPossible", "InPlaceOnly", "OnDelete", "OnDelete", "RollingUpdate", randomString(r)))
	if r.Intn(3) == 0 {
		// Nothing that needs a rolling update in v1beta1, but maybe the type.
		*us = appsv1alpha1.CloneSetUpdateStrategy{Type: us.Type}
		if r.Intn(2) == 0 {
			us.ScatterStrategy = appsv1alpha1.UpdateScatterStrategy{}
		}
	}
	if r.Intn(2) == 0 {
		us.Partition, us.MaxUnavailable, us.MaxSurge = randomIntOrString(r), randomIntOrString(r), randomIntOrString(r)
	}
	switch r.Intn(4) {
	case 0:
		us.InPlaceUpdateStrategy = nil
	case 1:
		us.InPlaceUpdateStrategy = &appsv1alpha1.InPlaceUpdateStrategy{}
	case 2:
		// Settings in the spec, which v1alpha1 also has, beside the annotations.
		us.InPlaceUpdateStrategy = &appsv1alpha1.InPlaceUpdateStrategy{
			GracePeriodSeconds:                  int32(pick(r, 0, 0, 10)),
			ImagePreDownloadParallelism:         randomParallelism(r),
			ImagePreDownloadTimeoutSeconds:      randomInt32(r),
			ImagePreDownloadMinUpdatedReadyPods: randomInt32(r),
		}
	}
}

func carryBetaCloneSet(r *rand.Rand, obj runtime.Object) {
	cs := obj.(*appsv1beta1.CloneSet)
	cs.Labels = maybeLabel(r, cs.Labels, appsv1alpha1.CloneSetScalingExcludePreparingDeleteKey)
	cs.Spec.ScaleStrategy.ExcludePreparingDelete = r.Intn(2) == 0
	for _, key := range cloneSetPreDownloadKeys {
		maybeCarrier(r, &cs.ObjectMeta, key)
	}
	us := &cs.Spec.UpdateStrategy
	us.Type = appsv1beta1.CloneSetUpdateStrategyType(pick(r,
		"", "RollingUpdate", "RollingUpdate", "OnDelete", "ReCreate", randomString(r)))
	switch r.Intn(4) {
	case 0:
		us.RollingUpdate = nil
		return
	case 1:
		us.RollingUpdate = &appsv1beta1.RollingUpdateCloneSetStrategy{}
	}
	if us.RollingUpdate == nil {
		us.RollingUpdate = &appsv1beta1.RollingUpdateCloneSetStrategy{}
	}
	ru := us.RollingUpdate
	ru.PodUpdatePolicy = appsv1beta1.CloneSetPodUpdateStrategyType(pick(r,
		"", "ReCreate", "InPlaceIfPossible", "InPlaceOnly", "OnDelete", "RollingUpdate", randomString(r)))
	if r.Intn(2) == 0 {
		ru.Partition, ru.MaxUnavailable, ru.MaxSurge = randomIntOrString(r), randomIntOrString(r), randomIntOrString(r)
	}
	switch r.Intn(4) {
	case 0:
		ru.InPlaceUpdateStrategy = nil
	case 1:
		ru.InPlaceUpdateStrategy = &appsv1beta1.InPlaceUpdateStrategy{}
	default:
		ipu := &appsv1beta1.InPlaceUpdateStrategy{
			GracePeriodSeconds:                  int32(pick(r, 0, 0, 10)),
			ImagePreDownloadParallelism:         randomParallelism(r),
			ImagePreDownloadTimeoutSeconds:      randomInt32(r),
			ImagePreDownloadMinUpdatedReadyPods: randomInt32(r),
		}
		ru.InPlaceUpdateStrategy = ipu
		// Carriers that agree with their fields, verbatim or in another formatting.
		if p := ipu.ImagePreDownloadParallelism; p != nil {
			if text, ok := preDownloadText(r, p.String()); ok {
				cs.Annotations = setAnnotation(cs.Annotations, appsv1alpha1.ImagePreDownloadParallelismKey, text)
			}
		}
		if n := ipu.ImagePreDownloadTimeoutSeconds; n != nil {
			if text, ok := preDownloadText(r, strconv.Itoa(int(*n))); ok {
				cs.Annotations = setAnnotation(cs.Annotations, appsv1alpha1.ImagePreDownloadTimeoutSecondsKey, text)
			}
		}
		if n := ipu.ImagePreDownloadMinUpdatedReadyPods; n != nil {
			if text, ok := preDownloadText(r, strconv.Itoa(int(*n))); ok {
				cs.Annotations = setAnnotation(cs.Annotations, appsv1alpha1.ImagePreDownloadMinUpdatedReadyPods, text)
			}
		}
	}
}

// TestCloneSetDefaultingCommutesWithConversion checks, on fuzzed v1alpha1 CloneSets, that
// defaulting and then converting gives what converting and then defaulting gives, up to
// the reserved annotations: an object defaulted by a v1alpha1 client or webhook reads the
// same in v1beta1 as one defaulted there.
func TestCloneSetDefaultingCommutesWithConversion(t *testing.T) {
	scheme := newConversionScheme(t)
	src := newFuzzSource(t, scheme, seedFor("CloneSet", "defaulting"))
	n := objectCount(t)
	for i := 0; i < n && !t.Failed(); i++ {
		a := src.object(func() runtime.Object { return &appsv1alpha1.CloneSet{} }, carryAlphaCloneSet).(*appsv1alpha1.CloneSet)

		defaulted := a.DeepCopy()
		appsv1alpha1.SetDefaults_CloneSet(defaulted)
		var defaultedThenUp appsv1beta1.CloneSet
		appsv1alpha1.ConvertCloneSetToV1beta1(defaulted, &defaultedThenUp)

		var upThenDefaulted appsv1beta1.CloneSet
		appsv1alpha1.ConvertCloneSetToV1beta1(a, &upThenDefaulted)
		appsv1beta1.SetDefaults_CloneSet(&upThenDefaulted)

		for _, obj := range []*appsv1beta1.CloneSet{&defaultedThenUp, &upThenDefaulted} {
			obj.Annotations = withoutKeys(obj.Annotations, []string{alphaReservedKey})
		}
		if !apiequality.Semantic.DeepEqual(defaultedThenUp, upThenDefaulted) {
			t.Errorf("defaulting does not commute with conversion for\n%s\nup(default(a)): %s\ndefault(up(a)): %s",
				dump(a), dump(&defaultedThenUp), dump(&upThenDefaulted))
		}
	}
	t.Logf("%d fuzzed v1alpha1 CloneSets: up(default_α(a)) ≡ default_β(up(a)) for every one", n)
}
