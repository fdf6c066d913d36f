package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/bosun-dev/api/apps/v1beta1"
	"github.com/bosun-dev/api/internal/lossless"
)

// What differs between the DaemonSet versions:
//   - v1beta1's spec.scaleStrategy is the annotation daemonset.kruise.io/progressive-create-pod
//     in v1alpha1: "true" there is partitionedScaling true;
//   - v1beta1 has no Surging rolling update: it becomes the Standard rolling update it
//     always stood for, surging one pod at a time unless limits are set;
//   - status.daemonSetHash is v1beta1's status.updateRevision.

const (
	daemonSetScaleStrategyPath = "spec.scaleStrategy"
	daemonSetRollingUpdatePath = "spec.updateStrategy.rollingUpdate"
)

var daemonSetConversion = lossless.Kind[DaemonSet, v1beta1.DaemonSet]{
	A: lossless.Version[DaemonSet]{
		Name: SchemeGroupVersion.Version,
		Meta: func(o *DaemonSet) *metav1.ObjectMeta { return &o.ObjectMeta },
		Items: []lossless.Item[DaemonSet]{
			lossless.Annotation(ProgressiveCreatePodAnnotation,
				func(o *DaemonSet) *metav1.ObjectMeta { return &o.ObjectMeta },
				lossless.AnnotationPath(ProgressiveCreatePodAnnotation), daemonSetScaleStrategyPath),
			lossless.Field(daemonSetRollingUpdatePath,
				func(o *DaemonSet) **RollingUpdateDaemonSet { return &o.Spec.UpdateStrategy.RollingUpdate },
				daemonSetRollingUpdatePath),
		},
	},
	B: lossless.Version[v1beta1.DaemonSet]{
		Name: v1beta1.SchemeGroupVersion.Version,
		Meta: func(o *v1beta1.DaemonSet) *metav1.ObjectMeta { return &o.ObjectMeta },
		Items: []lossless.Item[v1beta1.DaemonSet]{
			lossless.Annotation(ProgressiveCreatePodAnnotation,
				func(o *v1beta1.DaemonSet) *metav1.ObjectMeta { return &o.ObjectMeta },
				lossless.AnnotationPath(ProgressiveCreatePodAnnotation)),
			lossless.Field(daemonSetScaleStrategyPath,
				func(o *v1beta1.DaemonSet) **v1beta1.DaemonSetScaleStrategy { return &o.Spec.ScaleStrategy },
				lossless.AnnotationPath(ProgressiveCreatePodAnnotation)),
			lossless.Field(daemonSetRollingUpdatePath,
				func(o *v1beta1.DaemonSet) **v1beta1.RollingUpdateDaemonSet {
					return &o.Spec.UpdateStrategy.RollingUpdate
				},
				daemonSetRollingUpdatePath),
		},
	},
	Up: lossless.Mapping[DaemonSet, v1beta1.DaemonSet]{
		Copy: func(in *DaemonSet, out *v1beta1.DaemonSet) {
			_ = autoConvert_v1alpha1_DaemonSet_To_v1beta1_DaemonSet(in, out, nil)
		},
		Carry: carryDaemonSetUp,
	},
	Down: lossless.Mapping[v1beta1.DaemonSet, DaemonSet]{
		Copy: func(in *v1beta1.DaemonSet, out *DaemonSet) {
			_ = autoConvert_v1beta1_DaemonSet_To_v1alpha1_DaemonSet(in, out, nil)
		},
		Carry: carryDaemonSetDown,
	},
}

func carryDaemonSetUp(in *DaemonSet, out *v1beta1.DaemonSet) {
	out.Spec.ScaleStrategy = nil
	if in.Annotations[ProgressiveCreatePodAnnotation] == "true" {
		out.Spec.ScaleStrategy = &v1beta1.DaemonSetScaleStrategy{PartitionedScaling: true}
	}

	if in.Spec.UpdateStrategy.RollingUpdate != nil &&
		in.Spec.UpdateStrategy.RollingUpdate.Type == DeprecatedSurgingRollingUpdateType {
		// A copy: out's rollingUpdate is in's.
		ru := *out.Spec.UpdateStrategy.RollingUpdate
		ru.Type = v1beta1.StandardRollingUpdateType
		if ru.MaxSurge == nil {
			one := intstr.FromInt32(1)
			ru.MaxSurge = &one
		}
		if ru.MaxUnavailable == nil {
			zero := intstr.FromInt32(0)
			ru.MaxUnavailable = &zero
		}
		out.Spec.UpdateStrategy.RollingUpdate = &ru
	}
}

func carryDaemonSetDown(in *v1beta1.DaemonSet, out *DaemonSet) {
	if in.Spec.ScaleStrategy != nil && in.Spec.ScaleStrategy.PartitionedScaling {
		out.Annotations = withAnnotation(out.Annotations, ProgressiveCreatePodAnnotation, "true")
	}
}

// withAnnotation sets key to value in annotations, a map of the converted object's own,
// allocating it when nil.
func withAnnotation(annotations map[string]string, key, value string) map[string]string {
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[key] = value
	return annotations
}

// Convert_v1alpha1_DaemonSet_To_v1beta1_DaemonSet converts a DaemonSet into v1beta1, the
// carried fields and reserved annotation included. It never fails.
func Convert_v1alpha1_DaemonSet_To_v1beta1_DaemonSet(in *DaemonSet, out *v1beta1.DaemonSet, s conversion.Scope) error {
	reportDrops(s, "DaemonSet", daemonSetConversion.ConvertUp(in, out))
	return nil
}

// Convert_v1beta1_DaemonSet_To_v1alpha1_DaemonSet converts a DaemonSet into v1alpha1, the
// carried fields and reserved annotation included. It never fails.
func Convert_v1beta1_DaemonSet_To_v1alpha1_DaemonSet(in *v1beta1.DaemonSet, out *DaemonSet, s conversion.Scope) error {
	reportDrops(s, "DaemonSet", daemonSetConversion.ConvertDown(in, out))
	return nil
}

// Convert_v1beta1_DaemonSetSpec_To_v1alpha1_DaemonSetSpec converts the shared spec fields;
// scaleStrategy lives in metadata in v1alpha1 and is converted with the whole object.
func Convert_v1beta1_DaemonSetSpec_To_v1alpha1_DaemonSetSpec(in *v1beta1.DaemonSetSpec, out *DaemonSetSpec, s conversion.Scope) error {
	return autoConvert_v1beta1_DaemonSetSpec_To_v1alpha1_DaemonSetSpec(in, out, s)
}

// Convert_v1alpha1_DaemonSetStatus_To_v1beta1_DaemonSetStatus converts the status, whose
// revision hash v1beta1 calls updateRevision.
func Convert_v1alpha1_DaemonSetStatus_To_v1beta1_DaemonSetStatus(in *DaemonSetStatus, out *v1beta1.DaemonSetStatus, s conversion.Scope) error {
	if err := autoConvert_v1alpha1_DaemonSetStatus_To_v1beta1_DaemonSetStatus(in, out, s); err != nil {
		return err
	}
	out.UpdateRevision = in.DaemonSetHash
	return nil
}

// Convert_v1beta1_DaemonSetStatus_To_v1alpha1_DaemonSetStatus converts the status, whose
// revision hash v1alpha1 calls daemonSetHash.
func Convert_v1beta1_DaemonSetStatus_To_v1alpha1_DaemonSetStatus(in *v1beta1.DaemonSetStatus, out *DaemonSetStatus, s conversion.Scope) error {
	if err := autoConvert_v1beta1_DaemonSetStatus_To_v1alpha1_DaemonSetStatus(in, out, s); err != nil {
		return err
	}
	out.DaemonSetHash = in.UpdateRevision
	return nil
}
