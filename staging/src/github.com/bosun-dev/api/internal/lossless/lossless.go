// Package lossless makes the conversion of a kind between two API versions lossless.
//
// A plain mapping converts the fields the two versions share and moves a carried field
// between its annotation or label form (the older version's "carrier") and its field form.
// Some objects cannot come back unchanged through the plain mappings of both directions: a
// field the other version lacks, a carrier that disagrees with its field, a value the other
// version rewrites. For those the conversion records, in a reserved annotation on the
// converted object, each item the reverse plain mapping would not reproduce: its value in
// the source ("restore") and the values of the items it was derived from ("guard"). The
// reverse conversion applies its plain mapping, then restores every item whose guard still
// holds. A failed guard means a client of the other version changed what the item is
// derived from, and that change wins.
//
// The reserved annotation on an object of version V is "conversion.bosun.dev/<W>", where W
// is the version its records restore. Its value is a compact JSON object mapping an item
// path to {"restore": <JSON or null for absent>, "guard": {<item path>: <JSON>, ...}}.
package lossless

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnotationPrefix starts the key of every reserved annotation; the version whose items
// its records restore follows it.
const AnnotationPrefix = "conversion.bosun.dev/"

// MaxAnnotationsSize is the API server's limit on the total size of an object's
// annotations, keys plus values. A record that would push the converted object beyond it
// is left out: the only loss the conversion allows.
const MaxAnnotationsSize = 256 * 1024

// ReservedAnnotation returns the key of the annotation whose records restore items of the
// given version.
func ReservedAnnotation(restoredVersion string) string {
	return AnnotationPrefix + restoredVersion
}

// AnnotationPath returns the item path of the annotation with the given key.
func AnnotationPath(key string) string {
	return "metadata.annotations[" + key + "]"
}

// Item is a part of an object of Go type T that a record restores, or that a guard checks.
type Item[T any] struct {
	// Path names the item: AnnotationPath(key), LabelPath(key), or the dotted JSON path of
	// a field.
	Path string
	// Sources are the paths of the items of the other version that the plain mapping into
	// T reads to produce this item. They make up the guard of a record restoring it.
	Sources []string

	get func(obj *T) any
	set func(obj *T, value []byte) error
}

// Annotation returns the item for the annotation key of objects whose metadata meta
// returns. An absent annotation is JSON null.
func Annotation[T any](key string, meta func(*T) *metav1.ObjectMeta, sources ...string) Item[T] {
	annotations := func(m *metav1.ObjectMeta) *map[string]string { return &m.Annotations }
	return metadataEntry(AnnotationPath(key), key, meta, annotations, false, sources)
}

// LabelPath returns the item path of the label with the given key.
func LabelPath(key string) string {
	return "metadata.labels[" + key + "]"
}

// Label returns the item for the label key of objects whose metadata meta returns. An
// absent label is JSON null. Labels are not copied by a plain mapping, so the converted
// object shares its label map with the source: restoring a label replaces the map with a
// modified copy.
func Label[T any](key string, meta func(*T) *metav1.ObjectMeta, sources ...string) Item[T] {
	labels := func(m *metav1.ObjectMeta) *map[string]string { return &m.Labels }
	return metadataEntry(LabelPath(key), key, meta, labels, true, sources)
}

// metadataEntry is the item at path for the entry key of the metadata map that entries
// picks (annotations, labels). With copyOnWrite, restoring it replaces the map with a
// modified copy (nil when left empty) instead of changing the map in place.
func metadataEntry[T any](path, key string, meta func(*T) *metav1.ObjectMeta,
	entries func(*metav1.ObjectMeta) *map[string]string, copyOnWrite bool, sources []string) Item[T] {
	return Item[T]{
		Path:    path,
		Sources: sources,
		get: func(obj *T) any {
			if v, ok := (*entries(meta(obj)))[key]; ok {
				return &v
			}
			return (*string)(nil)
		},
		set: func(obj *T, value []byte) error {
			var v *string
			if err := json.Unmarshal(value, &v); err != nil {
				return err
			}
			m := entries(meta(obj))
			if copyOnWrite {
				copied := make(map[string]string, len(*m)+1)
				for k, old := range *m {
					copied[k] = old
				}
				*m = copied
			}
			if v == nil {
				delete(*m, key)
				if copyOnWrite && len(*m) == 0 {
					*m = nil
				}
				return nil
			}
			if *m == nil {
				*m = map[string]string{}
			}
			(*m)[key] = *v
			return nil
		},
	}
}

// Field returns the item for the field of objects of type T that field points to. The
// field is replaced as a whole when restored, never modified in place, because converted
// objects share memory with their sources; for the same reason field must not reach it
// through a pointer.
func Field[T, V any](path string, field func(*T) *V, sources ...string) Item[T] {
	return Item[T]{
		Path:    path,
		Sources: sources,
		get:     func(obj *T) any { return *field(obj) },
		set: func(obj *T, value []byte) error {
			var v V
			if err := json.Unmarshal(value, &v); err != nil {
				return err
			}
			*field(obj) = v
			return nil
		},
	}
}

// Version is what converting from one version of a kind needs to know about that version.
type Version[T any] struct {
	// Name is the version, for example "v1alpha1".
	Name string
	// Meta returns an object's metadata.
	Meta func(*T) *metav1.ObjectMeta
	// Items are every part of the object that the round trip through the other version's
	// plain mappings may change.
	Items []Item[T]
}

func (v Version[T]) item(path string) (Item[T], bool) {
	for _, it := range v.Items {
		if it.Path == path {
			return it, true
		}
	}
	return Item[T]{}, false
}

// Mapping is the plain mapping from version S to version T of a kind.
type Mapping[S, T any] struct {
	// Copy converts the fields S and T share, metadata as it is. out may share memory
	// with in.
	Copy func(in *S, out *T)
	// Carry maps the carried fields. It runs after Copy, on an out whose annotations are a
	// map of its own (without the reserved annotations), and replaces rather than modifies
	// anything else of out: its labels, for one, are still the map of in.
	Carry func(in *S, out *T)
}

// Kind converts a kind between its spoke version A and its hub version B.
type Kind[A, B any] struct {
	A    Version[A]
	B    Version[B]
	Up   Mapping[A, B]
	Down Mapping[B, A]
}

// ConvertUp converts in, of the spoke version, into out, of the hub version. It returns the
// number of records it could not honour or write: unusable reserved annotations or records,
// and records left out for size.
func (k *Kind[A, B]) ConvertUp(in *A, out *B) (dropped int) {
	return convert(in, out, k.A, k.B, k.Up, k.Down)
}

// ConvertDown converts in, of the hub version, into out, of the spoke version. It returns
// the number of records it could not honour or write, as ConvertUp does.
func (k *Kind[A, B]) ConvertDown(in *B, out *A) (dropped int) {
	return convert(in, out, k.B, k.A, k.Down, k.Up)
}

// DropRecorder is told how many records of a kind a conversion could not honour or write.
// Passed as the context of runtime.Scheme.Convert, it receives the counts of the
// conversions registered by this module.
type DropRecorder interface {
	ConversionDropped(kind string, dropped int)
}

// ReportDrops tells context, when it is a DropRecorder, that dropped records of kind were
// lost.
func ReportDrops(context any, kind string, dropped int) {
	if r, ok := context.(DropRecorder); ok && dropped > 0 {
		r.ConversionDropped(kind, dropped)
	}
}

// record restores one item. It is the JSON form of an entry of a reserved annotation.
type record struct {
	Restore json.RawMessage            `json:"restore"`
	Guard   map[string]json.RawMessage `json:"guard"`
}

// convert runs the plain mapping there from in to out, restores the records of in that
// still hold, and records on out every item of in that the plain mapping back would not
// reproduce. It never modifies in.
func convert[S, T any](in *S, out *T, from Version[S], to Version[T], there Mapping[S, T], back Mapping[T, S]) int {
	// Records on in restore items of the target version; the ones written on out restore
	// items of the source version.
	consumedKey := ReservedAnnotation(to.Name)
	producedKey := ReservedAnnotation(from.Name)

	plain(in, out, to.Meta, there, consumedKey, producedKey)
	dropped := restore(in, out, from, to, consumedKey)

	var reversed S
	plain(out, &reversed, from.Meta, back, consumedKey, producedKey)
	var records []encodedRecord
	for _, it := range from.Items {
		want := it.get(in)
		if apiequality.Semantic.DeepEqual(it.get(&reversed), want) {
			continue
		}
		r, ok := newRecord(it, want, out, to)
		if !ok {
			dropped++
			continue
		}
		records = append(records, r)
	}
	dropped += writeRecords(to.Meta(out), producedKey, records)

	if m := to.Meta(out); len(m.Annotations) == 0 {
		m.Annotations = nil
	}
	return dropped
}

// plain runs a plain mapping: the shared fields, then, on annotations of out's own without
// any reserved annotation, the carried fields.
func plain[S, T any](in *S, out *T, meta func(*T) *metav1.ObjectMeta, m Mapping[S, T], reserved ...string) {
	m.Copy(in, out)
	om := meta(out)
	var own map[string]string
	if len(om.Annotations) > 0 {
		own = make(map[string]string, len(om.Annotations))
		for k, v := range om.Annotations {
			own[k] = v
		}
		for _, k := range reserved {
			delete(own, k)
		}
	}
	om.Annotations = own
	m.Carry(in, out)
}

// restore applies the records of in's reserved annotation key to out where their guards
// hold, and returns how many records, or whether the whole annotation, it could not use.
func restore[S, T any](in *S, out *T, from Version[S], to Version[T], key string) int {
	value, ok := from.Meta(in).Annotations[key]
	if !ok {
		return 0
	}
	records, ok := parseRecords(value)
	if !ok {
		return 1
	}
	paths := make([]string, 0, len(records))
	for p := range records {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	dropped := 0
	for _, p := range paths {
		r := records[p]
		target, ok := to.item(p)
		if !ok {
			dropped++
			continue
		}
		holds, ok := guardHolds(r.Guard, in, from)
		if !ok {
			dropped++
			continue
		}
		if !holds {
			continue
		}
		if err := target.set(out, r.Restore); err != nil {
			dropped++
		}
	}
	return dropped
}

// parseRecords decodes a reserved annotation. Every entry needs a restore value and a
// guard object; other keys of an entry are ignored.
func parseRecords(value string) (map[string]record, bool) {
	var raw map[string]map[string]json.RawMessage
	if err := json.Unmarshal([]byte(value), &raw); err != nil || raw == nil {
		return nil, false
	}
	records := make(map[string]record, len(raw))
	for path, fields := range raw {
		restoreValue, hasRestore := fields["restore"]
		guardValue, hasGuard := fields["guard"]
		if fields == nil || !hasRestore || !hasGuard {
			return nil, false
		}
		var guard map[string]json.RawMessage
		if err := json.Unmarshal(guardValue, &guard); err != nil || guard == nil {
			return nil, false
		}
		records[path] = record{Restore: restoreValue, Guard: guard}
	}
	return records, true
}

// guardHolds reports whether every guarded item of obj still has the JSON value the
// guard recorded; ok is false when the guard names an unknown item.
func guardHolds[T any](guard map[string]json.RawMessage, obj *T, v Version[T]) (holds, ok bool) {
	holds = true
	for path, want := range guard {
		it, known := v.item(path)
		if !known {
			return false, false
		}
		got, err := encode(it.get(obj))
		if err != nil || !sameJSON(got, want) {
			holds = false
		}
	}
	return holds, true
}

// encodedRecord is one entry of a reserved annotation, encoded: `"<path>":{...}`.
type encodedRecord struct {
	path    string
	encoded []byte
}

// newRecord encodes the record restoring item it to want, guarded on the values that
// the items it is derived from have in out.
func newRecord[S, T any](it Item[S], want any, out *T, to Version[T]) (encodedRecord, bool) {
	restoreValue, err := encode(want)
	if err != nil {
		return encodedRecord{}, false
	}
	r := record{Restore: restoreValue, Guard: map[string]json.RawMessage{}}
	for _, p := range it.Sources {
		source, ok := to.item(p)
		if !ok {
			return encodedRecord{}, false
		}
		if r.Guard[p], err = encode(source.get(out)); err != nil {
			return encodedRecord{}, false
		}
	}
	path, err := encode(it.Path)
	if err != nil {
		return encodedRecord{}, false
	}
	body, err := encode(r)
	if err != nil {
		return encodedRecord{}, false
	}
	return encodedRecord{path: it.Path, encoded: append(append(path, ':'), body...)}, true
}

// writeRecords sets the reserved annotation key of meta to the records that fit within
// MaxAnnotationsSize, the smallest first, and returns how many did not fit.
func writeRecords(meta *metav1.ObjectMeta, key string, records []encodedRecord) int {
	if len(records) == 0 {
		return 0
	}
	size := len(key) + len("{}")
	for k, v := range meta.Annotations {
		size += len(k) + len(v)
	}
	bySize := append([]encodedRecord(nil), records...)
	sort.SliceStable(bySize, func(i, j int) bool {
		if len(bySize[i].encoded) != len(bySize[j].encoded) {
			return len(bySize[i].encoded) < len(bySize[j].encoded)
		}
		return bySize[i].path < bySize[j].path
	})
	var kept []encodedRecord
	for _, r := range bySize {
		add := len(r.encoded)
		if len(kept) > 0 {
			add++ // the comma
		}
		if size+add > MaxAnnotationsSize {
			continue
		}
		size += add
		kept = append(kept, r)
	}
	if len(kept) == 0 {
		return len(records)
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].path < kept[j].path })
	var b strings.Builder
	b.WriteByte('{')
	for i, r := range kept {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(r.encoded)
	}
	b.WriteByte('}')
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[key] = b.String()
	return len(records) - len(kept)
}

// encode returns the compact JSON of v, without HTML escaping so that annotations stay
// readable.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// sameJSON reports whether two JSON documents hold the same value, whatever their
// formatting and key order. Numbers compare by their text, so no precision is lost.
func sameJSON(a, b []byte) bool {
	va, ok := decodeAny(a)
	if !ok {
		return false
	}
	vb, ok := decodeAny(b)
	if !ok {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func decodeAny(data []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if dec.More() {
		return nil, false
	}
	return v, true
}
