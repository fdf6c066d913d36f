package lossless

import (
	"reflect"
	"strings"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A toy kind: the spoke carries the hub's note in an annotation, and the hub has two
// fields the spoke lacks.
type spoke struct {
	metav1.ObjectMeta
	Size int
}

type hub struct {
	metav1.ObjectMeta
	Size  int
	Note  *string
	Extra string
	Count int64
}

const noteKey = "example.com/note"

func toyKind() *Kind[spoke, hub] {
	spokeMeta := func(o *spoke) *metav1.ObjectMeta { return &o.ObjectMeta }
	hubMeta := func(o *hub) *metav1.ObjectMeta { return &o.ObjectMeta }
	return &Kind[spoke, hub]{
		A: Version[spoke]{Name: "v1alpha1", Meta: spokeMeta, Items: []Item[spoke]{
			Annotation(noteKey, spokeMeta, AnnotationPath(noteKey), "note"),
		}},
		B: Version[hub]{Name: "v1beta1", Meta: hubMeta, Items: []Item[hub]{
			Annotation(noteKey, hubMeta, AnnotationPath(noteKey)),
			Field("note", func(o *hub) **string { return &o.Note }, AnnotationPath(noteKey)),
			Field("big", func(o *hub) *string { return &o.Extra }),
			Field("count", func(o *hub) *int64 { return &o.Count }),
		}},
		Up: Mapping[spoke, hub]{
			Copy: func(in *spoke, out *hub) { out.ObjectMeta, out.Size = in.ObjectMeta, in.Size },
			Carry: func(in *spoke, out *hub) {
				out.Note = nil
				if v, ok := in.Annotations[noteKey]; ok {
					out.Note = &v
				}
			},
		},
		Down: Mapping[hub, spoke]{
			Copy: func(in *hub, out *spoke) { out.ObjectMeta, out.Size = in.ObjectMeta, in.Size },
			Carry: func(in *hub, out *spoke) {
				if in.Note != nil {
					if out.Annotations == nil {
						out.Annotations = map[string]string{}
					}
					out.Annotations[noteKey] = *in.Note
				}
			},
		},
	}
}

func TestRecordsLeftOutForSizeSmallestFirst(t *testing.T) {
	k := toyKind()
	// Room for 350 bytes of records: either the big one (331 bytes) or the small one
	// (32 bytes), not both. The small one is kept, so that as many records as possible are.
	reserved := ReservedAnnotation("v1beta1")
	filler := strings.Repeat("x", MaxAnnotationsSize-350-len("filler")-len(reserved)-len("{}"))
	in := &hub{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"filler": filler}},
		Extra: strings.Repeat("e", 300), Count: 7}
	var out spoke
	if dropped := k.ConvertDown(in, &out); dropped != 1 {
		t.Errorf("dropped %d records, want 1", dropped)
	}
	if got, want := out.Annotations[reserved], `{"count":{"restore":7,"guard":{}}}`; got != want {
		t.Errorf("reserved annotation = %s, want %s", got, want)
	}
	size := 0
	for k, v := range out.Annotations {
		size += len(k) + len(v)
	}
	if size > MaxAnnotationsSize {
		t.Errorf("annotations take %d bytes, more than %d", size, MaxAnnotationsSize)
	}

	// With room for both, both are written, in path order.
	in.Annotations = nil
	out = spoke{}
	if dropped := k.ConvertDown(in, &out); dropped != 0 {
		t.Errorf("dropped %d records, want none", dropped)
	}
	want := `{"big":{"restore":"` + strings.Repeat("e", 300) + `","guard":{}},"count":{"restore":7,"guard":{}}}`
	if got := out.Annotations[reserved]; got != want {
		t.Errorf("reserved annotation = %s, want %s", got, want)
	}
}

func TestRecordKeysBeyondRestoreAndGuardAreIgnored(t *testing.T) {
	k := toyKind()
	in := &spoke{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		ReservedAnnotation("v1beta1"): `{"big":{"restore":"kept","guard":{},"since":"v2"}}`}}}
	var out hub
	if dropped := k.ConvertUp(in, &out); dropped != 0 {
		t.Errorf("dropped %d records, want none", dropped)
	}
	if out.Extra != "kept" {
		t.Errorf("extra = %q, want the restored %q", out.Extra, "kept")
	}
	if len(out.Annotations) != 0 {
		t.Errorf("annotations = %v, want none", out.Annotations)
	}
}

func TestGuardsCompareJSONValues(t *testing.T) {
	for _, tt := range []struct {
		guard string
		holds bool
	}{
		{`"a b"`, true},
		{` "a b" `, true},
		{`"a\u0020b"`, true},
		{`"a  b"`, false},
		{`null`, false},
		{`1`, false},
	} {
		k := toyKind()
		in := &spoke{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
			noteKey:                       "a b",
			ReservedAnnotation("v1beta1"): `{"big":{"restore":"restored","guard":{"metadata.annotations[example.com/note]":` + tt.guard + `}}}`,
		}}}
		var out hub
		k.ConvertUp(in, &out)
		if got := out.Extra == "restored"; got != tt.holds {
			t.Errorf("guard %s on %q: restored = %v, want %v", tt.guard, "a b", got, tt.holds)
		}
	}
}

func TestNumbersCompareByTheirText(t *testing.T) {
	if !sameJSON([]byte(`9007199254740993`), []byte(`9007199254740993`)) {
		t.Errorf("equal large numbers compare unequal")
	}
	if sameJSON([]byte(`9007199254740993`), []byte(`9007199254740992`)) {
		t.Errorf("numbers beyond float64 precision compare equal")
	}
	if sameJSON([]byte(`{"a":1}`), []byte(`{"a":1} x`)) {
		t.Errorf("a document with trailing data compares equal")
	}
}

// A toy kind whose hub field "flag" is a label on the spoke: the label is kept on the way
// up, and a record restores it on the way down.
type labelledSpoke struct {
	metav1.ObjectMeta
}

type labelledHub struct {
	metav1.ObjectMeta
	Flag bool
}

const flagKey = "example.com/flag"

func labelledKind() *Kind[labelledSpoke, labelledHub] {
	spokeMeta := func(o *labelledSpoke) *metav1.ObjectMeta { return &o.ObjectMeta }
	hubMeta := func(o *labelledHub) *metav1.ObjectMeta { return &o.ObjectMeta }
	return &Kind[labelledSpoke, labelledHub]{
		A: Version[labelledSpoke]{Name: "v1alpha1", Meta: spokeMeta, Items: []Item[labelledSpoke]{
			Label(flagKey, spokeMeta, LabelPath(flagKey), "flag"),
		}},
		B: Version[labelledHub]{Name: "v1beta1", Meta: hubMeta, Items: []Item[labelledHub]{
			Label(flagKey, hubMeta, LabelPath(flagKey)),
			Field("flag", func(o *labelledHub) *bool { return &o.Flag }, LabelPath(flagKey)),
		}},
		Up: Mapping[labelledSpoke, labelledHub]{
			Copy:  func(in *labelledSpoke, out *labelledHub) { out.ObjectMeta = in.ObjectMeta },
			Carry: func(in *labelledSpoke, out *labelledHub) { out.Flag = in.Labels[flagKey] == "true" },
		},
		Down: Mapping[labelledHub, labelledSpoke]{
			Copy: func(in *labelledHub, out *labelledSpoke) { out.ObjectMeta = in.ObjectMeta },
			Carry: func(in *labelledHub, out *labelledSpoke) {
				if in.Flag && in.Labels[flagKey] != "true" {
					labels := map[string]string{flagKey: "true"}
					for k, v := range in.Labels {
						if k != flagKey {
							labels[k] = v
						}
					}
					out.Labels = labels
				}
			},
		},
	}
}

func TestLabelItems(t *testing.T) {
	for _, tt := range []struct {
		name   string
		labels map[string]string
	}{
		{"no labels", nil},
		{"other labels", map[string]string{"app": "web"}},
		{"a disagreeing label", map[string]string{"app": "web", flagKey: "yes"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := labelledKind()
			in := &labelledHub{ObjectMeta: metav1.ObjectMeta{Labels: tt.labels}, Flag: true}
			var down labelledSpoke
			if dropped := k.ConvertDown(in, &down); dropped != 0 {
				t.Fatalf("dropped %d records, want none", dropped)
			}
			if down.Labels[flagKey] != "true" {
				t.Errorf("labels = %v, want the flag carried as %s=true", down.Labels, flagKey)
			}
			if _, ok := down.Annotations[ReservedAnnotation("v1beta1")]; !ok {
				t.Fatalf("no record of the label: annotations %v", down.Annotations)
			}
			// The converted object shares nothing the restore changes with its source.
			before := down.ObjectMeta.DeepCopy()
			var back labelledHub
			if dropped := k.ConvertUp(&down, &back); dropped != 0 {
				t.Errorf("dropped %d records, want none", dropped)
			}
			if !reflect.DeepEqual(&down.ObjectMeta, before) {
				t.Errorf("restoring a label modified the source's labels: %v, was %v", down.Labels, before.Labels)
			}
			if !back.Flag || len(back.Annotations) != 0 || !apiequality.Semantic.DeepEqual(back.Labels, tt.labels) {
				t.Errorf("round trip gave flag %v, labels %v, annotations %v; want true, %v, none",
					back.Flag, back.Labels, back.Annotations, tt.labels)
			}
			if len(tt.labels) == 0 && back.Labels != nil {
				t.Errorf("restoring the absent label left the empty map %v, want nil", back.Labels)
			}
		})
	}
}
