package main

import (
	"reflect"
	"sort"
	"strings"
)

// fieldPath names a field of a schema by its segments: property names, "[]" for the items
// of an array and "{}" for the values of a map. The empty path is the object itself.
type fieldPath []string

func (p fieldPath) String() string {
	if len(p) == 0 {
		return "(object)"
	}
	var b strings.Builder
	for i, s := range p {
		if i > 0 && s != "[]" && s != "{}" {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

// child returns the path of a field below p, without sharing p's backing array.
func (p fieldPath) child(segment string) fieldPath {
	return append(p[:len(p):len(p)], segment)
}

// less orders paths as the field tables list them: depth first, names sorted within a
// level, so that a field comes right before the fields below it.
func (p fieldPath) less(q fieldPath) bool {
	for i := 0; i < len(p) && i < len(q); i++ {
		if p[i] != q[i] {
			return p[i] < q[i]
		}
	}
	return len(p) < len(q)
}

func (p fieldPath) hasPrefix(q fieldPath) bool {
	if len(q) > len(p) {
		return false
	}
	for i := range q {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

// withoutDescriptions returns a copy of a schema node without the descriptions of the
// node and of its subschemas. Two versions whose copies are equal validate and default
// every object the same way.
func withoutDescriptions(node map[string]any) map[string]any {
	out := make(map[string]any, len(node))
	for k, v := range node {
		switch k {
		case "description":
		case "properties", "patternProperties", "definitions":
			if m, ok := v.(map[string]any); ok {
				stripped := make(map[string]any, len(m))
				for name, sub := range m {
					stripped[name] = subschemaWithoutDescriptions(sub)
				}
				out[k] = stripped
			} else {
				out[k] = v
			}
		case "items", "additionalProperties", "not":
			out[k] = subschemaWithoutDescriptions(v)
		case "anyOf", "allOf", "oneOf":
			if list, ok := v.([]any); ok {
				stripped := make([]any, len(list))
				for i, sub := range list {
					stripped[i] = subschemaWithoutDescriptions(sub)
				}
				out[k] = stripped
			} else {
				out[k] = v
			}
		default:
			// Values such as default, enum or x-kubernetes-validations are data, not
			// schemas: a "description" key in them is content.
			out[k] = v
		}
	}
	return out
}

func subschemaWithoutDescriptions(v any) any {
	if m, ok := v.(map[string]any); ok {
		return withoutDescriptions(m)
	}
	return v
}

// flatField is a field of a schema with the keywords that belong to it alone.
type flatField struct {
	path fieldPath
	// own holds the field's keywords without descriptions and without the schemas of the
	// fields below it; "required" is true when its parent requires it, since that is a
	// rule about the field.
	own map[string]any
}

// flatten returns every field of a schema tree, the object itself included, by path.
func flatten(tree map[string]any) map[string]flatField {
	out := map[string]flatField{}
	flattenInto(out, fieldPath{}, tree, false)
	return out
}

func flattenInto(out map[string]flatField, path fieldPath, node map[string]any, required bool) {
	own := map[string]any{}
	for k, v := range withoutDescriptions(node) {
		switch k {
		case "properties", "required":
			continue
		case "items", "additionalProperties":
			// A schema is a field below this one; anything else (additionalProperties:
			// false) is a rule of this field.
			if _, ok := v.(map[string]any); ok {
				continue
			}
		}
		own[k] = v
	}
	if required {
		own["required"] = true
	}
	out[path.String()] = flatField{path: path, own: own}

	requires := map[string]bool{}
	if list, ok := node["required"].([]any); ok {
		for _, r := range list {
			if name, ok := r.(string); ok {
				requires[name] = true
			}
		}
	}
	properties, _ := node["properties"].(map[string]any)
	for name, sub := range properties {
		child, _ := sub.(map[string]any)
		flattenInto(out, path.child(name), child, requires[name])
	}
	for name := range requires {
		// A required name without a schema still constrains the object.
		if _, ok := properties[name]; !ok {
			p := path.child(name)
			out[p.String()] = flatField{path: p, own: map[string]any{"required": true}}
		}
	}
	if items, ok := node["items"].(map[string]any); ok {
		flattenInto(out, path.child("[]"), items, false)
	}
	if values, ok := node["additionalProperties"].(map[string]any); ok {
		flattenInto(out, path.child("{}"), values, false)
	}
}

// change is one row of the comparison of a version with the storage version: a field only
// one of them has, or whose own keywords differ. other and storage are nil where the
// version lacks the field.
type change struct {
	path           fieldPath
	other, storage map[string]any
	// nested counts the named fields below a field only the storage version has. The
	// reference lists them with the storage version, so the row stands for them all.
	nested int
}

// compare lists, in table order, how the schema tree other differs from the storage
// version's, descriptions aside. Fields only other has are listed one by one, as the
// reference lists them nowhere else.
func compare(other, storage map[string]any) []change {
	a, b := flatten(other), flatten(storage)
	var paths []fieldPath
	for _, f := range a {
		paths = append(paths, f.path)
	}
	for key, f := range b {
		if _, ok := a[key]; !ok {
			paths = append(paths, f.path)
		}
	}
	sort.Slice(paths, func(i, j int) bool { return paths[i].less(paths[j]) })

	var changes []change
	storageOnlyRoot := -1
	for _, p := range paths {
		fa, inOther := a[p.String()]
		fb, inStorage := b[p.String()]
		switch {
		case inOther && inStorage:
			if !reflect.DeepEqual(fa.own, fb.own) {
				changes = append(changes, change{path: p, other: fa.own, storage: fb.own})
			}
		case inStorage:
			if storageOnlyRoot >= 0 && p.hasPrefix(changes[storageOnlyRoot].path) {
				if last := p[len(p)-1]; last != "[]" && last != "{}" {
					changes[storageOnlyRoot].nested++
				}
				continue
			}
			storageOnlyRoot = len(changes)
			changes = append(changes, change{path: p, storage: fb.own})
		default:
			changes = append(changes, change{path: p, other: fa.own})
		}
	}
	return changes
}

// lookup returns the node of s at path, and whether its parent requires it.
func lookup(s schema, path fieldPath) (node schema, required, ok bool) {
	node = s
	for _, segment := range path {
		var next *schema
		required = false
		switch segment {
		case "[]":
			next = node.Items
		case "{}":
			next = node.AdditionalProperties
		default:
			for _, r := range node.Required {
				if r == segment {
					required = true
				}
			}
			if child, found := node.Properties[segment]; found {
				next = &child
			} else if required {
				// Required but without a schema: the field is a rule only.
				next = &schema{}
			}
		}
		if next == nil {
			return schema{}, false, false
		}
		node = *next
	}
	return node, required, true
}
