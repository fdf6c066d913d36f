package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/bosun-dev/api/policy/v1beta1"
)

// These tests walk the mapping of each carried PodUnavailableBudget field, row by row and in
// both directions: what the converted object holds, which records the reserved annotation
// gets, that the conversion back restores the source, and that a client of the other
// version changing a carrier in between wins over a record.

const (
	opsKey   = PubProtectOperationAnnotation
	totalKey = PubProtectTotalReplicasAnnotation
)

func newAlphaBudget(annotations map[string]string) *PodUnavailableBudget {
	maxUnavailable := intstr.FromString("25%")
	return &PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "pub-uid", Generation: 2,
			Labels: map[string]string{"team": "web"}, Annotations: annotations},
		Spec: PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			MaxUnavailable: &maxUnavailable,
		},
		Status: PodUnavailableBudgetStatus{ObservedGeneration: 2, UnavailableAllowed: 1, TotalReplicas: 4},
	}
}

func newBetaBudget(annotations map[string]string, ops []v1beta1.PubOperation, total *int32, ignored *metav1.LabelSelector) *v1beta1.PodUnavailableBudget {
	maxUnavailable := intstr.FromString("25%")
	return &v1beta1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "pub-uid", Generation: 2,
			Labels: map[string]string{"team": "web"}, Annotations: annotations},
		Spec: v1beta1.PodUnavailableBudgetSpec{
			Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			MaxUnavailable:       &maxUnavailable,
			ProtectOperations:    ops,
			ProtectTotalReplicas: total,
			IgnoredPodSelector:   ignored,
		},
		Status: v1beta1.PodUnavailableBudgetStatus{ObservedGeneration: 2, UnavailableAllowed: 1, TotalReplicas: 4},
	}
}

func up(t *testing.T, in *PodUnavailableBudget) *v1beta1.PodUnavailableBudget {
	t.Helper()
	before := in.DeepCopy()
	out := &v1beta1.PodUnavailableBudget{}
	ConvertPodUnavailableBudgetToV1beta1(in, out)
	if !reflect.DeepEqual(in, before) {
		t.Fatalf("converting modified its input")
	}
	return out
}

func down(t *testing.T, in *v1beta1.PodUnavailableBudget) *PodUnavailableBudget {
	t.Helper()
	before := in.DeepCopy()
	out := &PodUnavailableBudget{}
	ConvertPodUnavailableBudgetFromV1beta1(in, out)
	if !reflect.DeepEqual(in, before) {
		t.Fatalf("converting modified its input")
	}
	return out
}

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
	case want != "" && !reflect.DeepEqual(decodeJSON(t, got), decodeJSON(t, want)):
		t.Errorf("reserved annotation %s = %s, want %s", key, got, want)
	}
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

func wantAnnotations(t *testing.T, got, want map[string]string) {
	t.Helper()
	without := map[string]string{}
	for k, v := range got {
		if k != V1alpha1ConversionAnnotation && k != V1beta1ConversionAnnotation {
			without[k] = v
		}
	}
	if want == nil {
		want = map[string]string{}
	}
	if !reflect.DeepEqual(without, want) {
		t.Errorf("annotations = %v, want %v (reserved ones left out)", without, want)
	}
}

func TestPodUnavailableBudgetCarriersUp(t *testing.T) {
	tests := []struct {
		annotations map[string]string
		wantOps     []v1beta1.PubOperation
		wantTotal   *int32
	}{
		{annotations: map[string]string{opsKey: "DELETE,EVICT"}, wantOps: []v1beta1.PubOperation{"DELETE", "EVICT"}},
		{annotations: map[string]string{opsKey: "EVICT"}, wantOps: []v1beta1.PubOperation{"EVICT"}},
		{annotations: map[string]string{opsKey: "RESIZE,UPDATE,DELETE"}, wantOps: []v1beta1.PubOperation{"RESIZE", "UPDATE", "DELETE"}},
		// Split exactly, nothing trimmed, so that joining gives the annotation back; a part
		// the v1beta1 field cannot hold leaves the field unset (the annotation stays, and
		// controllers read it trimmed).
		{annotations: map[string]string{opsKey: "DELETE,,EVICT"}},
		{annotations: map[string]string{opsKey: "DELETE, EVICT"}},
		{annotations: map[string]string{opsKey: ","}},
		{annotations: map[string]string{opsKey: "nonsense"}},
		{annotations: map[string]string{opsKey: "delete"}},
		{annotations: map[string]string{opsKey: ""}},
		{annotations: map[string]string{totalKey: "3"}, wantTotal: ptrTo[int32](3)},
		{annotations: map[string]string{totalKey: "03"}, wantTotal: ptrTo[int32](3)},
		{annotations: map[string]string{totalKey: "+3"}, wantTotal: ptrTo[int32](3)},
		// Below the field's minimum of 1: "no override", left to the annotation.
		{annotations: map[string]string{totalKey: "1"}, wantTotal: ptrTo[int32](1)},
		{annotations: map[string]string{totalKey: "0"}},
		{annotations: map[string]string{totalKey: "-1"}},
		{annotations: map[string]string{totalKey: "2147483647"}, wantTotal: ptrTo[int32](2147483647)},
		{annotations: map[string]string{totalKey: "2147483648"}},
		{annotations: map[string]string{totalKey: " 3"}},
		{annotations: map[string]string{totalKey: "abc"}},
		{annotations: map[string]string{totalKey: "3.0"}},
		{annotations: map[string]string{totalKey: ""}},
		{annotations: map[string]string{opsKey: "UPDATE", totalKey: "7", "other": "x"},
			wantOps: []v1beta1.PubOperation{"UPDATE"}, wantTotal: ptrTo[int32](7)},
		{annotations: nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.annotations), func(t *testing.T) {
			a := newAlphaBudget(tt.annotations)
			b := up(t, a)
			if !reflect.DeepEqual(b.Spec.ProtectOperations, tt.wantOps) {
				t.Errorf("protectOperations = %q, want %q", b.Spec.ProtectOperations, tt.wantOps)
			}
			if !reflect.DeepEqual(b.Spec.ProtectTotalReplicas, tt.wantTotal) {
				t.Errorf("protectTotalReplicas = %v, want %v", deref(b.Spec.ProtectTotalReplicas), deref(tt.wantTotal))
			}
			if b.Spec.IgnoredPodSelector != nil {
				t.Errorf("ignoredPodSelector = %v, want none", b.Spec.IgnoredPodSelector)
			}
			wantAnnotations(t, b.Annotations, tt.annotations) // kept as they are
			wantRecords(t, b.Annotations, V1alpha1ConversionAnnotation, "")
			if back := down(t, b); !apiequality.Semantic.DeepEqual(back, a) {
				t.Errorf("down(up(a)) = %+v\nwant %+v", back, a)
			}
		})
	}
}

func TestPodUnavailableBudgetCarriersDown(t *testing.T) {
	ops := func(o ...v1beta1.PubOperation) []v1beta1.PubOperation { return o }
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
	tests := []struct {
		name            string
		annotations     map[string]string
		ops             []v1beta1.PubOperation
		total           *int32
		ignored         *metav1.LabelSelector
		wantAnnotations map[string]string
		wantRecords     string
	}{{
		name:            "fields become annotations, recorded as absent; the selector is recorded",
		ops:             ops("EVICT"),
		total:           ptrTo[int32](3),
		ignored:         selector,
		wantAnnotations: map[string]string{opsKey: "EVICT", totalKey: "3"},
		wantRecords: `{
			"metadata.annotations[kruise.io/pub-protect-operations]": {"restore": null, "guard": {"metadata.annotations[kruise.io/pub-protect-operations]": "EVICT"}},
			"metadata.annotations[pub.kruise.io/protect-total-replicas]": {"restore": null, "guard": {"metadata.annotations[pub.kruise.io/protect-total-replicas]": "3"}},
			"spec.ignoredPodSelector": {"restore": {"matchLabels": {"canary": "true"}}, "guard": {}}}`,
	}, {
		name:            "operations are joined with commas",
		annotations:     map[string]string{opsKey: "DELETE,UPDATE"},
		ops:             ops("DELETE", "UPDATE"),
		wantAnnotations: map[string]string{opsKey: "DELETE,UPDATE"},
	}, {
		name:            "an operation holding a comma is recorded",
		annotations:     map[string]string{opsKey: "DELETE,EVICT"},
		ops:             ops("DELETE,EVICT"),
		wantAnnotations: map[string]string{opsKey: "DELETE,EVICT"},
		wantRecords: `{"spec.protectOperations": {"restore": ["DELETE,EVICT"],
			"guard": {"metadata.annotations[kruise.io/pub-protect-operations]": "DELETE,EVICT"}}}`,
	}, {
		name:            "a single empty operation is recorded",
		ops:             ops(""),
		wantAnnotations: map[string]string{opsKey: ""},
		wantRecords: `{
			"metadata.annotations[kruise.io/pub-protect-operations]": {"restore": null, "guard": {"metadata.annotations[kruise.io/pub-protect-operations]": ""}},
			"spec.protectOperations": {"restore": [""], "guard": {"metadata.annotations[kruise.io/pub-protect-operations]": ""}}}`,
	}, {
		name:            "operations override a disagreeing annotation, which is recorded",
		annotations:     map[string]string{opsKey: "DELETE"},
		ops:             ops("EVICT", "RESIZE"),
		wantAnnotations: map[string]string{opsKey: "EVICT,RESIZE"},
		wantRecords: `{"metadata.annotations[kruise.io/pub-protect-operations]": {"restore": "DELETE",
			"guard": {"metadata.annotations[kruise.io/pub-protect-operations]": "EVICT,RESIZE"}}}`,
	}, {
		name:            "no operations beside an annotation that would set them are recorded",
		annotations:     map[string]string{opsKey: "DELETE"},
		wantAnnotations: map[string]string{opsKey: "DELETE"},
		wantRecords: `{"spec.protectOperations": {"restore": null,
			"guard": {"metadata.annotations[kruise.io/pub-protect-operations]": "DELETE"}}}`,
	}, {
		name:            "a total that parses to the field is kept verbatim",
		annotations:     map[string]string{totalKey: "03"},
		total:           ptrTo[int32](3),
		wantAnnotations: map[string]string{totalKey: "03"},
	}, {
		name:            "a total overrides a disagreeing annotation, which is recorded",
		annotations:     map[string]string{totalKey: "5"},
		total:           ptrTo[int32](3),
		wantAnnotations: map[string]string{totalKey: "3"},
		wantRecords: `{"metadata.annotations[pub.kruise.io/protect-total-replicas]": {"restore": "5",
			"guard": {"metadata.annotations[pub.kruise.io/protect-total-replicas]": "3"}}}`,
	}, {
		name:            "a total overrides an annotation that does not parse, which is recorded",
		annotations:     map[string]string{totalKey: "abc"},
		total:           ptrTo[int32](-4),
		wantAnnotations: map[string]string{totalKey: "-4"},
		// -4 is below the field's minimum, so the annotation written for it would not set
		// the field again: both are recorded.
		wantRecords: `{"metadata.annotations[pub.kruise.io/protect-total-replicas]": {"restore": "abc",
			"guard": {"metadata.annotations[pub.kruise.io/protect-total-replicas]": "-4"}},
			"spec.protectTotalReplicas": {"restore": -4,
			"guard": {"metadata.annotations[pub.kruise.io/protect-total-replicas]": "-4"}}}`,
	}, {
		name:            "no total beside an annotation that would set it is recorded",
		annotations:     map[string]string{totalKey: "7"},
		wantAnnotations: map[string]string{totalKey: "7"},
		wantRecords: `{"spec.protectTotalReplicas": {"restore": null,
			"guard": {"metadata.annotations[pub.kruise.io/protect-total-replicas]": "7"}}}`,
	}, {
		name:            "no total beside an annotation that does not parse needs no record",
		annotations:     map[string]string{totalKey: "abc"},
		wantAnnotations: map[string]string{totalKey: "abc"},
	}, {
		name: "nothing to carry",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBetaBudget(tt.annotations, tt.ops, tt.total, tt.ignored)
			a := down(t, b)
			wantAnnotations(t, a.Annotations, tt.wantAnnotations)
			wantRecords(t, a.Annotations, V1beta1ConversionAnnotation, tt.wantRecords)
			if back := up(t, a); !apiequality.Semantic.DeepEqual(back, b) {
				t.Errorf("up(down(b)) = %+v\nwant %+v", back, b)
			}
		})
	}
}

func TestPodUnavailableBudgetAlphaWriters(t *testing.T) {
	selector := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "canary", Operator: metav1.LabelSelectorOpExists}}}
	b := newBetaBudget(nil, []v1beta1.PubOperation{"EVICT"}, ptrTo[int32](3), selector)

	t.Run("an update of other fields keeps the selector, operations and total", func(t *testing.T) {
		a := down(t, b)
		wantAnnotations(t, a.Annotations, map[string]string{opsKey: "EVICT", totalKey: "3"})
		maxUnavailable := intstr.FromInt32(2)
		a.Spec.MaxUnavailable = &maxUnavailable
		got := up(t, a)
		want := b.DeepCopy()
		want.Spec.MaxUnavailable = &maxUnavailable
		if !apiequality.Semantic.DeepEqual(got, want) {
			t.Errorf("after a v1alpha1 update: %+v\nwant %+v", got, want)
		}
	})

	t.Run("changed annotations win; the selector stays", func(t *testing.T) {
		a := down(t, b)
		a.Annotations[opsKey] = "DELETE,UPDATE"
		a.Annotations[totalKey] = "9"
		got := up(t, a)
		if want := []v1beta1.PubOperation{"DELETE", "UPDATE"}; !reflect.DeepEqual(got.Spec.ProtectOperations, want) {
			t.Errorf("protectOperations = %q, want the v1alpha1 client's %q", got.Spec.ProtectOperations, want)
		}
		if got.Spec.ProtectTotalReplicas == nil || *got.Spec.ProtectTotalReplicas != 9 {
			t.Errorf("protectTotalReplicas = %v, want the v1alpha1 client's 9", deref(got.Spec.ProtectTotalReplicas))
		}
		if !apiequality.Semantic.DeepEqual(got.Spec.IgnoredPodSelector, selector) {
			t.Errorf("ignoredPodSelector = %v, want %v", got.Spec.IgnoredPodSelector, selector)
		}
		// The annotations a v1alpha1 client wrote stay: OpenKruise keeps them too.
		wantAnnotations(t, got.Annotations, map[string]string{opsKey: "DELETE,UPDATE", totalKey: "9"})
		wantRecords(t, got.Annotations, V1alpha1ConversionAnnotation, "")
	})

	t.Run("removed annotations win", func(t *testing.T) {
		a := down(t, b)
		delete(a.Annotations, opsKey)
		delete(a.Annotations, totalKey)
		got := up(t, a)
		if got.Spec.ProtectOperations != nil || got.Spec.ProtectTotalReplicas != nil {
			t.Errorf("protectOperations = %q, protectTotalReplicas = %v, want both unset",
				got.Spec.ProtectOperations, deref(got.Spec.ProtectTotalReplicas))
		}
		wantAnnotations(t, got.Annotations, nil)
	})

	t.Run("a restored carrier that a v1alpha1 client changed stays changed", func(t *testing.T) {
		stale := newBetaBudget(map[string]string{totalKey: "5"}, nil, ptrTo[int32](3), nil)
		a := down(t, stale)
		a.Annotations[totalKey] = "4"
		got := up(t, a)
		if got.Spec.ProtectTotalReplicas == nil || *got.Spec.ProtectTotalReplicas != 4 {
			t.Errorf("protectTotalReplicas = %v, want 4", deref(got.Spec.ProtectTotalReplicas))
		}
		wantAnnotations(t, got.Annotations, map[string]string{totalKey: "4"})
	})
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

func TestPodUnavailableBudgetAnnotationSizeLimit(t *testing.T) {
	// A selector whose record cannot fit beside the annotations: left out and counted, the
	// other records written, and the annotations stay within the API server's limit.
	const limit = 256 * 1024
	values := make([]string, 0, 5000)
	for i := 0; i < 5000; i++ {
		values = append(values, fmt.Sprintf("value-%060d", i))
	}
	selector := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "huge", Operator: metav1.LabelSelectorOpIn, Values: values}}}
	b := newBetaBudget(nil, []v1beta1.PubOperation{"EVICT"}, nil, selector)

	a := &PodUnavailableBudget{}
	drops := dropCounter{}
	if err := newScheme(t).Convert(b, a, drops); err != nil {
		t.Fatalf("converting: %v", err)
	}
	if drops["PodUnavailableBudget"] != 1 {
		t.Errorf("dropped %v, want 1 for PodUnavailableBudget", drops)
	}
	wantRecords(t, a.Annotations, V1beta1ConversionAnnotation, `{
		"metadata.annotations[kruise.io/pub-protect-operations]": {"restore": null, "guard": {"metadata.annotations[kruise.io/pub-protect-operations]": "EVICT"}}}`)
	size := 0
	for k, v := range a.Annotations {
		size += len(k) + len(v)
	}
	if size > limit {
		t.Errorf("annotations take %d bytes, more than the %d the API server accepts", size, limit)
	}

	// The same selector fits when it is a little smaller.
	b.Spec.IgnoredPodSelector.MatchExpressions[0].Values = values[:3000]
	a = down(t, b)
	if back := up(t, a); !apiequality.Semantic.DeepEqual(back, b) {
		t.Errorf("a selector that fits did not come back")
	}
}

func TestPodUnavailableBudgetReservedAnnotations(t *testing.T) {
	t.Run("an unparseable annotation is ignored, removed and counted", func(t *testing.T) {
		a := newAlphaBudget(map[string]string{opsKey: "EVICT", V1beta1ConversionAnnotation: "garbage"})
		b := &v1beta1.PodUnavailableBudget{}
		drops := dropCounter{}
		if err := newScheme(t).Convert(a, b, drops); err != nil {
			t.Fatalf("converting: %v", err)
		}
		if want := []v1beta1.PubOperation{"EVICT"}; !reflect.DeepEqual(b.Spec.ProtectOperations, want) {
			t.Errorf("protectOperations = %q, want %q", b.Spec.ProtectOperations, want)
		}
		wantAnnotations(t, b.Annotations, map[string]string{opsKey: "EVICT"})
		wantRecords(t, b.Annotations, V1beta1ConversionAnnotation, "")
		wantRecords(t, b.Annotations, V1alpha1ConversionAnnotation, "")
		if drops["PodUnavailableBudget"] != 1 {
			t.Errorf("dropped %v, want 1 for PodUnavailableBudget", drops)
		}
	})

	t.Run("a v1beta1 object's stale record is consumed on the way down", func(t *testing.T) {
		// v1alpha1-only content recorded on a v1beta1 object: restored when its guard holds.
		b := newBetaBudget(map[string]string{opsKey: "EVICT", V1alpha1ConversionAnnotation: `{
			"metadata.annotations[pub.kruise.io/protect-total-replicas]": {"restore": "x", "guard": {"spec.protectTotalReplicas": null}}}`},
			nil, nil, nil)
		a := down(t, b)
		wantAnnotations(t, a.Annotations, map[string]string{opsKey: "EVICT", totalKey: "x"})
		wantRecords(t, a.Annotations, V1alpha1ConversionAnnotation, "")
	})
}

func TestPodUnavailableBudgetMetadataUnchanged(t *testing.T) {
	b := newBetaBudget(map[string]string{"a": "b"}, []v1beta1.PubOperation{"DELETE"}, ptrTo[int32](2), &metav1.LabelSelector{})
	b.ResourceVersion, b.CreationTimestamp, b.Finalizers = "12", metav1.Unix(1700000000, 0), []string{"f"}
	a := down(t, b)
	got, want := a.ObjectMeta, b.ObjectMeta
	got.Annotations, want.Annotations = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("metadata other than annotations changed:\n%+v\nwant %+v", got, want)
	}
}

func ptrTo[T any](v T) *T { return &v }

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
