package v1alpha1

import (
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"

	"github.com/bosun-dev/api/internal/lossless"
	"github.com/bosun-dev/api/policy/v1beta1"
)

// Conversion between this version and policy/v1beta1, the hub version. The generated
// zz_generated.conversion.go converts the fields both versions share; this file adds what
// differs. Every conversion succeeds for any object that decodes, reads nothing but its
// input, and changes no metadata but annotations; a round trip through the other version
// gives back the object it started from.
//
// What differs between the PodUnavailableBudget versions:
//   - kruise.io/pub-protect-operations, comma-separated, is v1beta1's spec.protectOperations;
//     it is split on every comma, nothing trimmed or dropped, so that joining gives it back;
//   - pub.kruise.io/protect-total-replicas, a decimal int32, is spec.protectTotalReplicas;
//     a value that does not parse stays in the annotation only;
//   - spec.ignoredPodSelector exists in v1beta1 only: it travels in the reserved annotation
//     and v1alpha1 writers keep it.
// The annotations are kept on the way up, as OpenKruise does.

// Reserved annotations. A conversion records in them what the other version cannot hold,
// so that the conversion back restores it; clients must not write them.
const (
	// V1beta1ConversionAnnotation, on a v1alpha1 object converted from v1beta1, holds the
	// v1beta1-only content that converting it back restores.
	V1beta1ConversionAnnotation = lossless.AnnotationPrefix + "v1beta1"
	// V1alpha1ConversionAnnotation, on a v1beta1 object converted from v1alpha1, holds the
	// v1alpha1-only content that converting it back restores.
	V1alpha1ConversionAnnotation = lossless.AnnotationPrefix + "v1alpha1"
)

// ConversionDropRecorder, passed as the context of runtime.Scheme.Convert, is told how many
// records of the reserved annotations a conversion could not honour (an unparseable
// annotation or record) or could not write (over the API server's 256 KiB annotation
// limit). Those are the only losses a conversion allows.
type ConversionDropRecorder = lossless.DropRecorder

const (
	pubProtectOperationsPath    = "spec.protectOperations"
	pubProtectTotalReplicasPath = "spec.protectTotalReplicas"
	pubIgnoredPodSelectorPath   = "spec.ignoredPodSelector"
)

var podUnavailableBudgetConversion = lossless.Kind[PodUnavailableBudget, v1beta1.PodUnavailableBudget]{
	A: lossless.Version[PodUnavailableBudget]{
		Name: SchemeGroupVersion.Version,
		Meta: func(o *PodUnavailableBudget) *metav1.ObjectMeta { return &o.ObjectMeta },
		Items: []lossless.Item[PodUnavailableBudget]{
			lossless.Annotation(PubProtectOperationAnnotation,
				func(o *PodUnavailableBudget) *metav1.ObjectMeta { return &o.ObjectMeta },
				lossless.AnnotationPath(PubProtectOperationAnnotation), pubProtectOperationsPath),
			lossless.Annotation(PubProtectTotalReplicasAnnotation,
				func(o *PodUnavailableBudget) *metav1.ObjectMeta { return &o.ObjectMeta },
				lossless.AnnotationPath(PubProtectTotalReplicasAnnotation), pubProtectTotalReplicasPath),
		},
	},
	B: lossless.Version[v1beta1.PodUnavailableBudget]{
		Name: v1beta1.SchemeGroupVersion.Version,
		Meta: func(o *v1beta1.PodUnavailableBudget) *metav1.ObjectMeta { return &o.ObjectMeta },
		Items: []lossless.Item[v1beta1.PodUnavailableBudget]{
			lossless.Annotation(PubProtectOperationAnnotation,
				func(o *v1beta1.PodUnavailableBudget) *metav1.ObjectMeta { return &o.ObjectMeta },
				lossless.AnnotationPath(PubProtectOperationAnnotation)),
			lossless.Annotation(PubProtectTotalReplicasAnnotation,
				func(o *v1beta1.PodUnavailableBudget) *metav1.ObjectMeta { return &o.ObjectMeta },
				lossless.AnnotationPath(PubProtectTotalReplicasAnnotation)),
			lossless.Field(pubProtectOperationsPath,
				func(o *v1beta1.PodUnavailableBudget) *[]v1beta1.PubOperation { return &o.Spec.ProtectOperations },
				lossless.AnnotationPath(PubProtectOperationAnnotation)),
			lossless.Field(pubProtectTotalReplicasPath,
				func(o *v1beta1.PodUnavailableBudget) **int32 { return &o.Spec.ProtectTotalReplicas },
				lossless.AnnotationPath(PubProtectTotalReplicasAnnotation)),
			// Nothing in v1alpha1 stands for the selector, so no v1alpha1 write can make
			// restoring it wrong: its record has an empty guard.
			lossless.Field(pubIgnoredPodSelectorPath,
				func(o *v1beta1.PodUnavailableBudget) **metav1.LabelSelector { return &o.Spec.IgnoredPodSelector }),
		},
	},
	Up: lossless.Mapping[PodUnavailableBudget, v1beta1.PodUnavailableBudget]{
		Copy: func(in *PodUnavailableBudget, out *v1beta1.PodUnavailableBudget) {
			_ = autoConvert_v1alpha1_PodUnavailableBudget_To_v1beta1_PodUnavailableBudget(in, out, nil)
		},
		Carry: carryPodUnavailableBudgetUp,
	},
	Down: lossless.Mapping[v1beta1.PodUnavailableBudget, PodUnavailableBudget]{
		Copy: func(in *v1beta1.PodUnavailableBudget, out *PodUnavailableBudget) {
			_ = autoConvert_v1beta1_PodUnavailableBudget_To_v1alpha1_PodUnavailableBudget(in, out, nil)
		},
		Carry: carryPodUnavailableBudgetDown,
	},
}

// carryPodUnavailableBudgetUp fills the v1beta1 fields from the annotations only with
// values the v1beta1 schema accepts: a value outside it would make the converted object
// one that a v1beta1 client could read but not write back, and would answer a v1beta1
// request differently from the v1alpha1 one (the schema refuses what admission of the
// annotation accepts or refuses with another code). The annotation itself is kept
// verbatim, so nothing is lost, and controllers read it where the field is unset.
func carryPodUnavailableBudgetUp(in *PodUnavailableBudget, out *v1beta1.PodUnavailableBudget) {
	out.Spec.ProtectOperations = nil
	if v := in.Annotations[PubProtectOperationAnnotation]; v != "" {
		out.Spec.ProtectOperations = parseProtectOperations(v)
	}

	out.Spec.ProtectTotalReplicas = nil
	if v, ok := in.Annotations[PubProtectTotalReplicasAnnotation]; ok {
		if n, ok := parseProtectTotalReplicas(v); ok && n >= 1 {
			out.Spec.ProtectTotalReplicas = &n
		}
	}
}

// parseProtectOperations splits the annotation kruise.io/pub-protect-operations exactly
// on commas, without trimming, so that joining the result gives the annotation back; nil
// unless every part is an operation the v1beta1 field accepts.
func parseProtectOperations(v string) []v1beta1.PubOperation {
	parts := strings.Split(v, ",")
	ops := make([]v1beta1.PubOperation, len(parts))
	for i, p := range parts {
		switch op := v1beta1.PubOperation(p); op {
		case v1beta1.PubDeleteOperation, v1beta1.PubUpdateOperation, v1beta1.PubEvictOperation, v1beta1.PubResizeOperation:
			ops[i] = op
		default:
			return nil
		}
	}
	return ops
}

func carryPodUnavailableBudgetDown(in *v1beta1.PodUnavailableBudget, out *PodUnavailableBudget) {
	if ops := in.Spec.ProtectOperations; len(ops) > 0 {
		parts := make([]string, len(ops))
		for i, op := range ops {
			parts[i] = string(op)
		}
		out.Annotations = withAnnotation(out.Annotations, PubProtectOperationAnnotation, strings.Join(parts, ","))
	}

	if total := in.Spec.ProtectTotalReplicas; total != nil {
		current, ok := parseProtectTotalReplicas(in.Annotations[PubProtectTotalReplicasAnnotation])
		if !ok || current != *total {
			out.Annotations = withAnnotation(out.Annotations, PubProtectTotalReplicasAnnotation,
				strconv.FormatInt(int64(*total), 10))
		}
	}
}

// parseProtectTotalReplicas reads the annotation pub.kruise.io/protect-total-replicas.
func parseProtectTotalReplicas(v string) (int32, bool) {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
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

// ConvertPodUnavailableBudgetToV1beta1 converts a v1alpha1 PodUnavailableBudget into
// v1beta1. out may share memory with in.
func ConvertPodUnavailableBudgetToV1beta1(in *PodUnavailableBudget, out *v1beta1.PodUnavailableBudget) {
	podUnavailableBudgetConversion.ConvertUp(in, out)
}

// ConvertPodUnavailableBudgetFromV1beta1 converts a v1beta1 PodUnavailableBudget into
// v1alpha1. out may share memory with in.
func ConvertPodUnavailableBudgetFromV1beta1(in *v1beta1.PodUnavailableBudget, out *PodUnavailableBudget) {
	podUnavailableBudgetConversion.ConvertDown(in, out)
}

// Convert_v1alpha1_PodUnavailableBudget_To_v1beta1_PodUnavailableBudget converts a
// PodUnavailableBudget into v1beta1, the carried fields and reserved annotation included.
// It never fails.
func Convert_v1alpha1_PodUnavailableBudget_To_v1beta1_PodUnavailableBudget(in *PodUnavailableBudget, out *v1beta1.PodUnavailableBudget, s conversion.Scope) error {
	reportDrops(s, podUnavailableBudgetConversion.ConvertUp(in, out))
	return nil
}

// Convert_v1beta1_PodUnavailableBudget_To_v1alpha1_PodUnavailableBudget converts a
// PodUnavailableBudget into v1alpha1, the carried fields and reserved annotation included.
// It never fails.
func Convert_v1beta1_PodUnavailableBudget_To_v1alpha1_PodUnavailableBudget(in *v1beta1.PodUnavailableBudget, out *PodUnavailableBudget, s conversion.Scope) error {
	reportDrops(s, podUnavailableBudgetConversion.ConvertDown(in, out))
	return nil
}

// Convert_v1beta1_PodUnavailableBudgetSpec_To_v1alpha1_PodUnavailableBudgetSpec converts the
// shared spec fields; the v1beta1-only ones are converted with the whole object.
func Convert_v1beta1_PodUnavailableBudgetSpec_To_v1alpha1_PodUnavailableBudgetSpec(in *v1beta1.PodUnavailableBudgetSpec, out *PodUnavailableBudgetSpec, s conversion.Scope) error {
	return autoConvert_v1beta1_PodUnavailableBudgetSpec_To_v1alpha1_PodUnavailableBudgetSpec(in, out, s)
}

// reportDrops passes a conversion's drop count to the recorder a scheme conversion was
// given as its context, if any.
func reportDrops(s conversion.Scope, dropped int) {
	if s == nil || s.Meta() == nil {
		return
	}
	lossless.ReportDrops(s.Meta().Context, "PodUnavailableBudget", dropped)
}
