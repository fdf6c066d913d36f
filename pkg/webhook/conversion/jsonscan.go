package conversion

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// The handler reads a few fields of each object (apiVersion, kind, the name for messages)
// and moves the schemaless parts of spec around as they are. Decoding a whole object to do
// that would scan it several times over, so these functions find the fields of a JSON
// object in one pass instead. They work on JSON that is known to be well-formed (the review it came
// in was decoded, or encoding/json wrote it), yet check their bounds and fail rather than
// read past the end of malformed input.

var errMalformedJSON = errors.New("malformed JSON")

// member is one field of a JSON object: data[start:] begins with its name's opening quote,
// data[valueStart:valueEnd] is its value.
type member struct {
	name                        string
	start, valueStart, valueEnd int
}

// objectMembers returns the fields of the JSON object data, in order.
func objectMembers(data []byte) ([]member, error) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, errors.New("not a JSON object")
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return nil, nil
	}
	var members []member
	for {
		if i >= len(data) || data[i] != '"' {
			return nil, errMalformedJSON
		}
		nameEnd, err := stringEnd(data, i)
		if err != nil {
			return nil, err
		}
		name, err := stringValue(data[i:nameEnd])
		if err != nil {
			return nil, err
		}
		m := member{name: name, start: i}
		i = skipSpace(data, nameEnd)
		if i >= len(data) || data[i] != ':' {
			return nil, errMalformedJSON
		}
		m.valueStart = skipSpace(data, i+1)
		if m.valueEnd, err = valueEnd(data, m.valueStart); err != nil {
			return nil, err
		}
		members = append(members, m)
		i = skipSpace(data, m.valueEnd)
		if i >= len(data) {
			return nil, errMalformedJSON
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return members, nil
		default:
			return nil, errMalformedJSON
		}
	}
}

// value returns the value of m in data.
func (m member) value(data []byte) []byte {
	return data[m.valueStart:m.valueEnd]
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index after the quote closing the string that opens at data[start].
func stringEnd(data []byte, start int) (int, error) {
	for i := start + 1; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++ // the escaped character, which may be a quote
		case '"':
			return i + 1, nil
		}
	}
	return 0, errMalformedJSON
}

// stringValue is the value of a quoted JSON string; only strings with escapes or invalid
// UTF-8 (which decodes as U+FFFD) need decoding.
func stringValue(quoted []byte) (string, error) {
	if bytes.IndexByte(quoted, '\\') < 0 && utf8.Valid(quoted) {
		return string(quoted[1 : len(quoted)-1]), nil
	}
	var s string
	if err := json.Unmarshal(quoted, &s); err != nil {
		return "", fmt.Errorf("%w: %w", errMalformedJSON, err)
	}
	return s, nil
}

// valueEnd returns the index after the JSON value that starts at data[start].
func valueEnd(data []byte, start int) (int, error) {
	if start >= len(data) {
		return 0, errMalformedJSON
	}
	switch data[start] {
	case '"':
		return stringEnd(data, start)
	case '{', '[':
		depth := 0
		for i := start; i < len(data); i++ {
			switch data[i] {
			case '"':
				end, err := stringEnd(data, i)
				if err != nil {
					return 0, err
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
		}
		return 0, errMalformedJSON
	}
	// A number or a literal: it ends where the enclosing object or array goes on.
	i := start
	for i < len(data) {
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i, nil
		}
		i++
	}
	return i, nil
}

// isNull reports whether the JSON value raw is null.
func isNull(raw []byte) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// splice is a replacement of data[start:end].
type splice struct {
	start, end int
	with       []byte
}

// applySplices returns data with the splices, which are in order and do not overlap, made.
func applySplices(data []byte, splices []splice) []byte {
	size := len(data)
	for _, s := range splices {
		size += len(s.with) - (s.end - s.start)
	}
	out := make([]byte, 0, size)
	last := 0
	for _, s := range splices {
		out = append(out, data[last:s.start]...)
		out = append(out, s.with...)
		last = s.end
	}
	return append(out, data[last:]...)
}
