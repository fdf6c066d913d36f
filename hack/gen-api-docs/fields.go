package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// writeFields lists every field below s in depth-first order with its full path, so a
// reader can search the page for a YAML path.
func writeFields(buf *bytes.Buffer, path string, s schema) {
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	for _, n := range names {
		child := s.Properties[n]
		p := path + "." + n
		desc := oneLine(child.Description)
		if notes := notesOf(child, required[n]); len(notes) > 0 {
			if desc != "" {
				desc += " "
			}
			desc += "(" + strings.Join(notes, "; ") + ")"
		}
		fmt.Fprintf(buf, "| `%s` | %s | %s |\n", p, typeOf(child), desc)
		switch {
		case child.Type == "object" && len(child.Properties) > 0 && !child.EmbeddedResource:
			writeFields(buf, p, child)
		case child.Type == "array" && child.Items != nil && len(child.Items.Properties) > 0:
			writeFields(buf, p+"[]", *child.Items)
		case child.AdditionalProperties != nil && len(child.AdditionalProperties.Properties) > 0:
			writeFields(buf, p+"{}", *child.AdditionalProperties)
		}
	}
}

// notesOf lists what the API server checks or sets on a field, besides its type.
func notesOf(s schema, required bool) []string {
	var notes []string
	if required {
		notes = append(notes, "**required**")
	}
	if s.Default != nil {
		notes = append(notes, "default "+code([]string{literal(s.Default)}))
	}
	if len(s.Enum) > 0 {
		vals := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			vals[i] = literal(e)
		}
		notes = append(notes, "one of "+code(vals))
	}
	if s.Minimum != nil {
		notes = append(notes, fmt.Sprintf("minimum %v", *s.Minimum))
	}
	if s.Maximum != nil {
		notes = append(notes, fmt.Sprintf("maximum %v", *s.Maximum))
	}
	if s.MinLength != nil {
		notes = append(notes, "at least "+count(*s.MinLength, "character"))
	}
	if s.MaxLength != nil {
		notes = append(notes, "at most "+count(*s.MaxLength, "character"))
	}
	if s.Pattern != "" {
		notes = append(notes, "matches "+code([]string{s.Pattern}))
	}
	if s.MinItems != nil {
		notes = append(notes, "at least "+count(*s.MinItems, "item"))
	}
	if s.MaxItems != nil {
		notes = append(notes, "at most "+count(*s.MaxItems, "item"))
	}
	if s.MaxProperties != nil {
		notes = append(notes, "at most "+count(*s.MaxProperties, "entry"))
	}
	switch s.ListType {
	case "set":
		notes = append(notes, "items unique")
	case "map":
		notes = append(notes, "items unique by "+code(s.ListMapKeys))
	}
	for _, v := range s.Validations {
		notes = append(notes, oneLine(fmt.Sprintf("rule: %v", v["message"])))
	}
	// The items of a list and the values of a map get no rows of their own unless they are
	// objects: their rules go with the field.
	if s.Items != nil && len(s.Items.Properties) == 0 {
		for _, n := range notesOf(*s.Items, false) {
			notes = append(notes, "each item: "+n)
		}
	}
	if s.AdditionalProperties != nil && len(s.AdditionalProperties.Properties) == 0 {
		for _, n := range notesOf(*s.AdditionalProperties, false) {
			notes = append(notes, "each value: "+n)
		}
	}
	return notes
}

// count writes n units, in the plural unless n is 1.
func count(n int64, unit string) string {
	switch {
	case n == 1:
		return "1 " + unit
	case strings.HasSuffix(unit, "y"):
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(unit, "y"))
	default:
		return fmt.Sprintf("%d %ss", n, unit)
	}
}

// literal writes a value of a schema (a default or an enum member) as it would appear
// in YAML: scalars plain, anything else as JSON.
func literal(v any) string {
	switch v.(type) {
	case map[string]any, []any:
		data, err := json.Marshal(v)
		if err == nil {
			return string(data)
		}
	}
	return fmt.Sprint(v)
}

// writeRules lists the CEL rules set on whole objects, which no single field row shows.
func writeRules(buf *bytes.Buffer, path string, s schema) {
	var lines []string
	var walk func(string, schema)
	walk = func(p string, s schema) {
		if len(s.Properties) > 0 {
			for _, v := range s.Validations {
				lines = append(lines, fmt.Sprintf("- `%s`: %v (`%v`)", orRoot(p), v["message"], v["rule"]))
			}
		}
		names := make([]string, 0, len(s.Properties))
		for n := range s.Properties {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			walk(p+"."+n, s.Properties[n])
		}
	}
	walk(path, s)
	if len(lines) > 0 {
		buf.WriteString("Object rules:\n\n" + strings.Join(lines, "\n") + "\n\n")
	}
}

// writeChanges writes the table of how version other of a kind differs from its storage
// version. Each cell shows the field's type and rules in one version, "–" where the
// version lacks it; fields only the other version has also get their description.
func writeChanges(buf *bytes.Buffer, changes []change, other, storage version) {
	fmt.Fprintf(buf, "| Field | `%s` | `%s` |\n|---|---|---|\n", other.Name, storage.Name)
	for _, c := range changes {
		a, b := cell(other.Schema, c.path, c.other), cell(storage.Schema, c.path, c.storage)
		switch {
		case c.nested == 1:
			b += ", with the field below it"
		case c.nested > 1:
			b += fmt.Sprintf(", with the %d fields below it", c.nested)
		}
		if c.storage == nil {
			if s, _, ok := lookup(other.Schema, c.path); ok && s.Description != "" {
				a += " — " + oneLine(s.Description)
			}
		}
		if c.other != nil && c.storage != nil && a == b {
			// The keywords that differ are ones the tables do not describe: show them as
			// written.
			a += rawDifferences(c.other, c.storage)
			b += rawDifferences(c.storage, c.other)
		}
		fmt.Fprintf(buf, "| `%s` | %s | %s |\n", c.path, a, b)
	}
}

// cell describes the field at path of s: its type and rules, or "–" when own is nil (the
// version lacks the field).
func cell(s schema, path fieldPath, own map[string]any) string {
	if own == nil {
		return "–"
	}
	node, required, ok := lookup(s, path)
	if !ok {
		return "–"
	}
	text := typeOf(node)
	if text == "" {
		text = "untyped"
	}
	if notes := notesOf(node, required); len(notes) > 0 {
		text += " (" + strings.Join(notes, "; ") + ")"
	}
	return text
}

// rawDifferences lists the keywords of own whose values differ in other, as written.
func rawDifferences(own, other map[string]any) string {
	keys := map[string]bool{}
	for k := range own {
		keys[k] = true
	}
	for k := range other {
		keys[k] = true
	}
	var parts []string
	for k := range keys {
		v, set := own[k]
		if w, ok := other[k]; ok == set && reflect.DeepEqual(v, w) {
			continue
		}
		if !set {
			parts = append(parts, "`"+k+"` unset")
			continue
		}
		data, err := json.Marshal(v)
		if err != nil {
			data = []byte(fmt.Sprint(v))
		}
		parts = append(parts, code([]string{k + ": " + string(data)}))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

func typeOf(s schema) string {
	switch {
	case s.IntOrString:
		return "int or string"
	case s.Type == "array" && s.Items != nil:
		return "[]" + typeOf(*s.Items)
	case s.Type == "object" && s.AdditionalProperties != nil:
		return "map[string]" + typeOf(*s.AdditionalProperties)
	case s.Type == "" && s.PreserveUnknownFields:
		return "any"
	case s.Format != "":
		return s.Type + " (" + s.Format + ")"
	default:
		return s.Type
	}
}

// oneLine makes a description fit in a table cell.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", "\\|")
}

// code writes values as a comma-separated list of code spans.
func code(vals []string) string {
	return strings.Join(codeEach(vals), ", ")
}

// codeEach writes each value as a code span that fits in a table cell.
func codeEach(vals []string) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = "`" + strings.ReplaceAll(v, "|", "\\|") + "`"
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func orRoot(p string) string {
	if p == "" {
		return "(object)"
	}
	return p
}
