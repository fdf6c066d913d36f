package v1alpha1

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/bosun-dev/api/apps/v1beta1"
)

// These tests walk the CloneSet's mapping rule by rule, in both directions: what the
// converted object holds, which records the reserved annotation gets (only where the plain
// mapping back would not reproduce the source), that the conversion back restores the
// source, and that a client of the other version changing a carrier wins over a record.

const excludeLabel = CloneSetScalingExcludePreparingDeleteKey

func newAlphaCloneSet(labels, annotations map[string]string, us CloneSetUpdateStrategy) *CloneSet {
	return &CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "cs-uid", Generation: 3,
			Labels: labels, Annotations: annotations},
		Spec: CloneSetSpec{
			Replicas: i32(4),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "web:1"}}}},
			UpdateStrategy: us,
		},
		Status: CloneSetStatus{Replicas: 4, UpdatedReplicas: 2, UpdateRevision: "web-7c9d5f", CurrentRevision: "web-5b8c4d"},
	}
}

func newBetaCloneSet(labels, annotations map[string]string, us v1beta1.CloneSetUpdateStrategy) *v1beta1.CloneSet {
	return &v1beta1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "cs-uid", Generation: 3,
			Labels: labels, Annotations: annotations},
		Spec: v1beta1.CloneSetSpec{
			Replicas: i32(4),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "web:1"}}}},
			ScaleStrategy:  v1beta1.CloneSetScaleStrategy{EnablePVCReuse: true},
			UpdateStrategy: us,
		},
		Status: v1beta1.CloneSetStatus{Replicas: 4, UpdatedReplicas: 2, UpdateRevision: "web-7c9d5f", CurrentRevision: "web-5b8c4d"},
	}
}

func upCloneSet(t *testing.T, in *CloneSet) *v1beta1.CloneSet {
	t.Helper()
	before := in.DeepCopy()
	out := &v1beta1.CloneSet{}
	ConvertCloneSetToV1beta1(in, out)
	if !reflect.DeepEqual(in, before) {
		t.Fatalf("converting modified its input")
	}
	return out
}

func downCloneSet(t *testing.T, in *v1beta1.CloneSet) *CloneSet {
	t.Helper()
	before := in.DeepCopy()
	out := &CloneSet{}
	ConvertCloneSetFromV1beta1(in, out)
	if !reflect.DeepEqual(in, before) {
		t.Fatalf("converting modified its input")
	}
	return out
}

func wantBetaStrategy(t *testing.T, got, want v1beta1.CloneSetUpdateStrategy) {
	t.Helper()
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("updateStrategy = %s, want %s", toJSON(t, got), toJSON(t, want))
	}
}

func wantAlphaStrategy(t *testing.T, got, want CloneSetUpdateStrategy) {
	t.Helper()
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("updateStrategy = %s, want %s", toJSON(t, got), toJSON(t, want))
	}
}

func wantLabels(t *testing.T, got, want map[string]string) {
	t.Helper()
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("labels = %v, want %v", got, want)
	}
}

// The guard that records on a v1beta1 object restoring spec.updateStrategy carry when no
// pre-download annotation is set: v1alpha1's update strategy as written, no annotations.
func strategyGuard(alphaStrategy string) string {
	return `{"spec.updateStrategy": ` + alphaStrategy + `,
		"metadata.annotations[apps.kruise.io/image-predownload-parallelism]": null,
		"metadata.annotations[apps.kruise.io/image-predownload-timeout-seconds]": null,
		"metadata.annotations[apps.kruise.io/image-predownload-min-updated-ready-pods]": null}`
}

func TestCloneSetUpdateTypeUp(t *testing.T) {
	grace := &InPlaceUpdateStrategy{GracePeriodSeconds: 5}
	tests := []struct {
		name string
		in   CloneSetUpdateStrategy
		want v1beta1.CloneSetUpdateStrategy
	}{{
		name: "an empty type stays empty, without a rolling update",
		in:   CloneSetUpdateStrategy{},
		want: v1beta1.CloneSetUpdateStrategy{},
	}, {
		name: "ReCreate is a rolling update that recreates pods",
		in:   CloneSetUpdateStrategy{Type: RecreateCloneSetUpdateStrategyType},
		want: v1beta1.CloneSetUpdateStrategy{Type: v1beta1.RollingUpdateCloneSetUpdateStrategyType,
			RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{PodUpdatePolicy: v1beta1.RecreateCloneSetPodUpdateStrategyType}},
	}, {
		name: "InPlaceIfPossible is a rolling update with that policy",
		in:   CloneSetUpdateStrategy{Type: InPlaceIfPossibleCloneSetUpdateStrategyType},
		want: v1beta1.CloneSetUpdateStrategy{Type: v1beta1.RollingUpdateCloneSetUpdateStrategyType,
			RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{PodUpdatePolicy: v1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType}},
	}, {
		name: "InPlaceOnly is a rolling update with that policy",
		in:   CloneSetUpdateStrategy{Type: InPlaceOnlyCloneSetUpdateStrategyType},
		want: v1beta1.CloneSetUpdateStrategy{Type: v1beta1.RollingUpdateCloneSetUpdateStrategyType,
			RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{PodUpdatePolicy: v1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType}},
	}, {
		name: "OnDelete stays OnDelete, without a policy",
		in:   CloneSetUpdateStrategy{Type: OnDeleteCloneSetUpdateStrategyType},
		want: v1beta1.CloneSetUpdateStrategy{Type: v1beta1.OnDeleteCloneSetUpdateStrategyType},
	}, {
		// OpenKruise drops them.
		name: "OnDelete keeps its rolling update fields",
		in:   CloneSetUpdateStrategy{Type: OnDeleteCloneSetUpdateStrategyType, Partition: intStr(2), Paused: true},
		want: v1beta1.CloneSetUpdateStrategy{Type: v1beta1.OnDeleteCloneSetUpdateStrategyType,
			RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{Partition: intStr(2), Paused: true}},
	}, {
		name: "an empty type keeps its rolling update fields",
		in:   CloneSetUpdateStrategy{MaxSurge: strIntStr("10%")},
		want: v1beta1.CloneSetUpdateStrategy{RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{MaxSurge: strIntStr("10%")}},
	}, {
		name: "a type v1alpha1 does not define becomes the policy of a rolling update",
		in:   CloneSetUpdateStrategy{Type: "Bogus"},
		want: v1beta1.CloneSetUpdateStrategy{Type: v1beta1.RollingUpdateCloneSetUpdateStrategyType,
			RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{PodUpdatePolicy: "Bogus"}},
	}, {
		name: "every field moves into the rolling update",
		in: CloneSetUpdateStrategy{Type: InPlaceIfPossibleCloneSetUpdateStrategyType,
			Partition: strIntStr("50%"), MaxUnavailable: intStr(2), MaxSurge: intStr(1), Paused: true,
			PriorityStrategy:      &UpdatePriorityStrategy{OrderPriority: []UpdatePriorityOrderTerm{{OrderedKey: "rank"}}},
			ScatterStrategy:       UpdateScatterStrategy{{Key: "zone", Value: "a"}},
			InPlaceUpdateStrategy: grace},
		want: v1beta1.CloneSetUpdateStrategy{Type: v1beta1.RollingUpdateCloneSetUpdateStrategyType,
			RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{
				PodUpdatePolicy: v1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType,
				Partition:       strIntStr("50%"), MaxUnavailable: intStr(2), MaxSurge: intStr(1), Paused: true,
				PriorityStrategy: &v1beta1.UpdatePriorityStrategy{
					OrderPriority: []v1beta1.UpdatePriorityOrderTerm{{OrderedKey: "rank"}}},
				ScatterStrategy:       v1beta1.UpdateScatterStrategy{{Key: "zone", Value: "a"}},
				InPlaceUpdateStrategy: &v1beta1.InPlaceUpdateStrategy{GracePeriodSeconds: 5}}},
	}, {
		name: "an empty in-place strategy alone makes a rolling update",
		in:   CloneSetUpdateStrategy{InPlaceUpdateStrategy: &InPlaceUpdateStrategy{}},
		want: v1beta1.CloneSetUpdateStrategy{
			RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{InPlaceUpdateStrategy: &v1beta1.InPlaceUpdateStrategy{}}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAlphaCloneSet(nil, nil, tt.in)
			b := upCloneSet(t, a)
			wantBetaStrategy(t, b.Spec.UpdateStrategy, tt.want)
			wantRecords(t, b.Annotations, V1alpha1ConversionAnnotation, "")
			if back := downCloneSet(t, b); !apiequality.Semantic.DeepEqual(back, a) {
				t.Errorf("down(up(a)) = %s\nwant %s", toJSON(t, back), toJSON(t, a))
			}
		})
	}
}

func TestCloneSetUpdateTypeDown(t *testing.T) {
	rolling := v1beta1.RollingUpdateCloneSetUpdateStrategyType
	onDelete := v1beta1.OnDeleteCloneSetUpdateStrategyType
	tests := []struct {
		name        string
		in          v1beta1.CloneSetUpdateStrategy
		want        CloneSetUpdateStrategy
		wantRecords string
	}{{
		name: "a rolling update's policy is the type",
		in: v1beta1.CloneSetUpdateStrategy{Type: rolling, RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{
			PodUpdatePolicy: v1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType, Partition: intStr(1),
			InPlaceUpdateStrategy: &v1beta1.InPlaceUpdateStrategy{GracePeriodSeconds: 10}}},
		want: CloneSetUpdateStrategy{Type: InPlaceOnlyCloneSetUpdateStrategyType, Partition: intStr(1),
			InPlaceUpdateStrategy: &InPlaceUpdateStrategy{GracePeriodSeconds: 10}},
	}, {
		name: "OnDelete stays OnDelete",
		in:   v1beta1.CloneSetUpdateStrategy{Type: onDelete},
		want: CloneSetUpdateStrategy{Type: OnDeleteCloneSetUpdateStrategyType},
	}, {
		name: "OnDelete keeps its rolling update fields",
		in:   v1beta1.CloneSetUpdateStrategy{Type: onDelete, RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{Partition: intStr(2)}},
		want: CloneSetUpdateStrategy{Type: OnDeleteCloneSetUpdateStrategyType, Partition: intStr(2)},
	}, {
		name: "nothing set stays so",
		in:   v1beta1.CloneSetUpdateStrategy{},
		want: CloneSetUpdateStrategy{},
	}, {
		name: "a rolling update without a rolling update recreates pods, recorded",
		in:   v1beta1.CloneSetUpdateStrategy{Type: rolling},
		want: CloneSetUpdateStrategy{Type: RecreateCloneSetUpdateStrategyType},
		wantRecords: `{"spec.updateStrategy": {"restore": {"type": "RollingUpdate"},
			"guard": ` + strategyGuard(`{"type": "ReCreate"}`) + `}}`,
	}, {
		name: "a rolling update without a policy recreates pods, recorded",
		in:   v1beta1.CloneSetUpdateStrategy{Type: rolling, RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{MaxSurge: intStr(1)}},
		want: CloneSetUpdateStrategy{Type: RecreateCloneSetUpdateStrategyType, MaxSurge: intStr(1)},
		wantRecords: `{"spec.updateStrategy": {"restore": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
			"guard": ` + strategyGuard(`{"type": "ReCreate", "maxSurge": 1}`) + `}}`,
	}, {
		name: "OnDelete with a policy loses the policy, recorded",
		in: v1beta1.CloneSetUpdateStrategy{Type: onDelete, RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{
			PodUpdatePolicy: v1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType, Partition: intStr(2)}},
		want: CloneSetUpdateStrategy{Type: OnDeleteCloneSetUpdateStrategyType, Partition: intStr(2)},
		wantRecords: `{"spec.updateStrategy": {
			"restore": {"type": "OnDelete", "rollingUpdate": {"partition": 2, "podUpdatePolicy": "InPlaceIfPossible"}},
			"guard": ` + strategyGuard(`{"type": "OnDelete", "partition": 2}`) + `}}`,
	}, {
		name: "a policy without a type is the type, recorded",
		in: v1beta1.CloneSetUpdateStrategy{RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{
			PodUpdatePolicy: v1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType}},
		want: CloneSetUpdateStrategy{Type: InPlaceIfPossibleCloneSetUpdateStrategyType},
		wantRecords: `{"spec.updateStrategy": {"restore": {"rollingUpdate": {"podUpdatePolicy": "InPlaceIfPossible"}},
			"guard": ` + strategyGuard(`{"type": "InPlaceIfPossible"}`) + `}}`,
	}, {
		// OpenKruise turns {} into nil.
		name: "an empty rolling update is recorded",
		in:   v1beta1.CloneSetUpdateStrategy{RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{}},
		want: CloneSetUpdateStrategy{},
		wantRecords: `{"spec.updateStrategy": {"restore": {"rollingUpdate": {}},
			"guard": ` + strategyGuard(`{}`) + `}}`,
	}, {
		name: "a policy named like a type is the type, recorded",
		in:   v1beta1.CloneSetUpdateStrategy{Type: rolling, RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{PodUpdatePolicy: "OnDelete"}},
		want: CloneSetUpdateStrategy{Type: OnDeleteCloneSetUpdateStrategyType},
		wantRecords: `{"spec.updateStrategy": {"restore": {"type": "RollingUpdate", "rollingUpdate": {"podUpdatePolicy": "OnDelete"}},
			"guard": ` + strategyGuard(`{"type": "OnDelete"}`) + `}}`,
	}, {
		name: "a type v1beta1 does not define is kept, recorded",
		in:   v1beta1.CloneSetUpdateStrategy{Type: "Weird"},
		want: CloneSetUpdateStrategy{Type: "Weird"},
		wantRecords: `{"spec.updateStrategy": {"restore": {"type": "Weird"},
			"guard": ` + strategyGuard(`{"type": "Weird"}`) + `}}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBetaCloneSet(nil, nil, tt.in)
			a := downCloneSet(t, b)
			wantAlphaStrategy(t, a.Spec.UpdateStrategy, tt.want)
			wantAnnotations(t, a.Annotations, map[string]string{})
			wantRecords(t, a.Annotations, V1beta1ConversionAnnotation, tt.wantRecords)
			if back := upCloneSet(t, a); !apiequality.Semantic.DeepEqual(back, b) {
				t.Errorf("up(down(b)) = %s\nwant %s", toJSON(t, back), toJSON(t, b))
			}
		})
	}
}

func TestCloneSetUpdateTypeAlphaWriterWins(t *testing.T) {
	// A v1beta1 rolling update without a policy reads as ReCreate in v1alpha1, recorded.
	b := newBetaCloneSet(nil, nil, v1beta1.CloneSetUpdateStrategy{Type: v1beta1.RollingUpdateCloneSetUpdateStrategyType})
	a := downCloneSet(t, b)
	if _, ok := a.Annotations[V1beta1ConversionAnnotation]; !ok {
		t.Fatalf("down wrote no record: the case does not test a guard")
	}
	// A v1alpha1 client switches to in-place updates: its choice is taken.
	a.Spec.UpdateStrategy.Type = InPlaceIfPossibleCloneSetUpdateStrategyType
	back := upCloneSet(t, a)
	wantBetaStrategy(t, back.Spec.UpdateStrategy, v1beta1.CloneSetUpdateStrategy{Type: v1beta1.RollingUpdateCloneSetUpdateStrategyType,
		RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{PodUpdatePolicy: v1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType}})
	wantRecords(t, back.Annotations, V1alpha1ConversionAnnotation, "")
	wantAnnotations(t, back.Annotations, map[string]string{})

	// A v1alpha1 client that changes nothing of the strategy gets it back as it was.
	a = downCloneSet(t, b)
	a.Spec.Replicas = i32(6)
	back = upCloneSet(t, a)
	wantBetaStrategy(t, back.Spec.UpdateStrategy, b.Spec.UpdateStrategy)
}

func TestCloneSetPVCReuse(t *testing.T) {
	for _, disable := range []bool{false, true} {
		a := newAlphaCloneSet(nil, nil, CloneSetUpdateStrategy{})
		a.Spec.ScaleStrategy = CloneSetScaleStrategy{DisablePVCReuse: disable, PodsToDelete: []string{"web-x2k9p"},
			MaxUnavailable: intStr(1)}
		b := upCloneSet(t, a)
		want := v1beta1.CloneSetScaleStrategy{EnablePVCReuse: !disable, PodsToDelete: []string{"web-x2k9p"},
			MaxUnavailable: intStr(1)}
		if !apiequality.Semantic.DeepEqual(b.Spec.ScaleStrategy, want) {
			t.Errorf("disablePVCReuse %v: scaleStrategy = %s, want %s", disable, toJSON(t, b.Spec.ScaleStrategy), toJSON(t, want))
		}
		wantRecords(t, b.Annotations, V1alpha1ConversionAnnotation, "")
		if back := downCloneSet(t, b); !apiequality.Semantic.DeepEqual(back, a) {
			t.Errorf("disablePVCReuse %v: down(up(a)) = %s\nwant %s", disable, toJSON(t, back), toJSON(t, a))
		}
	}
	for _, enable := range []bool{false, true} {
		b := newBetaCloneSet(nil, nil, v1beta1.CloneSetUpdateStrategy{})
		b.Spec.ScaleStrategy.EnablePVCReuse = enable
		a := downCloneSet(t, b)
		if a.Spec.ScaleStrategy.DisablePVCReuse != !enable {
			t.Errorf("enablePVCReuse %v: disablePVCReuse = %v", enable, a.Spec.ScaleStrategy.DisablePVCReuse)
		}
		wantRecords(t, a.Annotations, V1beta1ConversionAnnotation, "")
		if back := upCloneSet(t, a); !apiequality.Semantic.DeepEqual(back, b) {
			t.Errorf("enablePVCReuse %v: up(down(b)) = %s\nwant %s", enable, toJSON(t, back), toJSON(t, b))
		}
	}
}

func TestCloneSetExcludePreparingDeleteUp(t *testing.T) {
	for _, tt := range []struct {
		value *string
		want  bool
	}{
		{ptrTo("true"), true},
		{ptrTo("TRUE"), false},
		{ptrTo("false"), false},
		{ptrTo(""), false},
		{nil, false},
	} {
		labels := map[string]string{"app": "web"}
		if tt.value != nil {
			labels[excludeLabel] = *tt.value
		}
		a := newAlphaCloneSet(labels, nil, CloneSetUpdateStrategy{})
		b := upCloneSet(t, a)
		if b.Spec.ScaleStrategy.ExcludePreparingDelete != tt.want {
			t.Errorf("label %v: excludePreparingDelete = %v, want %v", deref(tt.value), b.Spec.ScaleStrategy.ExcludePreparingDelete, tt.want)
		}
		wantLabels(t, b.Labels, labels) // the label is kept as it is
		wantRecords(t, b.Annotations, V1alpha1ConversionAnnotation, "")
		if back := downCloneSet(t, b); !apiequality.Semantic.DeepEqual(back, a) {
			t.Errorf("label %v: down(up(a)) = %s\nwant %s", deref(tt.value), toJSON(t, back), toJSON(t, a))
		}
	}
}

func TestCloneSetExcludePreparingDeleteDown(t *testing.T) {
	tests := []struct {
		name        string
		labels      map[string]string
		exclude     bool
		wantLabels  map[string]string
		wantRecords string
	}{{
		name:       "true becomes the label, recorded as absent",
		labels:     map[string]string{"app": "web"},
		exclude:    true,
		wantLabels: map[string]string{"app": "web", excludeLabel: "true"},
		wantRecords: `{"metadata.labels[apps.kruise.io/cloneset-scaling-exclude-preparing-delete]":
			{"restore": null, "guard": {"metadata.labels[apps.kruise.io/cloneset-scaling-exclude-preparing-delete]": "true"}}}`,
	}, {
		name:       "true on an object without labels",
		exclude:    true,
		wantLabels: map[string]string{excludeLabel: "true"},
		wantRecords: `{"metadata.labels[apps.kruise.io/cloneset-scaling-exclude-preparing-delete]":
			{"restore": null, "guard": {"metadata.labels[apps.kruise.io/cloneset-scaling-exclude-preparing-delete]": "true"}}}`,
	}, {
		name:       "true with its label needs no record",
		labels:     map[string]string{excludeLabel: "true"},
		exclude:    true,
		wantLabels: map[string]string{excludeLabel: "true"},
	}, {
		name:       "true overrides a disagreeing label, which is recorded",
		labels:     map[string]string{excludeLabel: "yes"},
		exclude:    true,
		wantLabels: map[string]string{excludeLabel: "true"},
		wantRecords: `{"metadata.labels[apps.kruise.io/cloneset-scaling-exclude-preparing-delete]":
			{"restore": "yes", "guard": {"metadata.labels[apps.kruise.io/cloneset-scaling-exclude-preparing-delete]": "true"}}}`,
	}, {
		name:       "false beside the label that would set it is recorded, guarded on the label",
		labels:     map[string]string{excludeLabel: "true"},
		wantLabels: map[string]string{excludeLabel: "true"},
		wantRecords: `{"spec.scaleStrategy.excludePreparingDelete":
			{"restore": false, "guard": {"metadata.labels[apps.kruise.io/cloneset-scaling-exclude-preparing-delete]": "true"}}}`,
	}, {
		name:       "false with another label value needs no record",
		labels:     map[string]string{excludeLabel: "false"},
		wantLabels: map[string]string{excludeLabel: "false"},
	}, {
		name: "false without the label needs no record",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBetaCloneSet(tt.labels, nil, v1beta1.CloneSetUpdateStrategy{})
			b.Spec.ScaleStrategy.ExcludePreparingDelete = tt.exclude
			a := downCloneSet(t, b)
			wantLabels(t, a.Labels, tt.wantLabels)
			wantRecords(t, a.Annotations, V1beta1ConversionAnnotation, tt.wantRecords)
			if back := upCloneSet(t, a); !apiequality.Semantic.DeepEqual(back, b) {
				t.Errorf("up(down(b)) = %s\nwant %s", toJSON(t, back), toJSON(t, b))
			}
		})
	}
}

func TestCloneSetExcludePreparingDeleteAlphaWriterWins(t *testing.T) {
	b := newBetaCloneSet(map[string]string{"app": "web"}, nil, v1beta1.CloneSetUpdateStrategy{})
	b.Spec.ScaleStrategy.ExcludePreparingDelete = true

	// A v1alpha1 read-modify-write that leaves the label keeps the field (OpenKruise loses
	// it: its conversion down never writes the label).
	a := downCloneSet(t, b)
	a.Spec.Replicas = i32(6)
	back := upCloneSet(t, a)
	if !back.Spec.ScaleStrategy.ExcludePreparingDelete {
		t.Errorf("excludePreparingDelete lost by a v1alpha1 update of replicas")
	}
	wantLabels(t, back.Labels, map[string]string{"app": "web"})

	// A v1alpha1 client that removes the label turns it off.
	a = downCloneSet(t, b)
	delete(a.Labels, excludeLabel)
	back = upCloneSet(t, a)
	if back.Spec.ScaleStrategy.ExcludePreparingDelete {
		t.Errorf("excludePreparingDelete kept after a v1alpha1 client removed its label")
	}
	wantLabels(t, back.Labels, map[string]string{"app": "web"})
	wantRecords(t, back.Annotations, V1alpha1ConversionAnnotation, "")

	// A v1alpha1 client that sets the label to another value turns it off and keeps its
	// value.
	a = downCloneSet(t, b)
	a.Labels[excludeLabel] = "false"
	back = upCloneSet(t, a)
	if back.Spec.ScaleStrategy.ExcludePreparingDelete {
		t.Errorf("excludePreparingDelete kept after a v1alpha1 client set its label to false")
	}
	wantLabels(t, back.Labels, map[string]string{"app": "web", excludeLabel: "false"})
}

func TestCloneSetPreDownloadUp(t *testing.T) {
	par, timeout, minReady := ImagePreDownloadParallelismKey, ImagePreDownloadTimeoutSecondsKey, ImagePreDownloadMinUpdatedReadyPods
	intOrStr := func(v intstr.IntOrString) *intstr.IntOrString { return &v }
	rolling := v1beta1.RollingUpdateCloneSetUpdateStrategyType
	recreate := v1beta1.RecreateCloneSetPodUpdateStrategyType
	tests := []struct {
		name        string
		annotations map[string]string
		in          CloneSetUpdateStrategy
		want        v1beta1.CloneSetUpdateStrategy
		wantRecords string
	}{{
		name:        "the annotations become the fields and are kept",
		annotations: map[string]string{par: "3", timeout: "600", minReady: "2"},
		in:          CloneSetUpdateStrategy{Type: RecreateCloneSetUpdateStrategyType},
		want: v1beta1.CloneSetUpdateStrategy{Type: rolling, RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{
			PodUpdatePolicy: recreate, InPlaceUpdateStrategy: &v1beta1.InPlaceUpdateStrategy{
				ImagePreDownloadParallelism: intStr(3), ImagePreDownloadTimeoutSeconds: i32(600),
				ImagePreDownloadMinUpdatedReadyPods: i32(2)}}},
	}, {
		name:        "an annotation that parses to the number it holds otherwise is kept verbatim",
		annotations: map[string]string{timeout: "+0600"},
		in:          CloneSetUpdateStrategy{},
		want: v1beta1.CloneSetUpdateStrategy{RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{
			InPlaceUpdateStrategy: &v1beta1.InPlaceUpdateStrategy{ImagePreDownloadTimeoutSeconds: i32(600)}}},
	}, {
		name:        "invalid annotations set nothing and are kept",
		annotations: map[string]string{par: "50%", timeout: "abc", minReady: "2147483648"},
		in:          CloneSetUpdateStrategy{Type: RecreateCloneSetUpdateStrategyType},
		want: v1beta1.CloneSetUpdateStrategy{Type: rolling,
			RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{PodUpdatePolicy: recreate}},
	}, {
		name:        "the settings join an in-place strategy",
		annotations: map[string]string{par: "1"},
		in: CloneSetUpdateStrategy{Type: InPlaceIfPossibleCloneSetUpdateStrategyType,
			InPlaceUpdateStrategy: &InPlaceUpdateStrategy{GracePeriodSeconds: 10}},
		want: v1beta1.CloneSetUpdateStrategy{Type: rolling, RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{
			PodUpdatePolicy: v1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType,
			InPlaceUpdateStrategy: &v1beta1.InPlaceUpdateStrategy{GracePeriodSeconds: 10,
				ImagePreDownloadParallelism: intStr(1)}}},
	}, {
		name:        "an empty in-place strategy beside the annotations is recorded",
		annotations: map[string]string{timeout: "30"},
		in:          CloneSetUpdateStrategy{InPlaceUpdateStrategy: &InPlaceUpdateStrategy{}},
		want: v1beta1.CloneSetUpdateStrategy{RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{
			InPlaceUpdateStrategy: &v1beta1.InPlaceUpdateStrategy{ImagePreDownloadTimeoutSeconds: i32(30)}}},
		wantRecords: `{"spec.updateStrategy": {"restore": {"inPlaceUpdateStrategy": {}},
			"guard": {"spec.updateStrategy": {"rollingUpdate": {"inPlaceUpdateStrategy": {"imagePreDownloadTimeoutSeconds": 30}}}}}}`,
	}, {
		// OpenKruise drops them.
		name: "v1alpha1's spec fields are taken, and recorded",
		in: CloneSetUpdateStrategy{InPlaceUpdateStrategy: &InPlaceUpdateStrategy{
			ImagePreDownloadParallelism: intStr(4), ImagePreDownloadTimeoutSeconds: i32(60)}},
		want: v1beta1.CloneSetUpdateStrategy{RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{
			InPlaceUpdateStrategy: &v1beta1.InPlaceUpdateStrategy{
				ImagePreDownloadParallelism: intStr(4), ImagePreDownloadTimeoutSeconds: i32(60)}}},
		wantRecords: `{
			"metadata.annotations[apps.kruise.io/image-predownload-parallelism]": {"restore": null,
				"guard": {"metadata.annotations[apps.kruise.io/image-predownload-parallelism]": null,
					"spec.updateStrategy": {"rollingUpdate": {"inPlaceUpdateStrategy": {"imagePreDownloadParallelism": 4, "imagePreDownloadTimeoutSeconds": 60}}}}},
			"metadata.annotations[apps.kruise.io/image-predownload-timeout-seconds]": {"restore": null,
				"guard": {"metadata.annotations[apps.kruise.io/image-predownload-timeout-seconds]": null,
					"spec.updateStrategy": {"rollingUpdate": {"inPlaceUpdateStrategy": {"imagePreDownloadParallelism": 4, "imagePreDownloadTimeoutSeconds": 60}}}}},
			"spec.updateStrategy": {"restore": {"inPlaceUpdateStrategy": {"imagePreDownloadParallelism": 4, "imagePreDownloadTimeoutSeconds": 60}},
				"guard": {"spec.updateStrategy": {"rollingUpdate": {"inPlaceUpdateStrategy": {"imagePreDownloadParallelism": 4, "imagePreDownloadTimeoutSeconds": 60}}}}}}`,
	}, {
		name:        "a spec field wins over its annotation, which is recorded",
		annotations: map[string]string{par: "2"},
		in: CloneSetUpdateStrategy{InPlaceUpdateStrategy: &InPlaceUpdateStrategy{
			GracePeriodSeconds: 5, ImagePreDownloadParallelism: intOrStr(intstr.FromString("7"))}},
		want: v1beta1.CloneSetUpdateStrategy{RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{
			InPlaceUpdateStrategy: &v1beta1.InPlaceUpdateStrategy{GracePeriodSeconds: 5,
				ImagePreDownloadParallelism: intOrStr(intstr.FromString("7"))}}},
		wantRecords: `{
			"metadata.annotations[apps.kruise.io/image-predownload-parallelism]": {"restore": "2",
				"guard": {"metadata.annotations[apps.kruise.io/image-predownload-parallelism]": "2",
					"spec.updateStrategy": {"rollingUpdate": {"inPlaceUpdateStrategy": {"gracePeriodSeconds": 5, "imagePreDownloadParallelism": "7"}}}}},
			"spec.updateStrategy": {"restore": {"inPlaceUpdateStrategy": {"gracePeriodSeconds": 5, "imagePreDownloadParallelism": "7"}},
				"guard": {"spec.updateStrategy": {"rollingUpdate": {"inPlaceUpdateStrategy": {"gracePeriodSeconds": 5, "imagePreDownloadParallelism": "7"}}}}}}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAlphaCloneSet(nil, tt.annotations, tt.in)
			b := upCloneSet(t, a)
			wantBetaStrategy(t, b.Spec.UpdateStrategy, tt.want)
			if tt.annotations == nil {
				tt.annotations = map[string]string{}
			}
			wantAnnotations(t, b.Annotations, tt.annotations) // kept as they are
			wantRecords(t, b.Annotations, V1alpha1ConversionAnnotation, tt.wantRecords)
			if back := downCloneSet(t, b); !apiequality.Semantic.DeepEqual(back, a) {
				t.Errorf("down(up(a)) = %s\nwant %s", toJSON(t, back), toJSON(t, a))
			}
		})
	}
}

func TestCloneSetPreDownloadDown(t *testing.T) {
	par, timeout, minReady := ImagePreDownloadParallelismKey, ImagePreDownloadTimeoutSecondsKey, ImagePreDownloadMinUpdatedReadyPods
	intOrStr := func(v intstr.IntOrString) *intstr.IntOrString { return &v }
	withSettings := func(ipu *v1beta1.InPlaceUpdateStrategy) v1beta1.CloneSetUpdateStrategy {
		return v1beta1.CloneSetUpdateStrategy{Type: v1beta1.RollingUpdateCloneSetUpdateStrategyType,
			RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{
				PodUpdatePolicy:       v1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType,
				InPlaceUpdateStrategy: ipu}}
	}
	inPlace := func(ipu *InPlaceUpdateStrategy) CloneSetUpdateStrategy {
		return CloneSetUpdateStrategy{Type: InPlaceIfPossibleCloneSetUpdateStrategyType, InPlaceUpdateStrategy: ipu}
	}
	tests := []struct {
		name            string
		annotations     map[string]string
		in              v1beta1.CloneSetUpdateStrategy
		want            CloneSetUpdateStrategy
		wantAnnotations map[string]string
		wantRecords     string
	}{{
		name: "the fields become annotations, recorded as absent; the in-place strategy that held only them is unset",
		in: withSettings(&v1beta1.InPlaceUpdateStrategy{ImagePreDownloadParallelism: intStr(3),
			ImagePreDownloadTimeoutSeconds: i32(600), ImagePreDownloadMinUpdatedReadyPods: i32(0)}),
		want:            inPlace(nil),
		wantAnnotations: map[string]string{par: "3", timeout: "600", minReady: "0"},
		wantRecords: `{
			"metadata.annotations[apps.kruise.io/image-predownload-min-updated-ready-pods]": {"restore": null,
				"guard": {"metadata.annotations[apps.kruise.io/image-predownload-min-updated-ready-pods]": "0"}},
			"metadata.annotations[apps.kruise.io/image-predownload-parallelism]": {"restore": null,
				"guard": {"metadata.annotations[apps.kruise.io/image-predownload-parallelism]": "3"}},
			"metadata.annotations[apps.kruise.io/image-predownload-timeout-seconds]": {"restore": null,
				"guard": {"metadata.annotations[apps.kruise.io/image-predownload-timeout-seconds]": "600"}}}`,
	}, {
		name:            "the rest of the in-place strategy stays",
		in:              withSettings(&v1beta1.InPlaceUpdateStrategy{GracePeriodSeconds: 10, ImagePreDownloadTimeoutSeconds: i32(60)}),
		annotations:     map[string]string{timeout: "60"},
		want:            inPlace(&InPlaceUpdateStrategy{GracePeriodSeconds: 10}),
		wantAnnotations: map[string]string{timeout: "60"},
	}, {
		name:            "annotations that parse to the fields are kept verbatim",
		in:              withSettings(&v1beta1.InPlaceUpdateStrategy{ImagePreDownloadParallelism: intStr(3), ImagePreDownloadTimeoutSeconds: i32(600)}),
		annotations:     map[string]string{par: "03", timeout: "+600"},
		want:            inPlace(nil),
		wantAnnotations: map[string]string{par: "03", timeout: "+600"},
	}, {
		name:            "a stale annotation is overwritten, and recorded",
		in:              withSettings(&v1beta1.InPlaceUpdateStrategy{ImagePreDownloadTimeoutSeconds: i32(600)}),
		annotations:     map[string]string{timeout: "30"},
		want:            inPlace(nil),
		wantAnnotations: map[string]string{timeout: "600"},
		wantRecords: `{"metadata.annotations[apps.kruise.io/image-predownload-timeout-seconds]": {"restore": "30",
			"guard": {"metadata.annotations[apps.kruise.io/image-predownload-timeout-seconds]": "600"}}}`,
	}, {
		// OpenKruise resurrects the field from such an annotation.
		name:            "an annotation beside an unset field is kept, and the unset field recorded",
		in:              withSettings(&v1beta1.InPlaceUpdateStrategy{GracePeriodSeconds: 10}),
		annotations:     map[string]string{minReady: "2"},
		want:            inPlace(&InPlaceUpdateStrategy{GracePeriodSeconds: 10}),
		wantAnnotations: map[string]string{minReady: "2"},
		wantRecords: `{"spec.updateStrategy": {
			"restore": {"type": "RollingUpdate", "rollingUpdate": {"podUpdatePolicy": "InPlaceIfPossible", "inPlaceUpdateStrategy": {"gracePeriodSeconds": 10}}},
			"guard": {"spec.updateStrategy": {"type": "InPlaceIfPossible", "inPlaceUpdateStrategy": {"gracePeriodSeconds": 10}},
				"metadata.annotations[apps.kruise.io/image-predownload-parallelism]": null,
				"metadata.annotations[apps.kruise.io/image-predownload-timeout-seconds]": null,
				"metadata.annotations[apps.kruise.io/image-predownload-min-updated-ready-pods]": "2"}}}`,
	}, {
		name:            "a string parallelism is written as its text, and recorded",
		in:              withSettings(&v1beta1.InPlaceUpdateStrategy{ImagePreDownloadParallelism: intOrStr(intstr.FromString("5"))}),
		want:            inPlace(nil),
		wantAnnotations: map[string]string{par: "5"},
		wantRecords: `{
			"metadata.annotations[apps.kruise.io/image-predownload-parallelism]": {"restore": null,
				"guard": {"metadata.annotations[apps.kruise.io/image-predownload-parallelism]": "5"}},
			"spec.updateStrategy": {
				"restore": {"type": "RollingUpdate", "rollingUpdate": {"podUpdatePolicy": "InPlaceIfPossible", "inPlaceUpdateStrategy": {"imagePreDownloadParallelism": "5"}}},
				"guard": {"spec.updateStrategy": {"type": "InPlaceIfPossible"},
					"metadata.annotations[apps.kruise.io/image-predownload-parallelism]": "5",
					"metadata.annotations[apps.kruise.io/image-predownload-timeout-seconds]": null,
					"metadata.annotations[apps.kruise.io/image-predownload-min-updated-ready-pods]": null}}}`,
	}, {
		name:            "an empty in-place strategy stays empty",
		in:              withSettings(&v1beta1.InPlaceUpdateStrategy{}),
		want:            inPlace(&InPlaceUpdateStrategy{}),
		wantAnnotations: map[string]string{},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBetaCloneSet(nil, tt.annotations, tt.in)
			a := downCloneSet(t, b)
			wantAlphaStrategy(t, a.Spec.UpdateStrategy, tt.want)
			wantAnnotations(t, a.Annotations, tt.wantAnnotations)
			wantRecords(t, a.Annotations, V1beta1ConversionAnnotation, tt.wantRecords)
			if back := upCloneSet(t, a); !apiequality.Semantic.DeepEqual(back, b) {
				t.Errorf("up(down(b)) = %s\nwant %s", toJSON(t, back), toJSON(t, b))
			}
		})
	}
}

func TestCloneSetPreDownloadWritersWin(t *testing.T) {
	timeout := ImagePreDownloadTimeoutSecondsKey
	settings := func(n int32) v1beta1.CloneSetUpdateStrategy {
		return v1beta1.CloneSetUpdateStrategy{Type: v1beta1.RollingUpdateCloneSetUpdateStrategyType,
			RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{PodUpdatePolicy: v1beta1.RecreateCloneSetPodUpdateStrategyType,
				InPlaceUpdateStrategy: &v1beta1.InPlaceUpdateStrategy{ImagePreDownloadTimeoutSeconds: i32(n)}}}
	}
	b := newBetaCloneSet(nil, nil, settings(600))

	// A v1alpha1 client changes the annotation: its value is taken.
	a := downCloneSet(t, b)
	a.Annotations[timeout] = "90"
	back := upCloneSet(t, a)
	wantBetaStrategy(t, back.Spec.UpdateStrategy, settings(90))
	wantAnnotations(t, back.Annotations, map[string]string{timeout: "90"})
	wantRecords(t, back.Annotations, V1alpha1ConversionAnnotation, "")

	// A v1alpha1 client removes the annotation: the setting is gone.
	a = downCloneSet(t, b)
	delete(a.Annotations, timeout)
	back = upCloneSet(t, a)
	wantBetaStrategy(t, back.Spec.UpdateStrategy, v1beta1.CloneSetUpdateStrategy{Type: v1beta1.RollingUpdateCloneSetUpdateStrategyType,
		RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{PodUpdatePolicy: v1beta1.RecreateCloneSetPodUpdateStrategyType}})
	wantAnnotations(t, back.Annotations, map[string]string{})

	// A v1beta1 client changes a setting that v1alpha1 held in its spec: the records of the
	// v1alpha1 spec and of the absent annotation no longer hold, and the new value comes
	// down as the annotation (recorded as absent in v1beta1, as for any v1beta1 object).
	alpha := newAlphaCloneSet(nil, nil, CloneSetUpdateStrategy{Type: RecreateCloneSetUpdateStrategyType,
		InPlaceUpdateStrategy: &InPlaceUpdateStrategy{ImagePreDownloadTimeoutSeconds: i32(60)}})
	beta := upCloneSet(t, alpha)
	if _, ok := beta.Annotations[V1alpha1ConversionAnnotation]; !ok {
		t.Fatalf("up wrote no record: the case does not test a guard")
	}
	beta.Spec.UpdateStrategy = settings(120)
	down := downCloneSet(t, beta)
	wantAlphaStrategy(t, down.Spec.UpdateStrategy, CloneSetUpdateStrategy{Type: RecreateCloneSetUpdateStrategyType})
	wantAnnotations(t, down.Annotations, map[string]string{timeout: "120"})
	wantRecords(t, down.Annotations, V1beta1ConversionAnnotation, `{
		"metadata.annotations[apps.kruise.io/image-predownload-timeout-seconds]": {"restore": null,
			"guard": {"metadata.annotations[apps.kruise.io/image-predownload-timeout-seconds]": "120"}}}`)
}

func TestCloneSetSharedFieldsAndMetadata(t *testing.T) {
	b := newBetaCloneSet(map[string]string{"app": "web"}, map[string]string{"note": "kept"}, v1beta1.CloneSetUpdateStrategy{})
	b.ResourceVersion, b.CreationTimestamp = "12", metav1.Unix(1700000000, 0)
	b.Finalizers = []string{"f"}
	b.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "d", UID: "u"}}
	b.Spec.ScaleStrategy.ExcludePreparingDelete = true
	b.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	b.Spec.RevisionHistoryLimit, b.Spec.MinReadySeconds, b.Spec.ProgressDeadlineSeconds = i32(5), 10, i32(600)
	b.Spec.Lifecycle = &v1beta1.Lifecycle{PreDelete: &v1beta1.LifecycleHook{FinalizersHandler: []string{"example.com/hold"}}}
	b.Status.Conditions = []v1beta1.CloneSetCondition{{Type: v1beta1.CloneSetConditionTypeProgressing,
		Status: corev1.ConditionTrue, Reason: string(v1beta1.CloneSetAvailable), LastUpdateTime: metav1.Unix(1700000000, 0)}}
	b.Status.LabelSelector, b.Status.CollisionCount = "app=web", i32(1)

	a := downCloneSet(t, b)
	got, want := a.ObjectMeta, b.ObjectMeta
	got.Annotations, want.Annotations = nil, nil
	got.Labels, want.Labels = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("metadata other than labels and annotations changed:\n%+v\nwant %+v", got, want)
	}
	if toJSON(t, a.Status) != toJSON(t, b.Status) {
		t.Errorf("status = %s, want %s", toJSON(t, a.Status), toJSON(t, b.Status))
	}
	if a.Spec.MinReadySeconds != 10 || *a.Spec.RevisionHistoryLimit != 5 || *a.Spec.ProgressDeadlineSeconds != 600 ||
		len(a.Spec.VolumeClaimTemplates) != 1 || a.Spec.Lifecycle == nil || !apiequality.Semantic.DeepEqual(a.Spec.Template, b.Spec.Template) {
		t.Errorf("shared spec fields not copied: %s", toJSON(t, a.Spec))
	}
	if back := upCloneSet(t, a); !apiequality.Semantic.DeepEqual(back, b) {
		t.Errorf("up(down(b)) = %s\nwant %s", toJSON(t, back), toJSON(t, b))
	}
}

// Through the scheme, as the /convert endpoint and clients convert.
func TestCloneSetSchemeConversion(t *testing.T) {
	scheme := newScheme(t)
	b := newBetaCloneSet(nil, nil, v1beta1.CloneSetUpdateStrategy{Type: v1beta1.OnDeleteCloneSetUpdateStrategyType,
		RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{Partition: intStr(2)}})
	b.Spec.ScaleStrategy.ExcludePreparingDelete = true
	a := &CloneSet{}
	if err := scheme.Convert(b, a, nil); err != nil {
		t.Fatalf("converting: %v", err)
	}
	if a.Labels[excludeLabel] != "true" || a.Spec.UpdateStrategy.Type != OnDeleteCloneSetUpdateStrategyType ||
		a.Spec.UpdateStrategy.Partition == nil || a.Spec.ScaleStrategy.DisablePVCReuse {
		t.Errorf("scheme conversion gave %s", toJSON(t, a))
	}
	back := &v1beta1.CloneSet{}
	if err := scheme.Convert(a, back, nil); err != nil {
		t.Fatalf("converting back: %v", err)
	}
	if !apiequality.Semantic.DeepEqual(back, b) {
		t.Errorf("scheme round trip gave %s\nwant %s", toJSON(t, back), toJSON(t, b))
	}

	list := &CloneSetList{Items: []CloneSet{*a, *newAlphaCloneSet(nil, nil, CloneSetUpdateStrategy{Type: InPlaceOnlyCloneSetUpdateStrategyType})}}
	betaList := &v1beta1.CloneSetList{}
	if err := scheme.Convert(list, betaList, nil); err != nil {
		t.Fatalf("converting a list: %v", err)
	}
	if len(betaList.Items) != 2 || !apiequality.Semantic.DeepEqual(betaList.Items[0], *b) ||
		betaList.Items[1].Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy != v1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType {
		t.Errorf("list conversion gave %s", toJSON(t, betaList))
	}
}
