// Package wiretest helps the API packages' tests compare their Go types with the schemas
// of OpenKruise's CRDs.
package wiretest

import (
	"bufio"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var (
	intOrStringType = reflect.TypeOf(intstr.IntOrString{})
	timeType        = reflect.TypeOf(metav1.Time{})
)

// SchemaPaths lists, sorted, one "<path> <type>" line for every property the JSON encoding
// of typ can hold below root, in the notation of a CRD's structural schema: "object",
// "map" (then "<path>{}" for the values), "array" (then "<path>[]" for the items),
// "int-or-string", "string/date-time" for times, "integer/int32" and the like, "boolean",
// "string". The paths in schemaless are listed as "preserve-unknown-fields" and not
// descended into.
func SchemaPaths(typ reflect.Type, root string, schemaless map[string]bool) []string {
	var out []string
	walk(typ, root, schemaless, &out)
	sort.Strings(out)
	return out
}

func walk(typ reflect.Type, path string, schemaless map[string]bool, out *[]string) {
	emit := func(kind string) { *out = append(*out, path+" "+kind) }
	if schemaless[path] {
		emit("preserve-unknown-fields")
		return
	}
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch {
	case typ == intOrStringType:
		emit("int-or-string")
		return
	case typ == timeType:
		emit("string/date-time")
		return
	}
	switch typ.Kind() {
	case reflect.Struct:
		emit("object")
		walkFields(typ, path, schemaless, out)
	case reflect.Map:
		emit("map")
		walk(typ.Elem(), path+"{}", schemaless, out)
	case reflect.Slice:
		emit("array")
		walk(typ.Elem(), path+"[]", schemaless, out)
	case reflect.String:
		emit("string")
	case reflect.Bool:
		emit("boolean")
	case reflect.Int32, reflect.Int64:
		emit(fmt.Sprintf("integer/int%d", typ.Bits()))
	default:
		emit("unsupported:" + typ.String())
	}
}

func walkFields(typ reflect.Type, path string, schemaless map[string]bool, out *[]string) {
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && name == "" {
			walkFields(f.Type, path, schemaless, out)
			continue
		}
		if name == "" {
			name = f.Name
		}
		walk(f.Type, path+"."+name, schemaless, out)
	}
}

// ReadPaths reads a file of "<path> <type>" lines, skipping empty lines and lines that
// start with "#".
func ReadPaths(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var paths []string
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		paths = append(paths, line)
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	sort.Strings(paths)
	return paths, nil
}

// Diff returns the lines only in want and the lines only in got.
func Diff(want, got []string) (missing, extra []string) {
	in := func(list []string) map[string]bool {
		m := map[string]bool{}
		for _, l := range list {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	for _, l := range want {
		if !g[l] {
			missing = append(missing, l)
		}
	}
	for _, l := range got {
		if !w[l] {
			extra = append(extra, l)
		}
	}
	return missing, extra
}
