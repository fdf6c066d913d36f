package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
)

// Mutating webhooks answer with an RFC 6902 JSON patch. The one JSON patch library vendored
// (evanphx/json-patch) applies such patches but computes only merge patches (RFC 7386), which
// admission does not accept, so the server computes its own: a small diff of two JSON
// documents that only emits add, remove and replace.

// jsonPatchOperation is one operation of an RFC 6902 patch.
type jsonPatchOperation struct {
	Op   string `json:"op"`
	Path string `json:"path"`
	// Value is the JSON text of the value added or replaced, absent for a removal. It is
	// raw so that a null value is still written ("value": null), as add and replace require.
	Value json.RawMessage `json:"value,omitempty"`
}

// decodeJSONDocument decodes one JSON document into maps, slices and scalars. Numbers stay
// json.Number, so that the patch repeats them digit for digit: large integers would lose
// precision as float64.
func decodeJSONDocument(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("data after the end of the JSON document at offset %d", end)
	}
	return doc, nil
}

// createJSONPatch returns the operations that turn the document from into to, both as
// decodeJSONDocument returns them. Objects are compared key by key, recursively, in key order
// so that the patch is the same every time; any other value that differs, arrays included,
// is replaced whole. Replacing a changed array rather than working out element insertions and
// removals keeps the diff obviously correct; the price is a longer patch when one element of a
// long list changes, which admission patches can afford.
func createJSONPatch(from, to any) ([]jsonPatchOperation, error) {
	var ops []jsonPatchOperation
	if err := diffJSON(&ops, "", from, to); err != nil {
		return nil, err
	}
	return ops, nil
}

func diffJSON(ops *[]jsonPatchOperation, path string, from, to any) error {
	fromObject, fromIsObject := from.(map[string]any)
	toObject, toIsObject := to.(map[string]any)
	if fromIsObject && toIsObject {
		return diffJSONObjects(ops, path, fromObject, toObject)
	}
	if reflect.DeepEqual(from, to) {
		return nil
	}
	return appendJSONOperation(ops, "replace", path, to)
}

func diffJSONObjects(ops *[]jsonPatchOperation, path string, from, to map[string]any) error {
	keys := make([]string, 0, len(from)+len(to))
	for key := range from {
		keys = append(keys, key)
	}
	for key := range to {
		if _, inFrom := from[key]; !inFrom {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)

	for _, key := range keys {
		keyPath := path + "/" + jsonPointerEscaper.Replace(key)
		fromValue, inFrom := from[key]
		toValue, inTo := to[key]
		var err error
		switch {
		case !inTo:
			*ops = append(*ops, jsonPatchOperation{Op: "remove", Path: keyPath})
		case !inFrom:
			err = appendJSONOperation(ops, "add", keyPath, toValue)
		default:
			err = diffJSON(ops, keyPath, fromValue, toValue)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func appendJSONOperation(ops *[]jsonPatchOperation, op, path string, value any) error {
	raw, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("encoding the value at %q: %w", path, err)
	}
	*ops = append(*ops, jsonPatchOperation{Op: op, Path: path, Value: raw})
	return nil
}

// jsonPointerEscaper escapes a key for a JSON pointer (RFC 6901): "~" becomes "~0" and "/"
// becomes "~1". A Replacer makes one pass, so the "~" of an escaped "/" is never escaped again.
var jsonPointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")
