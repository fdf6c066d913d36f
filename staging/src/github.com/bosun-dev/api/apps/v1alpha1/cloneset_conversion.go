package v1alpha1

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/bosun-dev/api/apps/v1beta1"
	"github.com/bosun-dev/api/internal/lossless"
)

// What differs between the CloneSet versions:
//   - v1alpha1's updateStrategy.type is v1beta1's updateStrategy.type together with
//     rollingUpdate.podUpdatePolicy: ReCreate, InPlaceIfPossible and InPlaceOnly are a
//     RollingUpdate with that policy, OnDelete is OnDelete; every other field of
//     v1alpha1's updateStrategy lives in v1beta1's rollingUpdate, for OnDelete too;
//   - scaleStrategy.disablePVCReuse is the negation of v1beta1's enablePVCReuse;
//   - v1beta1's scaleStrategy.excludePreparingDelete is the v1alpha1 label
//     apps.kruise.io/cloneset-scaling-exclude-preparing-delete: "true". A label, not an
//     annotation, is this kind's carrier: the API server keeps the labels a conversion
//     webhook writes as it keeps the annotations;
//   - v1beta1's inPlaceUpdateStrategy.imagePreDownload* fields are the v1alpha1
//     annotations apps.kruise.io/image-predownload-*. v1alpha1's schema has the fields
//     too; set there, they win over the annotations on the way up, and the way down
//     writes the annotations and leaves them unset.
//
// The label and the annotations are kept on the way up, as OpenKruise does.

const (
	cloneSetUpdateStrategyPath          = "spec.updateStrategy"
	cloneSetExcludePreparingDeletePath  = "spec.scaleStrategy.excludePreparingDelete"
	cloneSetExcludePreparingDeleteLabel = CloneSetScalingExcludePreparingDeleteKey
)

// cloneSetPreDownloadKeys are the annotations that carry the image pre-download settings.
var cloneSetPreDownloadKeys = []string{
	ImagePreDownloadParallelismKey, ImagePreDownloadTimeoutSecondsKey, ImagePreDownloadMinUpdatedReadyPods,
}

var cloneSetConversion = newCloneSetConversion()

func newCloneSetConversion() lossless.Kind[CloneSet, v1beta1.CloneSet] {
	alphaMeta := func(o *CloneSet) *metav1.ObjectMeta { return &o.ObjectMeta }
	betaMeta := func(o *v1beta1.CloneSet) *metav1.ObjectMeta { return &o.ObjectMeta }
	label := lossless.LabelPath(cloneSetExcludePreparingDeleteLabel)

	alphaItems := []lossless.Item[CloneSet]{
		lossless.Label(cloneSetExcludePreparingDeleteLabel, alphaMeta, label, cloneSetExcludePreparingDeletePath),
		lossless.Field(cloneSetUpdateStrategyPath,
			func(o *CloneSet) *CloneSetUpdateStrategy { return &o.Spec.UpdateStrategy },
			cloneSetUpdateStrategyPath),
	}
	betaItems := []lossless.Item[v1beta1.CloneSet]{
		lossless.Label(cloneSetExcludePreparingDeleteLabel, betaMeta, label),
		lossless.Field(cloneSetExcludePreparingDeletePath,
			func(o *v1beta1.CloneSet) *bool { return &o.Spec.ScaleStrategy.ExcludePreparingDelete },
			label),
	}
	// v1beta1's rolling update is made of v1alpha1's update strategy and the pre-download
	// annotations; a v1alpha1 annotation is made of v1beta1's annotation and the field in
	// the rolling update.
	betaStrategySources := []string{cloneSetUpdateStrategyPath}
	for _, key := range cloneSetPreDownloadKeys {
		path := lossless.AnnotationPath(key)
		alphaItems = append(alphaItems, lossless.Annotation(key, alphaMeta, path, cloneSetUpdateStrategyPath))
		betaItems = append(betaItems, lossless.Annotation(key, betaMeta, path))
		betaStrategySources = append(betaStrategySources, path)
	}
	betaItems = append(betaItems, lossless.Field(cloneSetUpdateStrategyPath,
		func(o *v1beta1.CloneSet) *v1beta1.CloneSetUpdateStrategy { return &o.Spec.UpdateStrategy },
		betaStrategySources...))

	return lossless.Kind[CloneSet, v1beta1.CloneSet]{
		A: lossless.Version[CloneSet]{Name: SchemeGroupVersion.Version, Meta: alphaMeta, Items: alphaItems},
		B: lossless.Version[v1beta1.CloneSet]{Name: v1beta1.SchemeGroupVersion.Version, Meta: betaMeta, Items: betaItems},
		Up: lossless.Mapping[CloneSet, v1beta1.CloneSet]{
			Copy: func(in *CloneSet, out *v1beta1.CloneSet) {
				_ = autoConvert_v1alpha1_CloneSet_To_v1beta1_CloneSet(in, out, nil)
			},
			Carry: carryCloneSetUp,
		},
		Down: lossless.Mapping[v1beta1.CloneSet, CloneSet]{
			Copy: func(in *v1beta1.CloneSet, out *CloneSet) {
				_ = autoConvert_v1beta1_CloneSet_To_v1alpha1_CloneSet(in, out, nil)
			},
			Carry: carryCloneSetDown,
		},
	}
}

func carryCloneSetUp(in *CloneSet, out *v1beta1.CloneSet) {
	out.Spec.ScaleStrategy.ExcludePreparingDelete = in.Labels[cloneSetExcludePreparingDeleteLabel] == "true"

	// A pre-download setting set in v1alpha1's spec is already in out; the annotations
	// fill in the others.
	var current v1beta1.InPlaceUpdateStrategy
	if ru := out.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.InPlaceUpdateStrategy != nil {
		current = *ru.InPlaceUpdateStrategy
	}
	want := current
	if want.ImagePreDownloadParallelism == nil {
		if n, ok := parseAnnotationInt32(in.Annotations, ImagePreDownloadParallelismKey); ok {
			v := intstr.FromInt32(n)
			want.ImagePreDownloadParallelism = &v
		}
	}
	if want.ImagePreDownloadTimeoutSeconds == nil {
		if n, ok := parseAnnotationInt32(in.Annotations, ImagePreDownloadTimeoutSecondsKey); ok {
			want.ImagePreDownloadTimeoutSeconds = &n
		}
	}
	if want.ImagePreDownloadMinUpdatedReadyPods == nil {
		if n, ok := parseAnnotationInt32(in.Annotations, ImagePreDownloadMinUpdatedReadyPods); ok {
			want.ImagePreDownloadMinUpdatedReadyPods = &n
		}
	}
	if want == current {
		return
	}
	// Copies: out's rolling update and in-place strategy may be in's memory.
	var ru v1beta1.RollingUpdateCloneSetStrategy
	if out.Spec.UpdateStrategy.RollingUpdate != nil {
		ru = *out.Spec.UpdateStrategy.RollingUpdate
	}
	ru.InPlaceUpdateStrategy = &want
	out.Spec.UpdateStrategy.RollingUpdate = &ru
}

func carryCloneSetDown(in *v1beta1.CloneSet, out *CloneSet) {
	if in.Spec.ScaleStrategy.ExcludePreparingDelete && in.Labels[cloneSetExcludePreparingDeleteLabel] != "true" {
		// A copy: out's labels are in's.
		labels := make(map[string]string, len(in.Labels)+1)
		for k, v := range in.Labels {
			labels[k] = v
		}
		labels[cloneSetExcludePreparingDeleteLabel] = "true"
		out.Labels = labels
	}

	ru := in.Spec.UpdateStrategy.RollingUpdate
	if ru == nil || ru.InPlaceUpdateStrategy == nil {
		return
	}
	ipu := ru.InPlaceUpdateStrategy
	if p := ipu.ImagePreDownloadParallelism; p != nil {
		current, ok := parseAnnotationInt32(in.Annotations, ImagePreDownloadParallelismKey)
		if !ok || p.Type != intstr.Int || p.IntVal != current {
			out.Annotations = withAnnotation(out.Annotations, ImagePreDownloadParallelismKey, p.String())
		}
	}
	for _, setting := range []struct {
		key   string
		value *int32
	}{
		{ImagePreDownloadTimeoutSecondsKey, ipu.ImagePreDownloadTimeoutSeconds},
		{ImagePreDownloadMinUpdatedReadyPods, ipu.ImagePreDownloadMinUpdatedReadyPods},
	} {
		if setting.value == nil {
			continue
		}
		if current, ok := parseAnnotationInt32(in.Annotations, setting.key); !ok || current != *setting.value {
			out.Annotations = withAnnotation(out.Annotations, setting.key, strconv.FormatInt(int64(*setting.value), 10))
		}
	}
}

// parseAnnotationInt32 reads the annotation key of annotations as a decimal int32, the
// form of the pre-download annotations. An absent or malformed value gives false.
func parseAnnotationInt32(annotations map[string]string, key string) (int32, bool) {
	v, ok := annotations[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}

// cloneSetUpdateTypeUp splits a v1alpha1 update strategy type into v1beta1's type and pod
// update policy. A type v1alpha1 does not define (stored without admission) becomes the
// policy of a rolling update, where v1beta1's validation reports it.
func cloneSetUpdateTypeUp(t CloneSetUpdateStrategyType) (v1beta1.CloneSetUpdateStrategyType, v1beta1.CloneSetPodUpdateStrategyType) {
	switch t {
	case "":
		return "", ""
	case OnDeleteCloneSetUpdateStrategyType:
		return v1beta1.OnDeleteCloneSetUpdateStrategyType, ""
	default:
		return v1beta1.RollingUpdateCloneSetUpdateStrategyType, v1beta1.CloneSetPodUpdateStrategyType(t)
	}
}

// cloneSetUpdateTypeDown joins v1beta1's update strategy type and pod update policy into
// v1alpha1's type: OnDelete stays OnDelete, otherwise the policy decides, and without one a
// rolling update recreates pods. A type v1beta1 does not define is kept as it is.
func cloneSetUpdateTypeDown(t v1beta1.CloneSetUpdateStrategyType, policy v1beta1.CloneSetPodUpdateStrategyType) CloneSetUpdateStrategyType {
	switch {
	case t == v1beta1.OnDeleteCloneSetUpdateStrategyType:
		return OnDeleteCloneSetUpdateStrategyType
	case policy != "":
		return CloneSetUpdateStrategyType(policy)
	case t == v1beta1.RollingUpdateCloneSetUpdateStrategyType:
		return RecreateCloneSetUpdateStrategyType
	default:
		return CloneSetUpdateStrategyType(t)
	}
}

// Convert_v1alpha1_CloneSet_To_v1beta1_CloneSet converts a CloneSet into v1beta1, the
// carried fields and reserved annotation included. It never fails.
func Convert_v1alpha1_CloneSet_To_v1beta1_CloneSet(in *CloneSet, out *v1beta1.CloneSet, s conversion.Scope) error {
	reportDrops(s, "CloneSet", cloneSetConversion.ConvertUp(in, out))
	return nil
}

// Convert_v1beta1_CloneSet_To_v1alpha1_CloneSet converts a CloneSet into v1alpha1, the
// carried fields and reserved annotation included. It never fails.
func Convert_v1beta1_CloneSet_To_v1alpha1_CloneSet(in *v1beta1.CloneSet, out *CloneSet, s conversion.Scope) error {
	reportDrops(s, "CloneSet", cloneSetConversion.ConvertDown(in, out))
	return nil
}

// Convert_v1alpha1_CloneSetScaleStrategy_To_v1beta1_CloneSetScaleStrategy converts the
// scale strategy; excludePreparingDelete comes from a label and is converted with the
// whole object.
func Convert_v1alpha1_CloneSetScaleStrategy_To_v1beta1_CloneSetScaleStrategy(in *CloneSetScaleStrategy, out *v1beta1.CloneSetScaleStrategy, s conversion.Scope) error {
	if err := autoConvert_v1alpha1_CloneSetScaleStrategy_To_v1beta1_CloneSetScaleStrategy(in, out, s); err != nil {
		return err
	}
	out.EnablePVCReuse = !in.DisablePVCReuse
	out.ExcludePreparingDelete = false
	return nil
}

// Convert_v1beta1_CloneSetScaleStrategy_To_v1alpha1_CloneSetScaleStrategy converts the
// scale strategy; excludePreparingDelete becomes a label and is converted with the whole
// object.
func Convert_v1beta1_CloneSetScaleStrategy_To_v1alpha1_CloneSetScaleStrategy(in *v1beta1.CloneSetScaleStrategy, out *CloneSetScaleStrategy, s conversion.Scope) error {
	if err := autoConvert_v1beta1_CloneSetScaleStrategy_To_v1alpha1_CloneSetScaleStrategy(in, out, s); err != nil {
		return err
	}
	out.DisablePVCReuse = !in.EnablePVCReuse
	return nil
}

// Convert_v1alpha1_CloneSetUpdateStrategy_To_v1beta1_CloneSetUpdateStrategy converts the
// update strategy: the type is split, the other fields move into the rolling update, which
// is left unset when it would be empty. The pre-download annotations are converted with the
// whole object.
func Convert_v1alpha1_CloneSetUpdateStrategy_To_v1beta1_CloneSetUpdateStrategy(in *CloneSetUpdateStrategy, out *v1beta1.CloneSetUpdateStrategy, s conversion.Scope) error {
	if err := autoConvert_v1alpha1_CloneSetUpdateStrategy_To_v1beta1_CloneSetUpdateStrategy(in, out, s); err != nil {
		return err
	}
	var policy v1beta1.CloneSetPodUpdateStrategyType
	out.Type, policy = cloneSetUpdateTypeUp(in.Type)
	out.RollingUpdate = nil
	if policy == "" && in.Partition == nil && in.MaxUnavailable == nil && in.MaxSurge == nil && !in.Paused &&
		in.PriorityStrategy == nil && len(in.ScatterStrategy) == 0 && in.InPlaceUpdateStrategy == nil {
		return nil
	}
	ru := &v1beta1.RollingUpdateCloneSetStrategy{
		Partition:       in.Partition,
		MaxUnavailable:  in.MaxUnavailable,
		MaxSurge:        in.MaxSurge,
		PodUpdatePolicy: policy,
		Paused:          in.Paused,
	}
	if in.PriorityStrategy != nil {
		ru.PriorityStrategy = new(v1beta1.UpdatePriorityStrategy)
		if err := Convert_v1alpha1_UpdatePriorityStrategy_To_v1beta1_UpdatePriorityStrategy(in.PriorityStrategy, ru.PriorityStrategy, s); err != nil {
			return err
		}
	}
	if in.ScatterStrategy != nil {
		ru.ScatterStrategy = make(v1beta1.UpdateScatterStrategy, len(in.ScatterStrategy))
		for i := range in.ScatterStrategy {
			if err := Convert_v1alpha1_UpdateScatterTerm_To_v1beta1_UpdateScatterTerm(&in.ScatterStrategy[i], &ru.ScatterStrategy[i], s); err != nil {
				return err
			}
		}
	}
	if in.InPlaceUpdateStrategy != nil {
		ru.InPlaceUpdateStrategy = new(v1beta1.InPlaceUpdateStrategy)
		if err := Convert_v1alpha1_InPlaceUpdateStrategy_To_v1beta1_InPlaceUpdateStrategy(in.InPlaceUpdateStrategy, ru.InPlaceUpdateStrategy, s); err != nil {
			return err
		}
	}
	out.RollingUpdate = ru
	return nil
}

// Convert_v1beta1_CloneSetUpdateStrategy_To_v1alpha1_CloneSetUpdateStrategy converts the
// update strategy: type and pod update policy are joined, the rolling update's fields move
// up. The pre-download settings become annotations, converted with the whole object; an
// in-place strategy that held nothing else is left unset.
func Convert_v1beta1_CloneSetUpdateStrategy_To_v1alpha1_CloneSetUpdateStrategy(in *v1beta1.CloneSetUpdateStrategy, out *CloneSetUpdateStrategy, s conversion.Scope) error {
	if err := autoConvert_v1beta1_CloneSetUpdateStrategy_To_v1alpha1_CloneSetUpdateStrategy(in, out, s); err != nil {
		return err
	}
	ru := in.RollingUpdate
	if ru == nil {
		*out = CloneSetUpdateStrategy{Type: cloneSetUpdateTypeDown(in.Type, "")}
		return nil
	}
	*out = CloneSetUpdateStrategy{
		Type:           cloneSetUpdateTypeDown(in.Type, ru.PodUpdatePolicy),
		Partition:      ru.Partition,
		MaxUnavailable: ru.MaxUnavailable,
		MaxSurge:       ru.MaxSurge,
		Paused:         ru.Paused,
	}
	if ru.PriorityStrategy != nil {
		out.PriorityStrategy = new(UpdatePriorityStrategy)
		if err := Convert_v1beta1_UpdatePriorityStrategy_To_v1alpha1_UpdatePriorityStrategy(ru.PriorityStrategy, out.PriorityStrategy, s); err != nil {
			return err
		}
	}
	if ru.ScatterStrategy != nil {
		out.ScatterStrategy = make(UpdateScatterStrategy, len(ru.ScatterStrategy))
		for i := range ru.ScatterStrategy {
			if err := Convert_v1beta1_UpdateScatterTerm_To_v1alpha1_UpdateScatterTerm(&ru.ScatterStrategy[i], &out.ScatterStrategy[i], s); err != nil {
				return err
			}
		}
	}
	if ipu := ru.InPlaceUpdateStrategy; ipu != nil {
		carriesPreDownload := ipu.ImagePreDownloadParallelism != nil || ipu.ImagePreDownloadTimeoutSeconds != nil ||
			ipu.ImagePreDownloadMinUpdatedReadyPods != nil
		if ipu.GracePeriodSeconds != 0 || !carriesPreDownload {
			out.InPlaceUpdateStrategy = &InPlaceUpdateStrategy{GracePeriodSeconds: ipu.GracePeriodSeconds}
		}
	}
	return nil
}
