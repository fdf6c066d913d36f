package api

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// schemaGenerator makes random values that a CRD version's structural schema
// (openAPIV3Schema) accepts: types, enums, bounds, lengths, patterns, formats, required
// properties, int-or-string, maps, and unique keys of list-type map and set lists. What
// it cannot see — CEL rules and other cross-field constraints — is left to chance: the
// API server refuses such objects and the caller tries another.
//
// Objects stay small (few items, shallow optional parts), so many fit in a short run,
// and the output is a function of the random source alone, so a seed reproduces it.
type schemaGenerator struct {
	rand *rand.Rand
	// maxItems caps how many items an array or map has beyond its minimum.
	maxItems int
	// maxOptionalDepth is the nesting depth below which optional properties and extra
	// items may appear. It is a guard against runaway recursion, deeper than bosun's
	// schemas go, so that every field can be generated.
	maxOptionalDepth int
	// generated collects the schema paths (see schemaPaths) of every value made.
	generated map[string]bool
}

func newSchemaGenerator(r *rand.Rand) *schemaGenerator {
	return &schemaGenerator{rand: r, maxItems: 2, maxOptionalDepth: 12, generated: map[string]bool{}}
}

// schemaNode is one (sub)schema as decoded from the CRD's YAML.
type schemaNode = map[string]any

// crdSchemas returns, by kind and version, the openAPIV3Schema of every CRD in dir.
func crdSchemas(dir string) (map[string]map[string]schemaNode, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	schemas := map[string]map[string]schemaNode{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		var crd struct {
			Spec struct {
				Names    struct{ Kind string }
				Versions []struct {
					Name   string
					Schema struct {
						OpenAPIV3Schema schemaNode `json:"openAPIV3Schema"`
					}
				}
			}
		}
		if err := yaml.Unmarshal(data, &crd); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		byVersion := map[string]schemaNode{}
		for _, v := range crd.Spec.Versions {
			if v.Schema.OpenAPIV3Schema == nil {
				return nil, fmt.Errorf("%s: version %s has no schema", file, v.Name)
			}
			byVersion[v.Name] = v.Schema.OpenAPIV3Schema
		}
		schemas[crd.Spec.Names.Kind] = byVersion
	}
	return schemas, nil
}

// schemaPaths returns the path of every node of a root schema below apiVersion, kind
// and metadata (which the caller writes): ".spec.x" for a property, "[]" appended for
// array items and "{}" for map values.
func schemaPaths(root schemaNode) []string {
	var paths []string
	var walk func(s schemaNode, path string)
	walk = func(s schemaNode, path string) {
		paths = append(paths, path)
		for _, name := range sortedKeys(properties(s)) {
			walk(properties(s)[name], path+"."+name)
		}
		if items, ok := s["items"].(schemaNode); ok {
			walk(items, path+"[]")
		}
		if additional, ok := s["additionalProperties"].(schemaNode); ok {
			walk(additional, path+"{}")
		}
	}
	for name, s := range properties(root) {
		if name != "apiVersion" && name != "kind" && name != "metadata" {
			walk(s, "."+name)
		}
	}
	slices.Sort(paths)
	return paths
}

// topLevel returns the generated value of the root schema's property name, or false
// when the schema has no such property. apiVersion, kind and metadata are the caller's.
func (g *schemaGenerator) topLevel(root schemaNode, name string) (any, bool) {
	s, ok := properties(root)[name]
	if !ok {
		return nil, false
	}
	return g.value(s, "."+name, 1), true
}

// value returns a random value valid for s, the schema at path, at nesting depth depth.
func (g *schemaGenerator) value(s schemaNode, path string, depth int) any {
	g.generated[path] = true
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		return enum[g.rand.IntN(len(enum))]
	}
	if flag(s, "x-kubernetes-int-or-string") {
		return g.intOrString()
	}
	if flag(s, "x-kubernetes-embedded-resource") {
		obj := g.object(s, path, depth)
		obj["apiVersion"] = "v1"
		obj["kind"] = "ConfigMap"
		obj["metadata"] = map[string]any{"name": g.dnsLabel()}
		return obj
	}
	switch s["type"] {
	case "object":
		return g.object(s, path, depth)
	case "array":
		return g.array(s, path, depth)
	case "string":
		return g.string(s)
	case "integer":
		return g.integer(s)
	case "number":
		return math.Round(g.rand.Float64()*10000) / 100
	case "boolean":
		return g.rand.IntN(2) == 0
	}
	if flag(s, "x-kubernetes-preserve-unknown-fields") {
		return g.freeform(depth)
	}
	panic(fmt.Sprintf("schema generator: no type in %v", s))
}

// object generates the properties of s — required ones and those with a default always,
// optional ones at random — and the entries of a map schema. Unknown fields of a
// preserve-unknown-fields object are left out: they would only be kept as sent.
//
// A defaulted property gets a value other than its type's zero value: the API server
// would otherwise add the default, and a zero value may be left out by the Go types'
// omitempty encoding (bosun's conversion decodes objects into them) and then defaulted
// too. Either way the object read back would not be the one sent, through no fault of a
// conversion.
func (g *schemaGenerator) object(s schemaNode, path string, depth int) map[string]any {
	obj := map[string]any{}
	required := stringList(s["required"])
	props := properties(s)
	for _, name := range sortedKeys(props) {
		prop := props[name]
		if _, hasDefault := prop["default"]; hasDefault {
			obj[name] = g.nonZeroValue(prop, path+"."+name, depth+1)
			continue
		}
		optionalHere := depth < g.maxOptionalDepth && g.rand.IntN(2) == 0
		if slices.Contains(required, name) || optionalHere {
			obj[name] = g.value(prop, path+"."+name, depth+1)
		}
	}
	if additional, ok := s["additionalProperties"].(schemaNode); ok {
		lo, hi := intBound(s, "minProperties", 0), intBound(s, "maxProperties", math.MaxInt)
		n := g.count(lo, hi, depth)
		for tries := 0; len(obj) < n && tries < 4*n; tries++ {
			key := g.word(1, 10)
			if _, taken := obj[key]; !taken {
				obj[key] = g.value(additional, path+"{}", depth+1)
			}
		}
	}
	return obj
}

// nonZeroValue is value, drawn again while it is empty, zero or false.
func (g *schemaGenerator) nonZeroValue(s schemaNode, path string, depth int) any {
	v := g.value(s, path, depth)
	for tries := 0; isZero(v) && tries < 20; tries++ {
		v = g.value(s, path, depth)
	}
	return v
}

func isZero(v any) bool {
	switch v := v.(type) {
	case string:
		return v == ""
	case int64:
		return v == 0
	case float64:
		return v == 0
	case bool:
		return !v
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return v == nil
}

// array generates items of s, keeping the keys of a list-type map list and the items of
// a list-type set list unique.
func (g *schemaGenerator) array(s schemaNode, path string, depth int) []any {
	items, _ := s["items"].(schemaNode)
	lo, hi := intBound(s, "minItems", 0), intBound(s, "maxItems", math.MaxInt)
	n := g.count(lo, hi, depth)
	listType, _ := s["x-kubernetes-list-type"].(string)
	mapKeys := stringList(s["x-kubernetes-list-map-keys"])
	seen := map[string]bool{}
	out := []any{}
	for tries := 0; len(out) < n && tries < 10*(n+1); tries++ {
		item := g.value(items, path+"[]", depth+1)
		identity := ""
		switch listType {
		case "map":
			key := map[string]any{}
			if obj, ok := item.(map[string]any); ok {
				for _, k := range mapKeys {
					key[k] = obj[k]
				}
			}
			identity = mustJSON(key)
		case "set":
			identity = mustJSON(item)
		}
		if identity != "" {
			if seen[identity] {
				continue
			}
			seen[identity] = true
		}
		out = append(out, item)
	}
	return out
}

// count picks how many items or entries to make: at least lo, at most hi, and few.
func (g *schemaGenerator) count(lo, hi, depth int) int {
	if depth >= g.maxOptionalDepth {
		return lo
	}
	top := min(hi, lo+g.maxItems)
	if top <= lo {
		return lo
	}
	return lo + g.rand.IntN(top-lo+1)
}

func (g *schemaGenerator) integer(s schemaNode) int64 {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if s["format"] == "int32" {
		lo, hi = math.MinInt32, math.MaxInt32
	}
	if m, ok := s["minimum"].(float64); ok {
		bound := int64(math.Ceil(m))
		if flag(s, "exclusiveMinimum") && float64(bound) == m {
			bound++
		}
		lo = max(lo, bound)
	}
	if m, ok := s["maximum"].(float64); ok {
		bound := int64(math.Floor(m))
		if flag(s, "exclusiveMaximum") && float64(bound) == m {
			bound--
		}
		hi = min(hi, bound)
	}
	switch g.rand.IntN(4) {
	case 0: // the lower bound itself
		return lo
	case 1: // a small number, the common case
		small := min(max(int64(g.rand.IntN(20)), lo), hi)
		return small
	default: // anywhere in range
		span := uint64(hi - lo)
		if span == math.MaxUint64 {
			return int64(g.rand.Uint64())
		}
		return lo + int64(g.rand.Uint64N(span+1))
	}
}

func (g *schemaGenerator) intOrString() any {
	switch g.rand.IntN(3) {
	case 0:
		return int64(g.rand.IntN(10))
	case 1:
		return fmt.Sprintf("%d%%", g.rand.IntN(101))
	default:
		return g.text(0, 6)
	}
}

// string honours format, pattern and length bounds.
func (g *schemaGenerator) string(s schemaNode) string {
	lo, hi := intBound(s, "minLength", 0), intBound(s, "maxLength", math.MaxInt)
	switch s["format"] {
	case "date-time":
		return g.timestamp()
	case "date":
		return time.Unix(g.rand.Int64N(4e9), 0).UTC().Format(time.DateOnly)
	case "byte":
		b := make([]byte, g.rand.IntN(8))
		for i := range b {
			b[i] = byte(g.rand.IntN(256))
		}
		return base64.StdEncoding.EncodeToString(b)
	case "uuid":
		return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", g.rand.Uint32(), g.rand.IntN(1<<16),
			g.rand.IntN(1<<12), g.rand.IntN(1<<12), g.rand.Uint64N(1<<48))
	}
	if pattern, ok := s["pattern"].(string); ok {
		re := regexp.MustCompile(pattern)
		var candidate string
		for range 50 {
			candidate = g.word(max(lo, 1), max(min(hi, lo+8), 1))
			if re.MatchString(candidate) {
				return candidate
			}
		}
		return candidate // refused by the API server, and the caller tries another object
	}
	return g.text(lo, min(hi, lo+8))
}

// timestamp is an RFC 3339 time in UTC, in seconds as metav1.Time encodes it, between
// 1971 and 2096 (a zero time would be encoded as null).
func (g *schemaGenerator) timestamp() string {
	return time.Unix(3e7+g.rand.Int64N(4e9), 0).UTC().Format(time.RFC3339)
}

// freeform is a small object for a schemaless (preserve-unknown-fields) part: a few
// fields of scalar values.
func (g *schemaGenerator) freeform(depth int) map[string]any {
	obj := map[string]any{}
	for range g.count(0, 3, depth) {
		key := "x" + g.word(1, 6)
		switch g.rand.IntN(4) {
		case 0:
			obj[key] = g.text(0, 6)
		case 1:
			obj[key] = int64(g.rand.IntN(1000))
		case 2:
			obj[key] = g.rand.IntN(2) == 0
		default:
			obj[key] = map[string]any{"x" + g.word(1, 4): g.text(0, 4)}
		}
	}
	return obj
}

const (
	alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	lower = "abcdefghijklmnopqrstuvwxyz0123456789"
)

// textRunes are what free text is made of: letters and digits mostly, then punctuation,
// space, and characters beyond ASCII.
var textRunes = []rune(alnum + alnum + " -_.,:;/=+%\"\\'é世")

// text is a free string of lo to hi runes.
func (g *schemaGenerator) text(lo, hi int) string {
	n := lo
	if hi > lo {
		n += g.rand.IntN(hi - lo + 1)
	}
	out := make([]rune, n)
	for i := range out {
		out[i] = textRunes[g.rand.IntN(len(textRunes))]
	}
	return string(out)
}

// word is lo to hi letters and digits, starting with a letter.
func (g *schemaGenerator) word(lo, hi int) string {
	n := lo
	if hi > lo {
		n += g.rand.IntN(hi - lo + 1)
	}
	if n == 0 {
		return ""
	}
	b := []byte{alnum[g.rand.IntN(52)]}
	for len(b) < n {
		b = append(b, alnum[g.rand.IntN(len(alnum))])
	}
	return string(b)
}

// dnsLabel is a short lower-case DNS label.
func (g *schemaGenerator) dnsLabel() string {
	n := 1 + g.rand.IntN(8)
	b := []byte{lower[g.rand.IntN(26)]}
	for len(b) < n {
		b = append(b, lower[g.rand.IntN(len(lower))])
	}
	return string(b)
}

func properties(s schemaNode) map[string]schemaNode {
	raw, _ := s["properties"].(map[string]any)
	props := make(map[string]schemaNode, len(raw))
	for name, p := range raw {
		if node, ok := p.(schemaNode); ok {
			props[name] = node
		}
	}
	return props
}

func flag(s schemaNode, name string) bool {
	v, _ := s[name].(bool)
	return v
}

func intBound(s schemaNode, name string, fallback int) int {
	if v, ok := s[name].(float64); ok {
		return int(v)
	}
	return fallback
}

func stringList(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, item := range list {
		if s, ok := item.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func mustJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// qualifiedName is a label or annotation key: an optional DNS-subdomain prefix and a
// name of letters, digits and -_. that starts and ends with a letter or digit.
func (g *schemaGenerator) qualifiedName() string {
	name := g.word(1, 1)
	if middle := g.rand.IntN(8); middle > 0 {
		name += strings.Repeat("-", g.rand.IntN(2)) + g.word(middle, middle)
	}
	switch g.rand.IntN(3) {
	case 0:
		return name
	case 1:
		return "example.com/" + name
	default:
		return g.dnsLabel() + ".test/" + name
	}
}

// labelValue is a valid label value: empty, or up to 63 letters, digits and -_. that
// start and end with a letter or digit.
func (g *schemaGenerator) labelValue() string {
	if g.rand.IntN(5) == 0 {
		return ""
	}
	v := g.word(1, 6)
	if g.rand.IntN(2) == 0 {
		v += "." + g.word(1, 4)
	}
	return v
}
