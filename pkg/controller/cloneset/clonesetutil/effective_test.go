package clonesetutil

import (
	"testing"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestExcludePreparingDelete(t *testing.T) {
	for _, tc := range []struct {
		name  string
		field bool
		label *string
		flag  bool
		want  bool
	}{
		{name: "nothing", want: false},
		{name: "field", field: true, want: true},
		{name: "label only (written in v1alpha1)", label: ptr.To("true"), want: true},
		{name: "label says true, field false: the label still counts", label: ptr.To("true"), want: true},
		{name: "field true, label false", field: true, label: ptr.To("false"), want: true},
		{name: "label of another value", label: ptr.To("True"), want: false},
		{name: "empty label", label: ptr.To(""), want: false},
		{name: "flag", flag: true, want: true},
		{name: "flag over a false field and label", label: ptr.To("false"), flag: true, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := &appsv1beta1.CloneSet{}
			cs.Spec.ScaleStrategy.ExcludePreparingDelete = tc.field
			if tc.label != nil {
				cs.Labels = map[string]string{appsv1beta1.CloneSetScalingExcludePreparingDeleteKey: *tc.label}
			}
			if got := ExcludePreparingDelete(cs, tc.flag); got != tc.want {
				t.Errorf("ExcludePreparingDelete = %t, want %t", got, tc.want)
			}
		})
	}
}

// cloneSetWith is a CloneSet with the given in-place update strategy (none when nil) and
// annotations.
func cloneSetWith(strategy *appsv1beta1.InPlaceUpdateStrategy, annotations map[string]string) *appsv1beta1.CloneSet {
	cs := &appsv1beta1.CloneSet{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}}
	cs.Spec.UpdateStrategy.Type = appsv1beta1.RollingUpdateCloneSetUpdateStrategyType
	cs.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateCloneSetStrategy{InPlaceUpdateStrategy: strategy}
	return cs
}

func TestPreDownload(t *testing.T) {
	const (
		parallelism = appsv1beta1.ImagePreDownloadParallelismKey
		timeout     = appsv1beta1.ImagePreDownloadTimeoutSecondsKey
		minReady    = appsv1beta1.ImagePreDownloadMinUpdatedReadyPods
	)
	defaults := PreDownloadSettings{Parallelism: 1, TimeoutSeconds: 300, MinUpdatedReadyPods: 0}
	intOrStr := func(v intstr.IntOrString) *intstr.IntOrString { return &v }
	for _, tc := range []struct {
		name        string
		strategy    *appsv1beta1.InPlaceUpdateStrategy
		annotations map[string]string
		want        PreDownloadSettings
	}{
		{name: "nothing set", want: defaults},
		{name: "no rolling update at all", want: defaults},
		{name: "fields set", strategy: &appsv1beta1.InPlaceUpdateStrategy{
			ImagePreDownloadParallelism:         intOrStr(intstr.FromInt32(5)),
			ImagePreDownloadTimeoutSeconds:      ptr.To[int32](60),
			ImagePreDownloadMinUpdatedReadyPods: ptr.To[int32](2),
		}, want: PreDownloadSettings{Parallelism: 5, TimeoutSeconds: 60, MinUpdatedReadyPods: 2}},
		{name: "parallelism as a numeric string", strategy: &appsv1beta1.InPlaceUpdateStrategy{
			ImagePreDownloadParallelism: intOrStr(intstr.FromString("7")),
		}, want: PreDownloadSettings{Parallelism: 7, TimeoutSeconds: 300}},
		{name: "carriers only (written in v1alpha1)", annotations: map[string]string{parallelism: "4", timeout: "120", minReady: "3"},
			want: PreDownloadSettings{Parallelism: 4, TimeoutSeconds: 120, MinUpdatedReadyPods: 3}},
		{name: "field and carrier disagreeing: the field wins", strategy: &appsv1beta1.InPlaceUpdateStrategy{
			ImagePreDownloadParallelism:         intOrStr(intstr.FromInt32(5)),
			ImagePreDownloadTimeoutSeconds:      ptr.To[int32](60),
			ImagePreDownloadMinUpdatedReadyPods: ptr.To[int32](0),
		}, annotations: map[string]string{parallelism: "4", timeout: "120", minReady: "3"},
			want: PreDownloadSettings{Parallelism: 5, TimeoutSeconds: 60, MinUpdatedReadyPods: 0}},
		{name: "one field set, the others carried", strategy: &appsv1beta1.InPlaceUpdateStrategy{
			ImagePreDownloadTimeoutSeconds: ptr.To[int32](60),
		}, annotations: map[string]string{parallelism: "4", timeout: "120", minReady: "3"},
			want: PreDownloadSettings{Parallelism: 4, TimeoutSeconds: 60, MinUpdatedReadyPods: 3}},
		{name: "invalid carriers give the defaults", annotations: map[string]string{parallelism: "50%", timeout: "soon", minReady: " 3"},
			want: defaults},
		{name: "negative carriers give the defaults", annotations: map[string]string{parallelism: "-1", timeout: "-5", minReady: "-3"},
			want: defaults},
		{name: "invalid fields give the defaults, not a stale carrier", strategy: &appsv1beta1.InPlaceUpdateStrategy{
			ImagePreDownloadParallelism:         intOrStr(intstr.FromString("50%")),
			ImagePreDownloadTimeoutSeconds:      ptr.To[int32](-1),
			ImagePreDownloadMinUpdatedReadyPods: ptr.To[int32](-2),
		}, annotations: map[string]string{parallelism: "4", timeout: "120", minReady: "3"},
			want: defaults},
		{name: "zero parallelism pauses", strategy: &appsv1beta1.InPlaceUpdateStrategy{
			ImagePreDownloadParallelism: intOrStr(intstr.FromInt32(0)),
		}, want: PreDownloadSettings{Parallelism: 0, TimeoutSeconds: 300}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := cloneSetWith(tc.strategy, tc.annotations)
			if tc.name == "no rolling update at all" {
				cs.Spec.UpdateStrategy.RollingUpdate = nil
			}
			if got := PreDownload(cs); got != tc.want {
				t.Errorf("PreDownload = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestScaledValue(t *testing.T) {
	for _, tc := range []struct {
		value     intstr.IntOrString
		total     int
		up, down  int
		wantError bool
	}{
		{value: intstr.FromInt32(3), total: 10, up: 3, down: 3},
		{value: intstr.FromInt32(-1), total: 10, up: -1, down: -1},
		{value: intstr.FromString("20%"), total: 4, up: 1, down: 0},
		{value: intstr.FromString("99%"), total: 4, up: 4, down: 3},
		{value: intstr.FromString("150%"), total: 4, up: 6, down: 6},
		{value: intstr.FromString("12.5%"), total: 8, up: 1, down: 1},
		{value: intstr.FromString("-10%"), total: 5, up: 0, down: -1},
		{value: intstr.FromString("20%"), total: 0, up: 0, down: 0},
		{value: intstr.FromString("20"), wantError: true},
		{value: intstr.FromString("%"), wantError: true},
		{value: intstr.FromString("1e2%"), wantError: true},
		{value: intstr.FromString("NaN%"), wantError: true},
		{value: intstr.FromString(" 5%"), wantError: true},
		{value: intstr.FromString("99999999999999999999%"), total: 10, wantError: true},
	} {
		up, errUp := ScaledValue(&tc.value, tc.total, true)
		down, errDown := ScaledValue(&tc.value, tc.total, false)
		if tc.wantError {
			if errUp == nil || errDown == nil {
				t.Errorf("ScaledValue(%s of %d) = %d, %d; want an error", tc.value.String(), tc.total, up, down)
			}
			continue
		}
		if errUp != nil || errDown != nil || up != tc.up || down != tc.down {
			t.Errorf("ScaledValue(%s of %d) = %d (%v) up, %d (%v) down; want %d, %d", tc.value.String(), tc.total, up, errUp, down, errDown, tc.up, tc.down)
		}
	}
	if _, err := ScaledValue(nil, 3, true); err == nil {
		t.Error("ScaledValue(nil) gave no error")
	}
}
