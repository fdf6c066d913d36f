package webhook

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCreateJSONPatch(t *testing.T) {
	tests := []struct {
		name     string
		from, to string
		want     string
	}{
		{name: "equal", from: `{"a":1,"b":[1,2],"c":{"d":null}}`, to: `{"c":{"d":null},"b":[1,2],"a":1}`, want: `null`},
		{name: "add", from: `{"a":1}`, to: `{"a":1,"b":{"c":true}}`,
			want: `[{"op":"add","path":"/b","value":{"c":true}}]`},
		{name: "remove", from: `{"a":1,"b":2}`, to: `{"a":1}`,
			want: `[{"op":"remove","path":"/b"}]`},
		{name: "replace", from: `{"a":1,"b":"x"}`, to: `{"a":2,"b":"x"}`,
			want: `[{"op":"replace","path":"/a","value":2}]`},
		{name: "nested, in key order", from: `{"m":{"z":1,"y":2,"x":3},"a":{"b":{"c":"d"}}}`, to: `{"m":{"z":1,"w":4,"x":30},"a":{"b":{}}}`,
			want: `[{"op":"remove","path":"/a/b/c"},{"op":"add","path":"/m/w","value":4},` +
				`{"op":"replace","path":"/m/x","value":30},{"op":"remove","path":"/m/y"}]`},
		{name: "changed array replaced whole", from: `{"l":[{"n":"a"},{"n":"b"}]}`, to: `{"l":[{"n":"a"},{"n":"c"}]}`,
			want: `[{"op":"replace","path":"/l","value":[{"n":"a"},{"n":"c"}]}]`},
		{name: "equal arrays of objects", from: `{"l":[{"n":"a","v":[1]}]}`, to: `{"l":[{"v":[1],"n":"a"}]}`, want: `null`},
		{name: "null values are written", from: `{"a":1}`, to: `{"a":null,"b":null}`,
			want: `[{"op":"replace","path":"/a","value":null},{"op":"add","path":"/b","value":null}]`},
		{name: "null replaced", from: `{"a":null}`, to: `{"a":{"b":1}}`,
			want: `[{"op":"replace","path":"/a","value":{"b":1}}]`},
		{name: "type change", from: `{"a":{"b":1}}`, to: `{"a":"b"}`,
			want: `[{"op":"replace","path":"/a","value":"b"}]`},
		{name: "keys escaped", from: `{"metadata":{"annotations":{"a/b":"1"}}}`,
			to: `{"metadata":{"annotations":{"a/b":"2","c~d":"3","~1":"4","":"5"}}}`,
			want: `[{"op":"add","path":"/metadata/annotations/","value":"5"},` +
				`{"op":"replace","path":"/metadata/annotations/a~1b","value":"2"},` +
				`{"op":"add","path":"/metadata/annotations/c~0d","value":"3"},` +
				`{"op":"add","path":"/metadata/annotations/~01","value":"4"}]`},
		{name: "numbers kept digit for digit", from: `{"a":9007199254740993,"b":1.5}`, to: `{"a":9007199254740995,"b":1.5}`,
			want: `[{"op":"replace","path":"/a","value":9007199254740995}]`},
		{name: "equal numbers spelled differently", from: `{"a":1}`, to: `{"a":1.0}`,
			want: `[{"op":"replace","path":"/a","value":1.0}]`},
		{name: "root replaced", from: `[1]`, to: `{"a":1}`,
			want: `[{"op":"replace","path":"","value":{"a":1}}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from, err := decodeJSONDocument([]byte(tt.from))
			if err != nil {
				t.Fatal(err)
			}
			to, err := decodeJSONDocument([]byte(tt.to))
			if err != nil {
				t.Fatal(err)
			}

			ops, err := createJSONPatch(from, to)
			if err != nil {
				t.Fatalf("createJSONPatch: %v", err)
			}

			patch, err := json.Marshal(ops)
			if err != nil {
				t.Fatal(err)
			}
			if string(patch) != tt.want {
				t.Errorf("patch\n%s\nwant\n%s", patch, tt.want)
			}
			if len(ops) == 0 {
				return
			}
			patched, err := applyJSONPatch([]byte(tt.from), patch)
			if err != nil {
				t.Fatalf("applying the patch: %v", err)
			}
			if diff := cmp.Diff(canonicalJSON(t, []byte(tt.to)), canonicalJSON(t, patched)); diff != "" {
				t.Errorf("patched document differs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeJSONDocument(t *testing.T) {
	for _, bad := range []string{``, `{`, `{"a":1}{}`, `{"a":1} x`, `nul`} {
		if _, err := decodeJSONDocument([]byte(bad)); err == nil {
			t.Errorf("%q decoded without error", bad)
		}
	}
	if _, err := decodeJSONDocument([]byte(" {\"a\":1}\n")); err != nil {
		t.Errorf("white space around a document: %v", err)
	}
}
