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

var (
	templateField = schemalessField{name: "template"}
	claimsField   = schemalessField{name: "volumeClaimTemplates", omitempty: true}
)

// TestPutSpecField: a field goes where the Go type wrote its own, or goes away with the
// comma that separated it from its neighbours; a field the Go type leaves out when empty is
// added at the end of spec.
func TestPutSpecField(t *testing.T) {
	tests := []struct {
		field            schemalessField
		obj, value, want string
	}{
		{templateField, `{"spec":{"a":1,"template":{},"b":2},"status":{}}`, `{"x":[1]}`, `{"spec":{"a":1,"template":{"x":[1]},"b":2},"status":{}}`},
		{templateField, `{"spec":{"a":1,"template":{},"b":2}}`, ``, `{"spec":{"a":1,"b":2}}`},
		{templateField, `{"spec":{"template":{},"b":2}}`, ``, `{"spec":{"b":2}}`},
		{templateField, `{"spec":{"a":1,"template":{}}}`, ``, `{"spec":{"a":1}}`},
		{templateField, `{"spec":{"template":{}}}`, ``, `{"spec":{}}`},
		{templateField, `{"spec":{"template":{}}}`, `null`, `{"spec":{"template":null}}`},
		{claimsField, `{"spec":{"template":{},"volumeClaimTemplates":[{}]}}`, `[{"x":1}]`, `{"spec":{"template":{},"volumeClaimTemplates":[{"x":1}]}}`},
		{claimsField, `{"spec":{"template":{},"b":2},"status":{}}`, `[{"x":1}]`, `{"spec":{"template":{},"b":2,"volumeClaimTemplates":[{"x":1}]},"status":{}}`},
		{claimsField, `{"spec":{},"status":{}}`, `[]`, `{"spec":{"volumeClaimTemplates":[]},"status":{}}`},
		{claimsField, `{"spec":{"template":{}}}`, `null`, `{"spec":{"template":{},"volumeClaimTemplates":null}}`},
		{claimsField, `{"spec":{"template":{}}}`, ``, `{"spec":{"template":{}}}`},
		{claimsField, `{"spec":{"volumeClaimTemplates":[],"b":2}}`, ``, `{"spec":{"b":2}}`},
	}
	for _, tt := range tests {
		var value []byte
		if tt.value != "" {
			value = []byte(tt.value)
		}
		got, err := putSpecField([]byte(tt.obj), tt.field, value)
		if err != nil || string(got) != tt.want {
			t.Errorf("putSpecField(%s, %s, %s) = %s, %v; want %s", tt.obj, tt.field.name, tt.value, got, err, tt.want)
		}
		if err == nil && !json.Valid(got) {
			t.Errorf("putSpecField(%s, %s, %s) wrote malformed JSON %s", tt.obj, tt.field.name, tt.value, got)
		}
	}
	if _, err := putSpecField([]byte(`{"spec":{"a":1}}`), templateField, []byte(`{}`)); err == nil {
		t.Error("putSpecField succeeded without a template to replace")
	}
	if _, err := putSpecField([]byte(`{"status":{}}`), claimsField, []byte(`[]`)); err == nil {
		t.Error("putSpecField succeeded without a spec to add to")
	}
}

// TestCutSpecFields: the fields are taken out and decode as absent; every occurrence is,
// should spec or a field be named twice, the last one being kept.
func TestCutSpecFields(t *testing.T) {
	both := []schemalessField{templateField, claimsField}
	tests := []struct {
		obj, body, template, claims string
	}{
		{`{"spec":{"template":{"a":[1]},"b":2}}`, `{"spec":{"template":null,"b":2}}`, `{"a":[1]}`, ``},
		{`{"spec":{"b":2}}`, `{"spec":{"b":2}}`, ``, ``},
		{`{"spec":null}`, `{"spec":null}`, ``, ``},
		{`{"kind":"DaemonSet"}`, `{"kind":"DaemonSet"}`, ``, ``},
		{`{"spec":{"template":1,"template":{"x":2}},"spec":{"template":3}}`, `{"spec":{"template":null,"template":null},"spec":{"template":null}}`, `3`, ``},
		{`{"spec":{"volumeClaimTemplates":[{"y":1}],"template":{},"b":2}}`, `{"spec":{"volumeClaimTemplates":null,"template":null,"b":2}}`, `{}`, `[{"y":1}]`},
	}
	for _, tt := range tests {
		members, err := objectMembers([]byte(tt.obj))
		if err != nil {
			t.Fatal(err)
		}
		body, cut, err := cutSpecFields([]byte(tt.obj), members, both)
		if err != nil || string(body) != tt.body || string(cut["template"]) != tt.template || string(cut["volumeClaimTemplates"]) != tt.claims {
			t.Errorf("cutSpecFields(%s) = %s, %s, %s, %v; want %s, %s, %s", tt.obj, body, cut["template"], cut["volumeClaimTemplates"], err,
				tt.body, tt.template, tt.claims)
		}
	}
	// Only the fields asked for.
	body, cut, err := cutSpecFields([]byte(`{"spec":{"template":{},"volumeClaimTemplates":[]}}`),
		mustMembers(t, `{"spec":{"template":{},"volumeClaimTemplates":[]}}`), []schemalessField{templateField})
	if err != nil || string(body) != `{"spec":{"template":null,"volumeClaimTemplates":[]}}` || len(cut) != 1 {
		t.Errorf("cutSpecFields of the template only = %s, %v, %v", body, cut, err)
	}
	members, _ := objectMembers([]byte(`{"spec":[]}`))
	if _, _, err := cutSpecFields([]byte(`{"spec":[]}`), members, both); err == nil {
		t.Error("cutSpecFields succeeded on a spec that is not an object")
	}
}

func mustMembers(t *testing.T, obj string) []member {
	t.Helper()
	members, err := objectMembers([]byte(obj))
	if err != nil {
		t.Fatal(err)
	}
	return members
}
