package v1alpha1

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/bosun-dev/api/apps/v1beta1"
)

// These tests walk the mapping of each carried field, row by row and in both directions:
// what the converted object holds, which records the reserved annotation gets, that the
// conversion back restores the source, and that a client of the other version changing a
// carrier in between wins over a record.

func annotationPath(key string) string { return "metadata.annotations[" + key + "]" }

// wantRecords checks the reserved annotation key of annotations against want, a JSON
// document ("" for no annotation), whatever its formatting.
func wantRecords(t *testing.T, annotations map[string]string, key, want string) {
	t.Helper()
	got, ok := annotations[key]
	switch {
	case want == "" && ok:
		t.Errorf("reserved annotation %s = %s, want none", key, got)
	case want != "" && !ok:
		t.Errorf("no reserved annotation %s, want %s", key, want)
	case want != "" && !sameJSON(t, got, want):
		t.Errorf("reserved annotation %s = %s, want %s", key, got, want)
	}
}

func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	return reflect.DeepEqual(decodeJSON(t, a), decodeJSON(t, b))
}

func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%q is not JSON: %v", s, err)
	}
	return v
}

// withoutReserved returns annotations without the reserved annotations.
func withoutReserved(annotations map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range annotations {
		if k != V1alpha1ConversionAnnotation && k != V1beta1ConversionAnnotation {
			out[k] = v
		}
	}
	return out
}

func wantAnnotations(t *testing.T, got, want map[string]string) {
	t.Helper()
	if got := withoutReserved(got); !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("annotations = %v, want %v (reserved ones left out)", got, want)
	}
}

func newBetaDaemonSet(annotations map[string]string, scale *v1beta1.DaemonSetScaleStrategy) *v1beta1.DaemonSet {
	return &v1beta1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "kube-system", UID: "ds-uid", Generation: 4,
			Labels: map[string]string{"app": "agent"}, Annotations: annotations},
		Spec: v1beta1.DaemonSetSpec{
			Selector:      &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			ScaleStrategy: scale,
			UpdateStrategy: v1beta1.DaemonSetUpdateStrategy{Type: v1beta1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &v1beta1.RollingUpdateDaemonSet{Type: v1beta1.StandardRollingUpdateType,
					MaxUnavailable: intStr(1), MaxSurge: intStr(0)}},
		},
		Status: v1beta1.DaemonSetStatus{DesiredNumberScheduled: 3, UpdateRevision: "5d8f9b"},
	}
}

func newAlphaDaemonSet(annotations map[string]string, ru *RollingUpdateDaemonSet) *DaemonSet {
	return &DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "kube-system", UID: "ds-uid", Generation: 4,
			Labels: map[string]string{"app": "agent"}, Annotations: annotations},
		Spec: DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			UpdateStrategy: DaemonSetUpdateStrategy{Type: RollingUpdateDaemonSetStrategyType, RollingUpdate: ru},
		},
		Status: DaemonSetStatus{DesiredNumberScheduled: 3, DaemonSetHash: "5d8f9b"},
	}
}

func up(t *testing.T, in *DaemonSet) *v1beta1.DaemonSet {
	t.Helper()
	before := in.DeepCopy()
	out := &v1beta1.DaemonSet{}
	ConvertDaemonSetToV1beta1(in, out)
	if !reflect.DeepEqual(in, before) {
		t.Fatalf("converting modified its input")
	}
	return out
}

func down(t *testing.T, in *v1beta1.DaemonSet) *DaemonSet {
	t.Helper()
	before := in.DeepCopy()
	out := &DaemonSet{}
	ConvertDaemonSetFromV1beta1(in, out)
	if !reflect.DeepEqual(in, before) {
		t.Fatalf("converting modified its input")
	}
	return out
}

var partitioned = &v1beta1.DaemonSetScaleStrategy{PartitionedScaling: true}

func TestDaemonSetScaleStrategyDown(t *testing.T) {
	pcp := ProgressiveCreatePodAnnotation
	tests := []struct {
		name            string
		annotations     map[string]string
		scale           *v1beta1.DaemonSetScaleStrategy
		wantAnnotations map[string]string
		wantRecords     string
	}{{
		name:            "partitioned scaling becomes the annotation, recorded as absent",
		scale:           partitioned,
		wantAnnotations: map[string]string{pcp: "true"},
		wantRecords: `{"metadata.annotations[daemonset.kruise.io/progressive-create-pod]":
			{"restore": null, "guard": {"metadata.annotations[daemonset.kruise.io/progressive-create-pod]": "true"}}}`,
	}, {
		name:            "partitioned scaling with its annotation needs no record",
		annotations:     map[string]string{pcp: "true"},
		scale:           partitioned,
		wantAnnotations: map[string]string{pcp: "true"},
	}, {
		name:            "partitioned scaling overrides a disagreeing annotation, which is recorded",
		annotations:     map[string]string{pcp: "TRUE"},
		scale:           partitioned,
		wantAnnotations: map[string]string{pcp: "true"},
		wantRecords: `{"metadata.annotations[daemonset.kruise.io/progressive-create-pod]":
			{"restore": "TRUE", "guard": {"metadata.annotations[daemonset.kruise.io/progressive-create-pod]": "true"}}}`,
	}, {
		name:        "an empty scale strategy is recorded, guarded on the absent annotation",
		scale:       &v1beta1.DaemonSetScaleStrategy{},
		wantRecords: `{"spec.scaleStrategy": {"restore": {}, "guard": {"metadata.annotations[daemonset.kruise.io/progressive-create-pod]": null}}}`,
	}, {
		name:            "partitioned scaling false leaves the annotation and is recorded",
		annotations:     map[string]string{pcp: "true"},
		scale:           &v1beta1.DaemonSetScaleStrategy{PartitionedScaling: false},
		wantAnnotations: map[string]string{pcp: "true"},
		wantRecords: `{"spec.scaleStrategy": {"restore": {},
			"guard": {"metadata.annotations[daemonset.kruise.io/progressive-create-pod]": "true"}}}`,
	}, {
		name:            "no scale strategy beside an annotation that would set it is recorded",
		annotations:     map[string]string{pcp: "true"},
		wantAnnotations: map[string]string{pcp: "true"},
		wantRecords: `{"spec.scaleStrategy": {"restore": null,
			"guard": {"metadata.annotations[daemonset.kruise.io/progressive-create-pod]": "true"}}}`,
	}, {
		name:            "no scale strategy and an annotation that sets nothing need no record",
		annotations:     map[string]string{pcp: "false"},
		wantAnnotations: map[string]string{pcp: "false"},
	}, {
		name: "nothing to carry",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBetaDaemonSet(tt.annotations, tt.scale)
			a := down(t, b)
			if tt.wantAnnotations == nil {
				tt.wantAnnotations = map[string]string{}
			}
			wantAnnotations(t, a.Annotations, tt.wantAnnotations)
			wantRecords(t, a.Annotations, V1beta1ConversionAnnotation, tt.wantRecords)
			if back := up(t, a); !apiequality.Semantic.DeepEqual(back, b) {
				t.Errorf("up(down(b)) = %+v\nwant %+v", back, b)
			}
		})
	}
}

func TestDaemonSetScaleStrategyAlphaWriterWins(t *testing.T) {
	pcp := ProgressiveCreatePodAnnotation
	tests := []struct {
		name        string
		scale       *v1beta1.DaemonSetScaleStrategy
		annotations map[string]string
		// alphaValue is the annotation a v1alpha1 client writes; nil removes it.
		alphaValue      *string
		wantScale       *v1beta1.DaemonSetScaleStrategy
		wantAnnotations map[string]string
	}{{
		name:            "partitioned scaling, annotation set to false",
		scale:           partitioned,
		alphaValue:      ptrTo("false"),
		wantAnnotations: map[string]string{pcp: "false"},
	}, {
		name:       "partitioned scaling, annotation removed",
		scale:      partitioned,
		alphaValue: nil,
	}, {
		name:            "empty scale strategy, annotation set to true",
		scale:           &v1beta1.DaemonSetScaleStrategy{},
		alphaValue:      ptrTo("true"),
		wantScale:       partitioned,
		wantAnnotations: map[string]string{pcp: "true"},
	}, {
		name:        "no scale strategy, annotation true removed",
		annotations: map[string]string{pcp: "true"},
		alphaValue:  nil,
	}, {
		name:            "disagreeing annotation overridden, then set again by a v1alpha1 client",
		annotations:     map[string]string{pcp: "yes"},
		scale:           partitioned,
		alphaValue:      ptrTo("no"),
		wantAnnotations: map[string]string{pcp: "no"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := down(t, newBetaDaemonSet(tt.annotations, tt.scale))
			if _, ok := a.Annotations[V1beta1ConversionAnnotation]; !ok {
				t.Fatalf("down wrote no record: the case does not test a guard")
			}
			delete(a.Annotations, pcp)
			if tt.alphaValue != nil {
				a.Annotations[pcp] = *tt.alphaValue
			}
			b := up(t, a)
			if !apiequality.Semantic.DeepEqual(b.Spec.ScaleStrategy, tt.wantScale) {
				t.Errorf("scaleStrategy = %+v, want %+v", b.Spec.ScaleStrategy, tt.wantScale)
			}
			if tt.wantAnnotations == nil {
				tt.wantAnnotations = map[string]string{}
			}
			wantAnnotations(t, b.Annotations, tt.wantAnnotations)
			wantRecords(t, b.Annotations, V1alpha1ConversionAnnotation, "")
		})
	}
}

func TestDaemonSetScaleStrategyUp(t *testing.T) {
	pcp := ProgressiveCreatePodAnnotation
	for _, tt := range []struct {
		value     *string
		wantScale *v1beta1.DaemonSetScaleStrategy
	}{
		{ptrTo("true"), partitioned},
		{ptrTo("TRUE"), nil},
		{ptrTo("false"), nil},
		{ptrTo(""), nil},
		{ptrTo(" true"), nil},
		{nil, nil},
	} {
		annotations := map[string]string{"other": "x"}
		if tt.value != nil {
			annotations[pcp] = *tt.value
		}
		a := newAlphaDaemonSet(annotations, nil)
		b := up(t, a)
		if !apiequality.Semantic.DeepEqual(b.Spec.ScaleStrategy, tt.wantScale) {
			t.Errorf("annotation %v: scaleStrategy = %+v, want %+v", deref(tt.value), b.Spec.ScaleStrategy, tt.wantScale)
		}
		wantAnnotations(t, b.Annotations, annotations) // the annotation is kept as it is
		wantRecords(t, b.Annotations, V1alpha1ConversionAnnotation, "")
		if back := down(t, b); !apiequality.Semantic.DeepEqual(back, a) {
			t.Errorf("annotation %v: down(up(a)) = %+v\nwant %+v", deref(tt.value), back, a)
		}
	}
}

func TestDaemonSetSurgingUp(t *testing.T) {
	tests := []struct {
		name        string
		rollingUp   *RollingUpdateDaemonSet
		want        *v1beta1.RollingUpdateDaemonSet
		wantRecords string
	}{{
		name:      "Surging without limits surges one pod at a time",
		rollingUp: &RollingUpdateDaemonSet{Type: DeprecatedSurgingRollingUpdateType},
		want: &v1beta1.RollingUpdateDaemonSet{Type: v1beta1.StandardRollingUpdateType,
			MaxSurge: intStr(1), MaxUnavailable: intStr(0)},
		wantRecords: `{"spec.updateStrategy.rollingUpdate": {"restore": {"rollingUpdateType": "Surging"},
			"guard": {"spec.updateStrategy.rollingUpdate": {"rollingUpdateType": "Standard", "maxUnavailable": 0, "maxSurge": 1}}}}`,
	}, {
		name: "Surging keeps the limits that are set",
		rollingUp: &RollingUpdateDaemonSet{Type: DeprecatedSurgingRollingUpdateType,
			MaxSurge: strIntStr("20%"), Partition: intStr(2)},
		want: &v1beta1.RollingUpdateDaemonSet{Type: v1beta1.StandardRollingUpdateType,
			MaxSurge: strIntStr("20%"), MaxUnavailable: intStr(0),
			Partition: intStr(2)},
		wantRecords: `{"spec.updateStrategy.rollingUpdate": {
			"restore": {"rollingUpdateType": "Surging", "maxSurge": "20%", "partition": 2},
			"guard": {"spec.updateStrategy.rollingUpdate": {"rollingUpdateType": "Standard", "maxUnavailable": 0, "maxSurge": "20%", "partition": 2}}}}`,
	}, {
		name:      "InPlaceIfPossible is copied",
		rollingUp: &RollingUpdateDaemonSet{Type: InplaceRollingUpdateType, MaxUnavailable: intStr(2)},
		want:      &v1beta1.RollingUpdateDaemonSet{Type: v1beta1.InplaceRollingUpdateType, MaxUnavailable: intStr(2)},
	}, {
		name:      "an empty type is copied",
		rollingUp: &RollingUpdateDaemonSet{},
		want:      &v1beta1.RollingUpdateDaemonSet{},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAlphaDaemonSet(nil, tt.rollingUp)
			b := up(t, a)
			if got := b.Spec.UpdateStrategy.RollingUpdate; !apiequality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("rollingUpdate = %s, want %s", toJSON(t, got), toJSON(t, tt.want))
			}
			wantRecords(t, b.Annotations, V1alpha1ConversionAnnotation, tt.wantRecords)
			if back := down(t, b); !apiequality.Semantic.DeepEqual(back, a) {
				t.Errorf("down(up(a)) = %s\nwant %s", toJSON(t, back), toJSON(t, a))
			}
		})
	}
}

func TestDaemonSetSurgingBetaWriterWins(t *testing.T) {
	a := newAlphaDaemonSet(nil, &RollingUpdateDaemonSet{Type: DeprecatedSurgingRollingUpdateType})
	b := up(t, a)
	// A v1beta1 client raises the surge.
	b.Spec.UpdateStrategy.RollingUpdate = &v1beta1.RollingUpdateDaemonSet{Type: v1beta1.StandardRollingUpdateType,
		MaxSurge: intStr(2), MaxUnavailable: intStr(0)}
	back := down(t, b)
	want := &RollingUpdateDaemonSet{Type: StandardRollingUpdateType,
		MaxSurge: intStr(2), MaxUnavailable: intStr(0)}
	if got := back.Spec.UpdateStrategy.RollingUpdate; !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("rollingUpdate = %s, want the v1beta1 client's %s", toJSON(t, got), toJSON(t, want))
	}
	wantRecords(t, back.Annotations, V1beta1ConversionAnnotation, "")
	wantAnnotations(t, back.Annotations, map[string]string{})
}

func TestDaemonSetSurgingDown(t *testing.T) {
	// v1beta1 rejects Surging at admission, but an object holding it decodes, so it
	// converts: copied, and recorded, because converting it back rewrites it.
	b := newBetaDaemonSet(nil, nil)
	b.Spec.UpdateStrategy.RollingUpdate = &v1beta1.RollingUpdateDaemonSet{Type: "Surging"}
	a := down(t, b)
	if got := a.Spec.UpdateStrategy.RollingUpdate.Type; got != DeprecatedSurgingRollingUpdateType {
		t.Errorf("rollingUpdateType = %q, want Surging", got)
	}
	wantRecords(t, a.Annotations, V1beta1ConversionAnnotation, `{"spec.updateStrategy.rollingUpdate": {
		"restore": {"rollingUpdateType": "Surging"}, "guard": {"spec.updateStrategy.rollingUpdate": {"rollingUpdateType": "Surging"}}}}`)
	if back := up(t, a); !apiequality.Semantic.DeepEqual(back, b) {
		t.Errorf("up(down(b)) = %s\nwant %s", toJSON(t, back), toJSON(t, b))
	}
}

func TestDaemonSetStatusRevision(t *testing.T) {
	a := newAlphaDaemonSet(nil, nil)
	a.Status.DaemonSetHash = "7c4f"
	if got := up(t, a).Status.UpdateRevision; got != "7c4f" {
		t.Errorf("updateRevision = %q, want daemonSetHash 7c4f", got)
	}
	b := newBetaDaemonSet(nil, nil)
	b.Status.UpdateRevision = "9a1e"
	if got := down(t, b).Status.DaemonSetHash; got != "9a1e" {
		t.Errorf("daemonSetHash = %q, want updateRevision 9a1e", got)
	}
}

// dropCounter records the drops a scheme conversion reports.
type dropCounter map[string]int

func (c dropCounter) ConversionDropped(kind string, dropped int) { c[kind] += dropped }

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

func TestDaemonSetReservedAnnotations(t *testing.T) {
	pcp := ProgressiveCreatePodAnnotation
	scaleRecord := `{"spec.scaleStrategy":{"restore":{},"guard":{"metadata.annotations[daemonset.kruise.io/progressive-create-pod]":"true"}}}`
	tests := []struct {
		name        string
		annotations map[string]string
		wantScale   *v1beta1.DaemonSetScaleStrategy
		wantDropped int
	}{{
		name:        "a record whose guard holds is restored",
		annotations: map[string]string{pcp: "true", V1beta1ConversionAnnotation: scaleRecord},
		wantScale:   &v1beta1.DaemonSetScaleStrategy{},
	}, {
		name:        "an unparseable annotation is ignored and counted",
		annotations: map[string]string{pcp: "true", V1beta1ConversionAnnotation: "{not json"},
		wantScale:   partitioned,
		wantDropped: 1,
	}, {
		name: "a record of an unknown item is ignored and counted, the others are restored",
		annotations: map[string]string{pcp: "true", V1beta1ConversionAnnotation: `{
			"spec.scaleStrategy":{"restore":{},"guard":{"metadata.annotations[daemonset.kruise.io/progressive-create-pod]":"true"}},
			"spec.unknown":{"restore":1,"guard":{}}}`},
		wantScale:   &v1beta1.DaemonSetScaleStrategy{},
		wantDropped: 1,
	}, {
		name: "a record whose restore value does not decode is ignored and counted",
		annotations: map[string]string{pcp: "true", V1beta1ConversionAnnotation: `{
			"spec.scaleStrategy":{"restore":"yes","guard":{}}}`},
		wantScale:   partitioned,
		wantDropped: 1,
	}, {
		name: "a record guarded on an unknown item is ignored and counted",
		annotations: map[string]string{pcp: "true", V1beta1ConversionAnnotation: `{
			"spec.scaleStrategy":{"restore":{},"guard":{"spec.unknown":1}}}`},
		wantScale:   partitioned,
		wantDropped: 1,
	}, {
		name:        "a record without a guard makes the annotation unparseable",
		annotations: map[string]string{pcp: "true", V1beta1ConversionAnnotation: `{"spec.scaleStrategy":{"restore":{}}}`},
		wantScale:   partitioned,
		wantDropped: 1,
	}, {
		name:        "a guard is compared as JSON, whatever its formatting",
		annotations: map[string]string{pcp: "true", V1beta1ConversionAnnotation: ` { "spec.scaleStrategy" : { "guard" : { "metadata.annotations[daemonset.kruise.io/progressive-create-pod]" : "true" } , "restore" : { } } } `},
		wantScale:   &v1beta1.DaemonSetScaleStrategy{},
	}, {
		name:        "the reserved annotation that v1beta1 objects carry is removed from a v1alpha1 one",
		annotations: map[string]string{pcp: "true", V1alpha1ConversionAnnotation: scaleRecord},
		wantScale:   partitioned,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scheme := newScheme(t)
			a := newAlphaDaemonSet(tt.annotations, nil)
			b := &v1beta1.DaemonSet{}
			drops := dropCounter{}
			if err := scheme.Convert(a, b, drops); err != nil {
				t.Fatalf("converting: %v", err)
			}
			if !apiequality.Semantic.DeepEqual(b.Spec.ScaleStrategy, tt.wantScale) {
				t.Errorf("scaleStrategy = %+v, want %+v", b.Spec.ScaleStrategy, tt.wantScale)
			}
			wantAnnotations(t, b.Annotations, map[string]string{pcp: "true"})
			wantRecords(t, b.Annotations, V1alpha1ConversionAnnotation, "")
			wantRecords(t, b.Annotations, V1beta1ConversionAnnotation, "")
			if drops["DaemonSet"] != tt.wantDropped {
				t.Errorf("dropped %v, want %d for DaemonSet", drops, tt.wantDropped)
			}
		})
	}
}

func TestDaemonSetMetadataUnchanged(t *testing.T) {
	b := newBetaDaemonSet(map[string]string{"a": "b"}, partitioned)
	b.ResourceVersion, b.CreationTimestamp = "12", metav1.Unix(1700000000, 0)
	b.Finalizers = []string{"f"}
	b.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n", UID: "u"}}
	a := down(t, b)
	got, want := a.ObjectMeta, b.ObjectMeta
	got.Annotations, want.Annotations = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("metadata other than annotations changed:\n%+v\nwant %+v", got, want)
	}
}

// Through the scheme, as the /convert endpoint and clients convert.
func TestDaemonSetSchemeConversion(t *testing.T) {
	scheme := newScheme(t)
	b := newBetaDaemonSet(nil, partitioned)
	a := &DaemonSet{}
	if err := scheme.Convert(b, a, nil); err != nil {
		t.Fatalf("converting: %v", err)
	}
	if a.Annotations[ProgressiveCreatePodAnnotation] != "true" || a.Status.DaemonSetHash != b.Status.UpdateRevision {
		t.Errorf("scheme conversion gave %s", toJSON(t, a))
	}
	back := &v1beta1.DaemonSet{}
	if err := scheme.Convert(a, back, nil); err != nil {
		t.Fatalf("converting back: %v", err)
	}
	if !apiequality.Semantic.DeepEqual(back, b) {
		t.Errorf("scheme round trip gave %s\nwant %s", toJSON(t, back), toJSON(t, b))
	}
}

func TestContainerRecreateRequestCarriersUp(t *testing.T) {
	snap := ContainerRecreateRequestSyncContainerStatusesKey
	unready := ContainerRecreateRequestUnreadyAcquiredKey
	at := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	grace := func(t time.Time) []metav1.Condition {
		return []metav1.Condition{{Type: "PreRecreateGrace", Status: metav1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(t), Reason: "PreRecreateGrace"}}
	}
	tests := []struct {
		name           string
		annotations    map[string]string
		wantSnapshot   []v1beta1.ContainerRecreateRequestSyncContainerStatus
		wantConditions []metav1.Condition
	}{{
		name: "a snapshot list",
		annotations: map[string]string{snap: `[{"name":"app","ready":true,"restartCount":2,"containerID":"containerd://0123"},` +
			`{"name":"side","ready":false,"restartCount":0}]`},
		wantSnapshot: []v1beta1.ContainerRecreateRequestSyncContainerStatus{
			{Name: "app", Ready: true, RestartCount: 2, ContainerID: "containerd://0123"}, {Name: "side"}},
	}, {
		name:        "an invalid snapshot list is left in the annotation",
		annotations: map[string]string{snap: `[{"name":1}]`},
	}, {
		name:        "a snapshot that is no JSON is left in the annotation",
		annotations: map[string]string{snap: `abc`},
	}, {
		name:        "an empty snapshot list",
		annotations: map[string]string{snap: `[]`},
	}, {
		name:           "an RFC 3339 time in UTC",
		annotations:    map[string]string{unready: "2024-05-01T10:00:00Z"},
		wantConditions: grace(at),
	}, {
		name:           "an RFC 3339 time in another zone",
		annotations:    map[string]string{unready: "2024-05-01T12:00:00+02:00"},
		wantConditions: grace(at),
	}, {
		name:        "a time that is not RFC 3339 is left in the annotation",
		annotations: map[string]string{unready: "2024-05-01 10:00:00"},
	}, {
		name:        "garbage is left in the annotation",
		annotations: map[string]string{unready: "garbage"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &ContainerRecreateRequest{ObjectMeta: metav1.ObjectMeta{Name: "crr", Namespace: "ns", Annotations: tt.annotations},
				Spec: ContainerRecreateRequestSpec{PodName: "pod"}, Status: ContainerRecreateRequestStatus{Phase: ContainerRecreateRequestRecreating}}
			b := &v1beta1.ContainerRecreateRequest{}
			ConvertContainerRecreateRequestToV1beta1(a, b)
			if !apiequality.Semantic.DeepEqual(b.Status.ContainerStatusSnapshot, tt.wantSnapshot) {
				t.Errorf("containerStatusSnapshot = %+v, want %+v", b.Status.ContainerStatusSnapshot, tt.wantSnapshot)
			}
			if !apiequality.Semantic.DeepEqual(b.Status.Conditions, tt.wantConditions) {
				t.Errorf("conditions = %s, want %s", toJSON(t, b.Status.Conditions), toJSON(t, tt.wantConditions))
			}
			wantAnnotations(t, b.Annotations, tt.annotations) // kept as they are
			wantRecords(t, b.Annotations, V1alpha1ConversionAnnotation, "")
			back := &ContainerRecreateRequest{}
			ConvertContainerRecreateRequestFromV1beta1(b, back)
			if !apiequality.Semantic.DeepEqual(back, a) {
				t.Errorf("down(up(a)) = %s\nwant %s", toJSON(t, back), toJSON(t, a))
			}
		})
	}
}

func TestContainerRecreateRequestCarriersDown(t *testing.T) {
	snap := ContainerRecreateRequestSyncContainerStatusesKey
	unready := ContainerRecreateRequestUnreadyAcquiredKey
	at := metav1.NewTime(time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC))
	graceCondition := metav1.Condition{Type: "PreRecreateGrace", Status: metav1.ConditionTrue, LastTransitionTime: at, Reason: "PreRecreateGrace"}
	snapshot := []v1beta1.ContainerRecreateRequestSyncContainerStatus{{Name: "app", Ready: true, RestartCount: 2, ContainerID: "containerd://0123"}}
	other := metav1.Condition{Type: "Other", Status: metav1.ConditionFalse, LastTransitionTime: at, Reason: "Why", Message: "because"}
	tests := []struct {
		name            string
		annotations     map[string]string
		snapshot        []v1beta1.ContainerRecreateRequestSyncContainerStatus
		conditions      []metav1.Condition
		wantAnnotations map[string]string
		wantRecords     string
	}{{
		name:       "snapshot and grace condition become the annotations, recorded as absent",
		snapshot:   snapshot,
		conditions: []metav1.Condition{graceCondition},
		wantAnnotations: map[string]string{
			snap:    `[{"name":"app","ready":true,"restartCount":2,"containerID":"containerd://0123"}]`,
			unready: "2024-05-01T10:00:00Z"},
		wantRecords: `{
			"metadata.annotations[crr.apps.kruise.io/sync-container-statuses]": {"restore": null,
				"guard": {"metadata.annotations[crr.apps.kruise.io/sync-container-statuses]":
					"[{\"name\":\"app\",\"ready\":true,\"restartCount\":2,\"containerID\":\"containerd://0123\"}]"}},
			"metadata.annotations[crr.apps.kruise.io/unready-acquired]": {"restore": null,
				"guard": {"metadata.annotations[crr.apps.kruise.io/unready-acquired]": "2024-05-01T10:00:00Z"}}}`,
	}, {
		name: "annotations that parse to the fields are kept verbatim",
		annotations: map[string]string{
			snap:    ` [ {"restartCount":2, "containerID":"containerd://0123", "name":"app", "ready":true} ] `,
			unready: "2024-05-01T12:00:00+02:00"},
		snapshot:   snapshot,
		conditions: []metav1.Condition{graceCondition},
		wantAnnotations: map[string]string{
			snap:    ` [ {"restartCount":2, "containerID":"containerd://0123", "name":"app", "ready":true} ] `,
			unready: "2024-05-01T12:00:00+02:00"},
	}, {
		name:            "a disagreeing snapshot annotation is overridden and recorded",
		annotations:     map[string]string{snap: `[{"name":"app","ready":false,"restartCount":1}]`},
		snapshot:        snapshot,
		wantAnnotations: map[string]string{snap: `[{"name":"app","ready":true,"restartCount":2,"containerID":"containerd://0123"}]`},
		wantRecords: `{"metadata.annotations[crr.apps.kruise.io/sync-container-statuses]": {
			"restore": "[{\"name\":\"app\",\"ready\":false,\"restartCount\":1}]",
			"guard": {"metadata.annotations[crr.apps.kruise.io/sync-container-statuses]":
				"[{\"name\":\"app\",\"ready\":true,\"restartCount\":2,\"containerID\":\"containerd://0123\"}]"}}}`,
	}, {
		name:            "a disagreeing time is overridden and recorded",
		annotations:     map[string]string{unready: "2023-01-01T00:00:00Z"},
		conditions:      []metav1.Condition{graceCondition},
		wantAnnotations: map[string]string{unready: "2024-05-01T10:00:00Z"},
		wantRecords: `{"metadata.annotations[crr.apps.kruise.io/unready-acquired]": {"restore": "2023-01-01T00:00:00Z",
			"guard": {"metadata.annotations[crr.apps.kruise.io/unready-acquired]": "2024-05-01T10:00:00Z"}}}`,
	}, {
		name:            "other conditions are recorded, guarded on the time",
		conditions:      []metav1.Condition{other, graceCondition},
		wantAnnotations: map[string]string{unready: "2024-05-01T10:00:00Z"},
		wantRecords: `{
			"metadata.annotations[crr.apps.kruise.io/unready-acquired]": {"restore": null,
				"guard": {"metadata.annotations[crr.apps.kruise.io/unready-acquired]": "2024-05-01T10:00:00Z"}},
			"status.conditions": {"restore": [
				{"type":"Other","status":"False","lastTransitionTime":"2024-05-01T10:00:00Z","reason":"Why","message":"because"},
				{"type":"PreRecreateGrace","status":"True","lastTransitionTime":"2024-05-01T10:00:00Z","reason":"PreRecreateGrace","message":""}],
				"guard": {"metadata.annotations[crr.apps.kruise.io/unready-acquired]": "2024-05-01T10:00:00Z"}}}`,
	}, {
		name: "grace condition details are recorded",
		conditions: []metav1.Condition{{Type: "PreRecreateGrace", Status: metav1.ConditionTrue, LastTransitionTime: at,
			Reason: "PreRecreateGrace", Message: "pod not ready", ObservedGeneration: 3}},
		wantAnnotations: map[string]string{unready: "2024-05-01T10:00:00Z"},
		wantRecords: `{
			"metadata.annotations[crr.apps.kruise.io/unready-acquired]": {"restore": null,
				"guard": {"metadata.annotations[crr.apps.kruise.io/unready-acquired]": "2024-05-01T10:00:00Z"}},
			"status.conditions": {"restore": [
				{"type":"PreRecreateGrace","status":"True","observedGeneration":3,"lastTransitionTime":"2024-05-01T10:00:00Z","reason":"PreRecreateGrace","message":"pod not ready"}],
				"guard": {"metadata.annotations[crr.apps.kruise.io/unready-acquired]": "2024-05-01T10:00:00Z"}}}`,
	}, {
		name:       "a grace condition that is not True carries nothing and is recorded",
		conditions: []metav1.Condition{{Type: "PreRecreateGrace", Status: metav1.ConditionFalse, LastTransitionTime: at, Reason: "PreRecreateGrace"}},
		wantRecords: `{"status.conditions": {"restore": [
			{"type":"PreRecreateGrace","status":"False","lastTransitionTime":"2024-05-01T10:00:00Z","reason":"PreRecreateGrace","message":""}],
			"guard": {"metadata.annotations[crr.apps.kruise.io/unready-acquired]": null}}}`,
	}, {
		name:            "carriers without fields that would set them are recorded",
		annotations:     map[string]string{snap: `[{"name":"app"}]`, unready: "2024-05-01T10:00:00Z"},
		wantAnnotations: map[string]string{snap: `[{"name":"app"}]`, unready: "2024-05-01T10:00:00Z"},
		wantRecords: `{
			"status.containerStatusSnapshot": {"restore": null, "guard": {"metadata.annotations[crr.apps.kruise.io/sync-container-statuses]": "[{\"name\":\"app\"}]"}},
			"status.conditions": {"restore": null, "guard": {"metadata.annotations[crr.apps.kruise.io/unready-acquired]": "2024-05-01T10:00:00Z"}}}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &v1beta1.ContainerRecreateRequest{
				ObjectMeta: metav1.ObjectMeta{Name: "crr", Namespace: "ns", Annotations: tt.annotations},
				Spec:       v1beta1.ContainerRecreateRequestSpec{PodName: "pod"},
				Status: v1beta1.ContainerRecreateRequestStatus{Phase: v1beta1.ContainerRecreateRequestRecreating,
					ContainerStatusSnapshot: tt.snapshot, Conditions: tt.conditions},
			}
			a := &ContainerRecreateRequest{}
			ConvertContainerRecreateRequestFromV1beta1(b, a)
			if tt.wantAnnotations == nil {
				tt.wantAnnotations = map[string]string{}
			}
			wantAnnotations(t, a.Annotations, tt.wantAnnotations)
			wantRecords(t, a.Annotations, V1beta1ConversionAnnotation, tt.wantRecords)
			back := &v1beta1.ContainerRecreateRequest{}
			ConvertContainerRecreateRequestToV1beta1(a, back)
			if !apiequality.Semantic.DeepEqual(back, b) {
				t.Errorf("up(down(b)) = %s\nwant %s", toJSON(t, back), toJSON(t, b))
			}
		})
	}
}

func TestContainerRecreateRequestAlphaWriterWins(t *testing.T) {
	unready := ContainerRecreateRequestUnreadyAcquiredKey
	at := metav1.NewTime(time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC))
	b := &v1beta1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "crr", Namespace: "ns"},
		Status: v1beta1.ContainerRecreateRequestStatus{Conditions: []metav1.Condition{
			{Type: "Other", Status: metav1.ConditionTrue, LastTransitionTime: at, Reason: "Why"},
			{Type: "PreRecreateGrace", Status: metav1.ConditionTrue, LastTransitionTime: at, Reason: "PreRecreateGrace"}}},
	}
	a := &ContainerRecreateRequest{}
	ConvertContainerRecreateRequestFromV1beta1(b, a)

	// A v1alpha1 client moves the time: its annotation decides the conditions.
	a.Annotations[unready] = "2024-06-01T00:00:00Z"
	back := &v1beta1.ContainerRecreateRequest{}
	ConvertContainerRecreateRequestToV1beta1(a, back)
	want := []metav1.Condition{{Type: "PreRecreateGrace", Status: metav1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)), Reason: "PreRecreateGrace"}}
	if !apiequality.Semantic.DeepEqual(back.Status.Conditions, want) {
		t.Errorf("conditions = %s, want the v1alpha1 client's %s", toJSON(t, back.Status.Conditions), toJSON(t, want))
	}
	wantAnnotations(t, back.Annotations, map[string]string{unready: "2024-06-01T00:00:00Z"})
	wantRecords(t, back.Annotations, V1alpha1ConversionAnnotation, "")

	// A v1alpha1 label change keeps the whole status.
	a = &ContainerRecreateRequest{}
	ConvertContainerRecreateRequestFromV1beta1(b, a)
	a.Labels = map[string]string{"changed": "yes"}
	back = &v1beta1.ContainerRecreateRequest{}
	ConvertContainerRecreateRequestToV1beta1(a, back)
	if !apiequality.Semantic.DeepEqual(back.Status, b.Status) || len(withoutReserved(back.Annotations)) != 0 {
		t.Errorf("after a label change: %s, want status %s and no annotations", toJSON(t, back), toJSON(t, b.Status))
	}
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encoding %T: %v", v, err)
	}
	return string(data)
}

func ptrTo[T any](v T) *T { return &v }

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}
