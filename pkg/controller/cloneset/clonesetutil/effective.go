package clonesetutil

import (
	"strconv"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The settings below are read in the hub version, v1beta1, where v1alpha1 keeps them in a
// label (exclude-preparing-delete) and annotations (image pre-download). A CloneSet
// written in v1alpha1 through a conversion that copies nothing between the two (OpenKruise's
// CRDs convert with strategy None), or by any writer that kept only the label or
// annotation, must behave as it did in v1alpha1. Every reader takes these values from here.

// ExcludePreparingDelete reports whether pods held in PreparingDelete by a preDelete hook
// are left out of the count of a CloneSet's pods, so that their replacements are created
// while they wait: spec.scaleStrategy.excludePreparingDelete, or the CloneSet label
// apps.kruise.io/cloneset-scaling-exclude-preparing-delete "true" (exactly that), or the
// controller's --cloneset-scaling-exclude-preparing-delete, passed as flag. Any one of the
// three turns it on: the label is the v1alpha1 form of the field, and v1alpha1 clients
// keep writing it.
func ExcludePreparingDelete(cs *appsv1beta1.CloneSet, flag bool) bool {
	return flag || cs.Spec.ScaleStrategy.ExcludePreparingDelete ||
		cs.Labels[appsv1beta1.CloneSetScalingExcludePreparingDeleteKey] == "true"
}

// PreDownloadSettings are the image pre-download settings of a CloneSet's in-place
// updates.
type PreDownloadSettings struct {
	// Parallelism is how many nodes pull at once; 0 pauses the pulls.
	Parallelism int32
	// TimeoutSeconds bounds each pull.
	TimeoutSeconds int32
	// MinUpdatedReadyPods is how many pods of the update revision must be ready before
	// the other nodes pull its images.
	MinUpdatedReadyPods int32
}

// PreDownload returns the image pre-download settings of a CloneSet. Each is the field of
// spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy when set, else the annotation
// that carries it in v1alpha1 (apps.kruise.io/image-predownload-parallelism,
// -timeout-seconds, -min-updated-ready-pods) when it parses (PreDownloadAnnotation), else
// the default: parallelism 1, timeout 300 s, no ready pods needed. A set field is never
// overridden by its annotation, whatever the annotation says. Values admission refuses (below
// 0, a parallelism that is a percentage or no integer), which only an object stored around
// it can hold, give the default: a field holding one does not fall back to its annotation,
// which may be stale.
func PreDownload(cs *appsv1beta1.CloneSet) PreDownloadSettings {
	var strategy appsv1beta1.InPlaceUpdateStrategy
	if ru := cs.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.InPlaceUpdateStrategy != nil {
		strategy = *ru.InPlaceUpdateStrategy
	}
	settings := PreDownloadSettings{
		Parallelism:         appsv1beta1.DefaultImagePreDownloadParallelism,
		TimeoutSeconds:      appsv1beta1.DefaultImagePreDownloadTimeoutSeconds,
		MinUpdatedReadyPods: 0,
	}
	if p := strategy.ImagePreDownloadParallelism; p != nil {
		if n, ok := ParallelismValue(p); ok && n >= 0 {
			settings.Parallelism = n
		}
	} else if n, ok := PreDownloadAnnotation(cs, appsv1beta1.ImagePreDownloadParallelismKey); ok && n >= 0 {
		settings.Parallelism = n
	}
	settings.TimeoutSeconds = effectiveInt32(cs, strategy.ImagePreDownloadTimeoutSeconds,
		appsv1beta1.ImagePreDownloadTimeoutSecondsKey, settings.TimeoutSeconds)
	settings.MinUpdatedReadyPods = effectiveInt32(cs, strategy.ImagePreDownloadMinUpdatedReadyPods,
		appsv1beta1.ImagePreDownloadMinUpdatedReadyPods, settings.MinUpdatedReadyPods)
	return settings
}

// effectiveInt32 is field when set, else the annotation key when it parses, else def;
// negative values count as unset.
func effectiveInt32(cs *appsv1beta1.CloneSet, field *int32, key string, def int32) int32 {
	if field != nil {
		if *field >= 0 {
			return *field
		}
		return def
	}
	if n, ok := PreDownloadAnnotation(cs, key); ok && n >= 0 {
		return n
	}
	return def
}

// PreDownloadAnnotation parses the pre-download annotation key of a CloneSet, a decimal
// int32 (sign allowed, no spaces), as conversion reads it. ok is false when the annotation
// is absent or does not parse.
func PreDownloadAnnotation(cs *appsv1beta1.CloneSet, key string) (int32, bool) {
	value, ok := cs.Annotations[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(value, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}

// ParallelismValue is the number an imagePreDownloadParallelism stands for: an integer, or
// a string that is a decimal int32. ok is false for anything else, percentages included.
func ParallelismValue(p *intstr.IntOrString) (int32, bool) {
	if p.Type == intstr.Int {
		return p.IntVal, true
	}
	n, err := strconv.ParseInt(p.StrVal, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}
