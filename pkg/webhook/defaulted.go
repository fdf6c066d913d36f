package webhook

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// DefaultedAdditions returns the additions that write into raw, an object as received, what
// defaulting changed in its typed form: before and after are the typed object before and
// after its defaults were set. Each change is patched at the deepest member of raw that
// holds it, so that nothing else the user wrote is rewritten: neither what the Go types
// merely spell differently (the null creationTimestamp and the empty resources of a pod
// template) nor a neighbouring member.
//
// Where a change is inside a member raw lacks or holds null, that member is added whole, as
// after has it. A change to an element of an array replaces the array: an "add" at an
// index would insert.
func DefaultedAdditions(raw []byte, before, after any) ([]Addition, error) {
	var received any
	if err := json.Unmarshal(raw, &received); err != nil {
		return nil, fmt.Errorf("reading the object as received: %w", err)
	}
	b, err := genericJSON(before)
	if err != nil {
		return nil, fmt.Errorf("encoding the object before defaulting: %w", err)
	}
	a, err := genericJSON(after)
	if err != nil {
		return nil, fmt.Errorf("encoding the object after defaulting: %w", err)
	}
	additions, ok := defaultedMembers("", received, b, a)
	if !ok {
		return nil, fmt.Errorf("defaulting changed the object in a way additions cannot express")
	}
	return additions, nil
}

// genericJSON is v as JSON decodes into any: maps, slices, float64s, strings, bools, nil.
func genericJSON(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(data, &out)
	return out, err
}

// defaultedMembers returns the additions under path that turn raw into raw with the
// changes from before to after, or false when they cannot be expressed under path, for the
// caller to set the whole value at path instead.
func defaultedMembers(path string, raw, before, after any) ([]Addition, bool) {
	if reflect.DeepEqual(before, after) {
		return nil, true
	}
	switch afterValue := after.(type) {
	case map[string]any:
		rawMap, rawOK := raw.(map[string]any)
		beforeMap, beforeOK := before.(map[string]any)
		if !rawOK || !beforeOK {
			return nil, false
		}
		for key := range beforeMap {
			if _, kept := afterValue[key]; !kept {
				return nil, false // a removal, which additions cannot make
			}
		}
		keys := make([]string, 0, len(afterValue))
		for key := range afterValue {
			keys = append(keys, key)
		}
		slices.Sort(keys)
		var additions []Addition
		for _, key := range keys {
			beforeMember, hadMember := beforeMap[key]
			if hadMember && reflect.DeepEqual(beforeMember, afterValue[key]) {
				continue
			}
			memberPath := path + "/" + escapePointer(key)
			if rawMember, ok := rawMap[key]; ok && rawMember != nil && hadMember {
				if more, ok := defaultedMembers(memberPath, rawMember, beforeMember, afterValue[key]); ok {
					additions = append(additions, more...)
					continue
				}
			}
			additions = append(additions, Addition{Path: memberPath, Value: afterValue[key]})
		}
		return additions, true
	case []any:
		rawSlice, rawOK := raw.([]any)
		beforeSlice, beforeOK := before.([]any)
		if !rawOK || !beforeOK || len(rawSlice) != len(afterValue) || len(beforeSlice) != len(afterValue) {
			return nil, false
		}
		var additions []Addition
		for i := range afterValue {
			more, ok := defaultedMembers(path+"/"+strconv.Itoa(i), rawSlice[i], beforeSlice[i], afterValue[i])
			if !ok {
				return nil, false
			}
			additions = append(additions, more...)
		}
		return additions, true
	}
	return nil, false
}

// escapePointer escapes a member name for a JSON pointer.
func escapePointer(name string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(name)
}
