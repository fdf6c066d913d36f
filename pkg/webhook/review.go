package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

const reviewKind = "AdmissionReview"

var reviewAPIVersion = admissionv1.SchemeGroupVersion.String()

// decodeReview returns the request of an admission.k8s.io/v1 AdmissionReview, or an error
// saying what is wrong with the body. It is strict about everything that could make the
// server answer something the API server did not ask: the body must be one well-formed JSON
// document without duplicate fields, field names match case-sensitively (as the API server's
// own decoding does), and the review must carry a request with a UID to answer.
//
// Unknown fields are tolerated: a newer API server may send fields this build does not know,
// and refusing them would fail every admission request after an API server upgrade.
func decodeReview(body []byte) (*admissionv1.AdmissionRequest, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errors.New("empty body")
	}
	if !json.Valid(body) {
		return nil, describeMalformedJSON(body)
	}
	if path, found := findDuplicateField(body); found {
		return nil, fmt.Errorf("duplicate field %q", path)
	}
	var review admissionv1.AdmissionReview
	if err := utiljson.Unmarshal(body, &review); err != nil {
		return nil, err
	}
	switch {
	case review.APIVersion != reviewAPIVersion:
		return nil, fmt.Errorf("apiVersion %q is not %s", review.APIVersion, reviewAPIVersion)
	case review.Kind != reviewKind:
		return nil, fmt.Errorf("kind %q is not %s", review.Kind, reviewKind)
	case review.Request == nil:
		return nil, errors.New("no request")
	case review.Request.UID == "":
		return nil, errors.New("request.uid is empty")
	}
	return review.Request, nil
}

// describeMalformedJSON says where and how data, which json.Valid refused, is not one JSON
// document; trailing data after a document is a syntax error too. Only refused bodies pay for
// this second pass.
func describeMalformedJSON(data []byte) error {
	err := json.Unmarshal(data, new(json.RawMessage))
	if syntaxErr, ok := errors.AsType[*json.SyntaxError](err); ok {
		// Offset counts the bytes read up to and including the offending one.
		return fmt.Errorf("malformed JSON at byte %d: %v", syntaxErr.Offset, syntaxErr)
	}
	return fmt.Errorf("malformed JSON: %v", err)
}

// findDuplicateField returns the path of the first field that one object of data names
// twice, and whether there is one; data must be valid JSON of less than 2 GiB. (The path
// alone cannot tell: a field whose name and ancestors' names are empty has the path "".) The typed
// decoding that follows would silently keep the last of the two values, so the server
// could act on another value than the sender meant.
//
// It scans the bytes rather than decoding tokens, which took several times as long as the
// decoding itself, and keeps its own stack rather than recursing, since the nesting depth is
// up to the sender. What it allocates does not grow with the number of objects, only with
// the depth and the field names of the open ones: every object's names share one list of
// offsets into data, and an object gets an index of its names only once it has too many to
// compare one by one. Allocating a map per object made a body of many small objects cost
// twenty times its size.
func findDuplicateField(data []byte) (string, bool) {
	s := duplicateScan{data: data}
	return s.scan()
}

// namesCompared is how many field names an object may have before its names are indexed
// rather than compared one by one.
const namesCompared = 16

// duplicateScan is the state of findDuplicateField.
type duplicateScan struct {
	data []byte
	// stack has one entry per object or array the scan is in, innermost last.
	stack []jsonContainer
	// names are the field names of the open objects, each object's after its parent's:
	// an object's are names[firstName:], since those of the objects in its values are
	// dropped when they close.
	names []fieldName
	// decoded holds the names that differ from their bytes in data (see jsonName).
	decoded [][]byte
	seed    maphash.Seed
}

// fieldName is a field name: data[start:end], or decoded[-start-1] when start is negative.
type fieldName struct {
	start, end int32
}

// jsonContainer is an object or array findDuplicateField is in.
type jsonContainer struct {
	isObject bool
	// firstName is the index in names of an object's first field name; in an array, of
	// the first name of the objects in it.
	firstName int
	// index is a hash table of an object's names, once it has more than namesCompared:
	// each slot 0 or one more than the position of a name in the object's names.
	index []int32
	// position is the position in an array of the element being read.
	position int
	// wantName is true in an object before each field name.
	wantName bool
}

func (s *duplicateScan) scan() (string, bool) {
	data := s.data
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '{':
			s.stack = append(s.stack, jsonContainer{isObject: true, firstName: len(s.names), wantName: true})
		case '[':
			s.stack = append(s.stack, jsonContainer{firstName: len(s.names)})
		case '}', ']':
			s.names = s.names[:s.stack[len(s.stack)-1].firstName]
			s.stack = s.stack[:len(s.stack)-1]
		case ',':
			if top := &s.stack[len(s.stack)-1]; top.isObject {
				top.wantName = true
			} else {
				top.position++
			}
		case '"':
			end := endOfString(data, i)
			if n := len(s.stack); n > 0 && s.stack[n-1].wantName {
				name := fieldName{int32(i + 1), int32(end)}
				if decoded, changed := jsonName(data[i : end+1]); changed {
					s.decoded = append(s.decoded, decoded)
					name = fieldName{int32(-len(s.decoded)), 0}
				}
				if s.seen(&s.stack[n-1], name) {
					return s.fieldPath(string(s.bytes(name))), true
				}
				// Doubled rather than grown by append's quarter, which for a large object
				// allocates five times the final list along the way.
				if len(s.names) == cap(s.names) {
					s.names = slices.Grow(s.names, len(s.names))
				}
				s.names = append(s.names, name)
				s.stack[n-1].wantName = false
			}
			i = end
		}
		// Anything else (white space, colons, numbers, literals) says nothing about fields.
	}
	return "", false
}

// bytes is the field name n.
func (s *duplicateScan) bytes(n fieldName) []byte {
	if n.start < 0 {
		return s.decoded[-n.start-1]
	}
	return s.data[n.start:n.end]
}

// seen reports whether the object top already has the field name, and records it.
func (s *duplicateScan) seen(top *jsonContainer, name fieldName) bool {
	names := s.names[top.firstName:]
	same := func(n fieldName) bool { return bytes.Equal(s.bytes(n), s.bytes(name)) }
	if top.index == nil {
		if slices.ContainsFunc(names, same) {
			return true
		}
		if len(names) < namesCompared {
			return false
		}
		if s.seed == (maphash.Seed{}) {
			s.seed = maphash.MakeSeed()
		}
		s.reindex(top, names, 4*namesCompared)
	}
	// At most half full, the name included.
	if 2*(len(names)+1) > len(top.index) {
		s.reindex(top, names, 2*len(top.index))
	}
	// Open addressing, probing linearly from the name's hash.
	mask := uint64(len(top.index) - 1)
	slot := maphash.Bytes(s.seed, s.bytes(name)) & mask
	for ; top.index[slot] != 0; slot = (slot + 1) & mask {
		if same(names[top.index[slot]-1]) {
			return true
		}
	}
	// The name goes into names next.
	top.index[slot] = int32(len(names) + 1)
	return false
}

// reindex makes an index of size slots (a power of two) of the names of an object.
func (s *duplicateScan) reindex(top *jsonContainer, names []fieldName, size int) {
	top.index = make([]int32, size)
	mask := uint64(size - 1)
	for i, n := range names {
		slot := maphash.Bytes(s.seed, s.bytes(n)) & mask
		for top.index[slot] != 0 {
			slot = (slot + 1) & mask
		}
		top.index[slot] = int32(i + 1)
	}
}

// fieldPath names the field key of the innermost object the way the API server's strict
// decoding does, for example "request.userInfo.groups" or "items[2].name".
func (s *duplicateScan) fieldPath(key string) string {
	var b strings.Builder
	for i, c := range s.stack[:len(s.stack)-1] {
		if !c.isObject {
			b.WriteString("[" + strconv.Itoa(c.position) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		// The field whose value is being read is the object's last name: the names of
		// the objects inside that value come after it.
		b.Write(s.bytes(s.names[s.stack[i+1].firstName-1]))
	}
	if b.Len() > 0 {
		b.WriteByte('.')
	}
	b.WriteString(key)
	return b.String()
}

// endOfString returns the index of the quote closing the string that opens at data[start].
func endOfString(data []byte, start int) int {
	for i := start + 1; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++ // the escaped character, which may be a quote
		case '"':
			return i
		}
	}
	return len(data) - 1 // unreachable in valid JSON
}

// jsonName is the field name a quoted JSON string stands for, as the decoding reads it,
// and whether that differs from the string's bytes: "a" and "\u0061" name the same field,
// and so do two names whose invalid UTF-8 both decodes to U+FFFD.
func jsonName(quoted []byte) ([]byte, bool) {
	inner := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return inner, false
	}
	var s string
	if err := json.Unmarshal(quoted, &s); err != nil {
		return inner, false // unreachable in valid JSON
	}
	return []byte(s), true
}

// encodeReview is the AdmissionReview answering the request uid with resp. resp is copied
// rather than given the UID in place: a handler may return a response it shares between
// requests.
func encodeReview(uid types.UID, resp *admissionv1.AdmissionResponse) ([]byte, error) {
	answer := *resp
	answer.UID = uid
	return json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: reviewAPIVersion, Kind: reviewKind},
		Response: &answer,
	})
}
