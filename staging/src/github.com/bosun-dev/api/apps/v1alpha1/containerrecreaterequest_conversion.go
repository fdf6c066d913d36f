package v1alpha1

import (
	"bytes"
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"

	"github.com/bosun-dev/api/apps/v1beta1"
	"github.com/bosun-dev/api/internal/lossless"
)

// What differs between the ContainerRecreateRequest versions: two v1alpha1 annotations are
// v1beta1 status fields.
//   - crr.apps.kruise.io/sync-container-statuses, a JSON list, is status.containerStatusSnapshot;
//   - crr.apps.kruise.io/unready-acquired, an RFC 3339 time, is the lastTransitionTime of a
//     PreRecreateGrace condition, status True, in status.conditions.
//
// The annotations are kept on the way up, as OpenKruise does, so a v1alpha1 update of
// the main resource can still change them, and with them the v1beta1 status.

const (
	containerRecreateRequestSnapshotPath   = "status.containerStatusSnapshot"
	containerRecreateRequestConditionsPath = "status.conditions"
)

var containerRecreateRequestConversion = lossless.Kind[ContainerRecreateRequest, v1beta1.ContainerRecreateRequest]{
	A: lossless.Version[ContainerRecreateRequest]{
		Name: SchemeGroupVersion.Version,
		Meta: func(o *ContainerRecreateRequest) *metav1.ObjectMeta { return &o.ObjectMeta },
		Items: []lossless.Item[ContainerRecreateRequest]{
			lossless.Annotation(ContainerRecreateRequestSyncContainerStatusesKey,
				func(o *ContainerRecreateRequest) *metav1.ObjectMeta { return &o.ObjectMeta },
				lossless.AnnotationPath(ContainerRecreateRequestSyncContainerStatusesKey),
				containerRecreateRequestSnapshotPath),
			lossless.Annotation(ContainerRecreateRequestUnreadyAcquiredKey,
				func(o *ContainerRecreateRequest) *metav1.ObjectMeta { return &o.ObjectMeta },
				lossless.AnnotationPath(ContainerRecreateRequestUnreadyAcquiredKey),
				containerRecreateRequestConditionsPath),
		},
	},
	B: lossless.Version[v1beta1.ContainerRecreateRequest]{
		Name: v1beta1.SchemeGroupVersion.Version,
		Meta: func(o *v1beta1.ContainerRecreateRequest) *metav1.ObjectMeta { return &o.ObjectMeta },
		Items: []lossless.Item[v1beta1.ContainerRecreateRequest]{
			lossless.Annotation(ContainerRecreateRequestSyncContainerStatusesKey,
				func(o *v1beta1.ContainerRecreateRequest) *metav1.ObjectMeta { return &o.ObjectMeta },
				lossless.AnnotationPath(ContainerRecreateRequestSyncContainerStatusesKey)),
			lossless.Annotation(ContainerRecreateRequestUnreadyAcquiredKey,
				func(o *v1beta1.ContainerRecreateRequest) *metav1.ObjectMeta { return &o.ObjectMeta },
				lossless.AnnotationPath(ContainerRecreateRequestUnreadyAcquiredKey)),
			lossless.Field(containerRecreateRequestSnapshotPath,
				func(o *v1beta1.ContainerRecreateRequest) *[]v1beta1.ContainerRecreateRequestSyncContainerStatus {
					return &o.Status.ContainerStatusSnapshot
				},
				lossless.AnnotationPath(ContainerRecreateRequestSyncContainerStatusesKey)),
			lossless.Field(containerRecreateRequestConditionsPath,
				func(o *v1beta1.ContainerRecreateRequest) *[]metav1.Condition { return &o.Status.Conditions },
				lossless.AnnotationPath(ContainerRecreateRequestUnreadyAcquiredKey)),
		},
	},
	Up: lossless.Mapping[ContainerRecreateRequest, v1beta1.ContainerRecreateRequest]{
		Copy: func(in *ContainerRecreateRequest, out *v1beta1.ContainerRecreateRequest) {
			_ = autoConvert_v1alpha1_ContainerRecreateRequest_To_v1beta1_ContainerRecreateRequest(in, out, nil)
		},
		Carry: carryContainerRecreateRequestUp,
	},
	Down: lossless.Mapping[v1beta1.ContainerRecreateRequest, ContainerRecreateRequest]{
		Copy: func(in *v1beta1.ContainerRecreateRequest, out *ContainerRecreateRequest) {
			_ = autoConvert_v1beta1_ContainerRecreateRequest_To_v1alpha1_ContainerRecreateRequest(in, out, nil)
		},
		Carry: carryContainerRecreateRequestDown,
	},
}

func carryContainerRecreateRequestUp(in *ContainerRecreateRequest, out *v1beta1.ContainerRecreateRequest) {
	out.Status.ContainerStatusSnapshot = nil
	if v, ok := in.Annotations[ContainerRecreateRequestSyncContainerStatusesKey]; ok {
		if snapshot, ok := parseContainerStatusSnapshot(v); ok && len(snapshot) > 0 {
			out.Status.ContainerStatusSnapshot = snapshot
		}
	}

	out.Status.Conditions = nil
	if v, ok := in.Annotations[ContainerRecreateRequestUnreadyAcquiredKey]; ok {
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			out.Status.Conditions = []metav1.Condition{{
				Type:   v1beta1.ContainerRecreateRequestPreRecreateGraceType,
				Status: metav1.ConditionTrue,
				// In seconds, as the condition is encoded, so that an object converted in
				// memory equals one that went through JSON.
				LastTransitionTime: metav1.NewTime(t.Truncate(time.Second)),
				Reason:             v1beta1.ContainerRecreateRequestPreRecreateGraceType,
			}}
		}
	}
}

func carryContainerRecreateRequestDown(in *v1beta1.ContainerRecreateRequest, out *ContainerRecreateRequest) {
	if snapshot := in.Status.ContainerStatusSnapshot; len(snapshot) > 0 {
		// The list's encoding cannot fail: its items hold only strings, numbers and booleans.
		want, _ := json.Marshal(snapshot)
		current, ok := in.Annotations[ContainerRecreateRequestSyncContainerStatusesKey]
		if ok {
			parsed, parses := parseContainerStatusSnapshot(current)
			got, _ := json.Marshal(parsed)
			ok = parses && bytes.Equal(got, want)
		}
		if !ok {
			out.Annotations = withAnnotation(out.Annotations, ContainerRecreateRequestSyncContainerStatusesKey, string(want))
		}
	}

	for _, c := range in.Status.Conditions {
		if c.Type != v1beta1.ContainerRecreateRequestPreRecreateGraceType || c.Status != metav1.ConditionTrue {
			continue
		}
		want := formatUnreadyAcquired(c.LastTransitionTime.Time)
		current, ok := in.Annotations[ContainerRecreateRequestUnreadyAcquiredKey]
		if ok {
			t, err := time.Parse(time.RFC3339, current)
			ok = err == nil && formatUnreadyAcquired(t) == want
		}
		if !ok {
			out.Annotations = withAnnotation(out.Annotations, ContainerRecreateRequestUnreadyAcquiredKey, want)
		}
		break
	}
}

// parseContainerStatusSnapshot reads the annotation crr.apps.kruise.io/sync-container-statuses.
func parseContainerStatusSnapshot(v string) ([]v1beta1.ContainerRecreateRequestSyncContainerStatus, bool) {
	var snapshot []v1beta1.ContainerRecreateRequestSyncContainerStatus
	if err := json.Unmarshal([]byte(v), &snapshot); err != nil {
		return nil, false
	}
	return snapshot, true
}

// formatUnreadyAcquired writes a time as the annotation crr.apps.kruise.io/unready-acquired
// holds it, and as a condition's lastTransitionTime is encoded: RFC 3339, UTC, in seconds.
func formatUnreadyAcquired(t time.Time) string {
	return t.UTC().Format(time.RFC3339)
}

// Convert_v1alpha1_ContainerRecreateRequest_To_v1beta1_ContainerRecreateRequest converts a
// ContainerRecreateRequest into v1beta1, the carried fields and reserved annotation
// included. It never fails.
func Convert_v1alpha1_ContainerRecreateRequest_To_v1beta1_ContainerRecreateRequest(in *ContainerRecreateRequest, out *v1beta1.ContainerRecreateRequest, s conversion.Scope) error {
	reportDrops(s, "ContainerRecreateRequest", containerRecreateRequestConversion.ConvertUp(in, out))
	return nil
}

// Convert_v1beta1_ContainerRecreateRequest_To_v1alpha1_ContainerRecreateRequest converts a
// ContainerRecreateRequest into v1alpha1, the carried fields and reserved annotation
// included. It never fails.
func Convert_v1beta1_ContainerRecreateRequest_To_v1alpha1_ContainerRecreateRequest(in *v1beta1.ContainerRecreateRequest, out *ContainerRecreateRequest, s conversion.Scope) error {
	reportDrops(s, "ContainerRecreateRequest", containerRecreateRequestConversion.ConvertDown(in, out))
	return nil
}

// Convert_v1beta1_ContainerRecreateRequestStatus_To_v1alpha1_ContainerRecreateRequestStatus
// converts the shared status fields; the snapshot and the conditions live in metadata in
// v1alpha1 and are converted with the whole object.
func Convert_v1beta1_ContainerRecreateRequestStatus_To_v1alpha1_ContainerRecreateRequestStatus(in *v1beta1.ContainerRecreateRequestStatus, out *ContainerRecreateRequestStatus, s conversion.Scope) error {
	return autoConvert_v1beta1_ContainerRecreateRequestStatus_To_v1alpha1_ContainerRecreateRequestStatus(in, out, s)
}
