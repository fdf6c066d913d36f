package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

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
	if path := findDuplicateField(body); path != "" {
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
// twice, or "" when there is none; data must be valid JSON. The typed decoding that follows
// would silently keep the last of the two values, so the server could act on another value
// than the sender meant.
//
// It scans the bytes rather than decoding tokens, which took several times as long as the
// decoding itself, and keeps its own stack rather than recursing, since the nesting depth is
// up to the sender.
func findDuplicateField(data []byte) string {
	// One entry per object or array the scan is in, innermost last.
	var stack []*jsonContainer
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '{':
			stack = append(stack, &jsonContainer{fields: map[string]bool{}, wantKey: true})
		case '[':
			stack = append(stack, &jsonContainer{})
		case '}', ']':
			stack = stack[:len(stack)-1]
		case ',':
			if top := stack[len(stack)-1]; top.fields != nil {
				top.wantKey = true
			} else {
				top.index++
			}
		case '"':
			end := endOfString(data, i)
			if n := len(stack); n > 0 && stack[n-1].wantKey {
				top := stack[n-1]
				key := jsonString(data[i : end+1])
				if top.fields[key] {
					return fieldPath(stack, key)
				}
				top.fields[key] = true
				top.key = key
				top.wantKey = false
			}
			i = end
		}
		// Anything else (white space, colons, numbers, literals) says nothing about fields.
	}
	return ""
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

// jsonString is the value of a quoted JSON string. Only keys with escapes need decoding:
// "a" and "\u0061" name the same field.
func jsonString(quoted []byte) string {
	if bytes.IndexByte(quoted, '\\') < 0 {
		return string(quoted[1 : len(quoted)-1])
	}
	var s string
	if err := json.Unmarshal(quoted, &s); err != nil {
		return string(quoted) // unreachable in valid JSON
	}
	return s
}

// jsonContainer is an object or array findDuplicateField is in.
type jsonContainer struct {
	// fields holds an object's field names seen so far; nil for an array.
	fields map[string]bool
	// key is the field of an object whose value is being read.
	key string
	// index is the position in an array of the element being read.
	index int
	// wantKey is true in an object before each field name.
	wantKey bool
}

// fieldPath names the field key of the innermost object of stack the way the API server's
// strict decoding does, for example "request.userInfo.groups" or "items[2].name".
func fieldPath(stack []*jsonContainer, key string) string {
	var b strings.Builder
	for _, c := range stack[:len(stack)-1] {
		if c.fields == nil {
			b.WriteString("[" + strconv.Itoa(c.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(c.key)
	}
	if b.Len() > 0 {
		b.WriteByte('.')
	}
	b.WriteString(key)
	return b.String()
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
