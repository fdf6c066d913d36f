package v1alpha1

import (
	"k8s.io/apimachinery/pkg/conversion"

	"github.com/bosun-dev/api/apps/v1beta1"
	"github.com/bosun-dev/api/internal/lossless"
)

// Conversion between this version and apps/v1beta1, the hub version. The generated
// zz_generated.conversion.go converts the fields both versions share; the functions in this
// package's *_conversion.go files add what differs. Every conversion succeeds for any object
// that decodes, reads nothing but its input, and changes no metadata but annotations (and,
// for the CloneSet, whose carrier is a label, labels); a round trip through the other
// version gives back the object it started from.

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

// ConvertDaemonSetToV1beta1 converts a v1alpha1 DaemonSet into v1beta1. out may share
// memory with in.
func ConvertDaemonSetToV1beta1(in *DaemonSet, out *v1beta1.DaemonSet) {
	daemonSetConversion.ConvertUp(in, out)
}

// ConvertDaemonSetFromV1beta1 converts a v1beta1 DaemonSet into v1alpha1. out may share
// memory with in.
func ConvertDaemonSetFromV1beta1(in *v1beta1.DaemonSet, out *DaemonSet) {
	daemonSetConversion.ConvertDown(in, out)
}

// ConvertCloneSetToV1beta1 converts a v1alpha1 CloneSet into v1beta1. out may share memory
// with in.
func ConvertCloneSetToV1beta1(in *CloneSet, out *v1beta1.CloneSet) {
	cloneSetConversion.ConvertUp(in, out)
}

// ConvertCloneSetFromV1beta1 converts a v1beta1 CloneSet into v1alpha1. out may share
// memory with in.
func ConvertCloneSetFromV1beta1(in *v1beta1.CloneSet, out *CloneSet) {
	cloneSetConversion.ConvertDown(in, out)
}

// ConvertContainerRecreateRequestToV1beta1 converts a v1alpha1 ContainerRecreateRequest into
// v1beta1. out may share memory with in.
func ConvertContainerRecreateRequestToV1beta1(in *ContainerRecreateRequest, out *v1beta1.ContainerRecreateRequest) {
	containerRecreateRequestConversion.ConvertUp(in, out)
}

// ConvertContainerRecreateRequestFromV1beta1 converts a v1beta1 ContainerRecreateRequest
// into v1alpha1. out may share memory with in.
func ConvertContainerRecreateRequestFromV1beta1(in *v1beta1.ContainerRecreateRequest, out *ContainerRecreateRequest) {
	containerRecreateRequestConversion.ConvertDown(in, out)
}

// The kinds below have the same schema in both versions: their conversion copies every
// field. The generated functions never fail when every function they call cannot fail,
// which holds for this package, so their error is always nil.

// ConvertNodeImageToV1beta1 converts a v1alpha1 NodeImage into v1beta1. out may share
// memory with in.
func ConvertNodeImageToV1beta1(in *NodeImage, out *v1beta1.NodeImage) {
	_ = Convert_v1alpha1_NodeImage_To_v1beta1_NodeImage(in, out, nil)
}

// ConvertNodeImageFromV1beta1 converts a v1beta1 NodeImage into v1alpha1. out may share
// memory with in.
func ConvertNodeImageFromV1beta1(in *v1beta1.NodeImage, out *NodeImage) {
	_ = Convert_v1beta1_NodeImage_To_v1alpha1_NodeImage(in, out, nil)
}

// ConvertImagePullJobToV1beta1 converts a v1alpha1 ImagePullJob into v1beta1. out may share
// memory with in.
func ConvertImagePullJobToV1beta1(in *ImagePullJob, out *v1beta1.ImagePullJob) {
	_ = Convert_v1alpha1_ImagePullJob_To_v1beta1_ImagePullJob(in, out, nil)
}

// ConvertImagePullJobFromV1beta1 converts a v1beta1 ImagePullJob into v1alpha1. out may
// share memory with in.
func ConvertImagePullJobFromV1beta1(in *v1beta1.ImagePullJob, out *ImagePullJob) {
	_ = Convert_v1beta1_ImagePullJob_To_v1alpha1_ImagePullJob(in, out, nil)
}

// ConvertImageListPullJobToV1beta1 converts a v1alpha1 ImageListPullJob into v1beta1. out
// may share memory with in.
func ConvertImageListPullJobToV1beta1(in *ImageListPullJob, out *v1beta1.ImageListPullJob) {
	_ = Convert_v1alpha1_ImageListPullJob_To_v1beta1_ImageListPullJob(in, out, nil)
}

// ConvertImageListPullJobFromV1beta1 converts a v1beta1 ImageListPullJob into v1alpha1. out
// may share memory with in.
func ConvertImageListPullJobFromV1beta1(in *v1beta1.ImageListPullJob, out *ImageListPullJob) {
	_ = Convert_v1beta1_ImageListPullJob_To_v1alpha1_ImageListPullJob(in, out, nil)
}

// reportDrops passes a conversion's drop count to the recorder a scheme conversion was
// given as its context, if any.
func reportDrops(s conversion.Scope, kind string, dropped int) {
	if s == nil || s.Meta() == nil {
		return
	}
	lossless.ReportDrops(s.Meta().Context, kind, dropped)
}
