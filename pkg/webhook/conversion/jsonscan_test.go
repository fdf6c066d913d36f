package conversion

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestObjectMembers(t *testing.T) {
	doc := []byte(` { "a" : 1 ,"b\"{":"}\\\"]" , "c":{"x":[1,{"y":"]}"}],"z":null},"d":[ ],"e":-1.5e3,"f":true, "\u0067":"g"} `)
	members, err := objectMembers(doc)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	var names []string
	for _, m := range members {
		names = append(names, m.name)
		got[m.name] = string(m.value(doc))
		if doc[m.start] != '"' {
			t.Errorf("member %q starts at %q", m.name, doc[m.start:])
		}
	}
	want := map[string]string{
		"a": "1", `b"{`: `"}\\\"]"`, "c": `{"x":[1,{"y":"]}"}],"z":null}`, "d": "[ ]", "e": "-1.5e3", "f": "true", "g": `"g"`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", `b"{`, "c", "d", "e", "f", "g"}, names); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}

	for _, doc := range []string{`{}`, ` { } `} {
		if members, err := objectMembers([]byte(doc)); err != nil || len(members) != 0 {
			t.Errorf("objectMembers(%s) = %v, %v; want no members", doc, members, err)
		}
	}
	for _, bad := range []string{``, `[]`, `"a"`, `null`, `{`, `{"a"`, `{"a":`, `{"a":1`, `{"a":"x}`, `{"a":[1,2}`, `{"a":1 "b":2}`, `{a:1}`, `{"a" 1}`} {
		if _, err := objectMembers([]byte(bad)); err == nil {
			t.Errorf("objectMembers(%q) succeeded", bad)
		}
	}
}

// FuzzObjectMembers: on any input objectMembers neither panics nor reads out of bounds, and
// on a JSON object it finds what encoding/json finds.
func FuzzObjectMembers(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"a":1}`, `{"a":"\"}","b":[{"c":"]"}]}`, `{"a":1,"a":2}`, `{"spec":{"template":{"x":[]}}}`,
		`{"a":1`, `["a"]`, `{"\u00e9":"é"}`, ` {"a" : null , "b":false}`, `{"a":"\\"}`, "{\"\xd3\":0}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		members, err := objectMembers(data)
		var want map[string]json.RawMessage
		if json.Unmarshal(data, &want) != nil || bytes.HasPrefix(bytes.TrimSpace(data), []byte("null")) {
			return // not an object: objectMembers may fail or not, but must not panic
		}
		if err != nil {
			t.Fatalf("objectMembers(%q) failed on a JSON object: %v", data, err)
		}
		got := map[string]json.RawMessage{}
		for _, m := range members {
			got[m.name] = m.value(data)
		}
		if len(got) != len(want) {
			t.Fatalf("objectMembers(%q) found %d names, encoding/json %d", data, len(got), len(want))
		}
		for name, value := range want {
			var a, b bytes.Buffer
			if json.Compact(&a, value) != nil || json.Compact(&b, got[name]) != nil || a.String() != b.String() {
				t.Fatalf("objectMembers(%q): %q is %q, encoding/json says %q", data, name, got[name], value)
			}
		}
	})
}

// TestPutTemplate: the template goes where the Go type wrote its own, or goes away with
// the comma that separated it from its neighbours.
func TestPutTemplate(t *testing.T) {
	tests := []struct {
		obj, template, want string
	}{
		{`{"spec":{"a":1,"template":{},"b":2},"status":{}}`, `{"x":[1]}`, `{"spec":{"a":1,"template":{"x":[1]},"b":2},"status":{}}`},
		{`{"spec":{"a":1,"template":{},"b":2}}`, ``, `{"spec":{"a":1,"b":2}}`},
		{`{"spec":{"template":{},"b":2}}`, ``, `{"spec":{"b":2}}`},
		{`{"spec":{"a":1,"template":{}}}`, ``, `{"spec":{"a":1}}`},
		{`{"spec":{"template":{}}}`, ``, `{"spec":{}}`},
		{`{"spec":{"template":{}}}`, `null`, `{"spec":{"template":null}}`},
	}
	for _, tt := range tests {
		var template []byte
		if tt.template != "" {
			template = []byte(tt.template)
		}
		got, err := putTemplate([]byte(tt.obj), template)
		if err != nil || string(got) != tt.want {
			t.Errorf("putTemplate(%s, %s) = %s, %v; want %s", tt.obj, tt.template, got, err, tt.want)
		}
		if err == nil && !json.Valid(got) {
			t.Errorf("putTemplate(%s, %s) wrote malformed JSON %s", tt.obj, tt.template, got)
		}
	}
	if _, err := putTemplate([]byte(`{"spec":{"a":1}}`), []byte(`{}`)); err == nil {
		t.Error("putTemplate succeeded without a template to replace")
	}
}

// TestCutTemplate: the template is taken out and decodes as absent; every occurrence is,
// should spec or template be named twice.
func TestCutTemplate(t *testing.T) {
	tests := []struct {
		obj, body, template string
	}{
		{`{"spec":{"template":{"a":[1]},"b":2}}`, `{"spec":{"template":null,"b":2}}`, `{"a":[1]}`},
		{`{"spec":{"b":2}}`, `{"spec":{"b":2}}`, ``},
		{`{"spec":null}`, `{"spec":null}`, ``},
		{`{"kind":"DaemonSet"}`, `{"kind":"DaemonSet"}`, ``},
		{`{"spec":{"template":1,"template":{"x":2}},"spec":{"template":3}}`, `{"spec":{"template":null,"template":null},"spec":{"template":null}}`, `3`},
	}
	for _, tt := range tests {
		members, err := objectMembers([]byte(tt.obj))
		if err != nil {
			t.Fatal(err)
		}
		body, template, err := cutTemplate([]byte(tt.obj), members)
		if err != nil || string(body) != tt.body || string(template) != tt.template {
			t.Errorf("cutTemplate(%s) = %s, %s, %v; want %s, %s", tt.obj, body, template, err, tt.body, tt.template)
		}
	}
	members, _ := objectMembers([]byte(`{"spec":[]}`))
	if _, _, err := cutTemplate([]byte(`{"spec":[]}`), members); err == nil {
		t.Error("cutTemplate succeeded on a spec that is not an object")
	}
}
