package kruisepod

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

type jsonOp string

const (
	opAdd     jsonOp = "add"
	opRemove  jsonOp = "remove"
	opReplace jsonOp = "replace"
)

// jsonChange is one difference between two JSON documents, in JSON-patch terms.
type jsonChange struct {
	op   jsonOp
	path string
}

// diffJSON appends to changes the differences between a and b below path: objects are
// compared key by key, arrays of equal length element by element; anything else that
// differs is replaced as a whole.
func diffJSON(path string, a, b any, changes *[]jsonChange) {
	switch a := a.(type) {
	case map[string]any:
		if b, ok := b.(map[string]any); ok {
			for _, key := range slices.Sorted(maps.Keys(a)) {
				child := path + "/" + escapePointer(key)
				if bv, ok := b[key]; ok {
					diffJSON(child, a[key], bv, changes)
				} else {
					*changes = append(*changes, jsonChange{opRemove, child})
				}
			}
			for _, key := range slices.Sorted(maps.Keys(b)) {
				if _, ok := a[key]; !ok {
					*changes = append(*changes, jsonChange{opAdd, path + "/" + escapePointer(key)})
				}
			}
			return
		}
	case []any:
		if b, ok := b.([]any); ok && len(a) == len(b) {
			for i := range a {
				diffJSON(fmt.Sprintf("%s/%d", path, i), a[i], b[i], changes)
			}
			return
		}
	}
	if !reflect.DeepEqual(a, b) {
		*changes = append(*changes, jsonChange{opReplace, path})
	}
}

func escapePointer(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}
