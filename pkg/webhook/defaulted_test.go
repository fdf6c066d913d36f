package webhook

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
)

// applyAdditions applies additions to raw the way the API server applies a webhook's patch.
func applyAdditions(t *testing.T, raw string, additions []Addition) string {
	t.Helper()
	resp, err := AdditionsResponse(additions)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Patch) == 0 {
		return raw
	}
	patch, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		t.Fatalf("decoding the patch %s: %v", resp.Patch, err)
	}
	out, err := patch.Apply([]byte(raw))
	if err != nil {
		t.Fatalf("applying the patch %s to %s: %v", resp.Patch, raw, err)
	}
	return string(out)
}

func sameJSON(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

func paths(additions []Addition) string {
	var out []string
	for _, a := range additions {
		out = append(out, a.Path)
	}
	return strings.Join(out, " ")
}

// A template as a user writes it: the typed form adds a null creationTimestamp and empty
// resources, which must not be written back, while each default lands where it belongs.
func TestDefaultedAdditionsPatchOnlyTheDefaults(t *testing.T) {
	raw := `{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx","ports":[{"containerPort":80}]}],"securityContext":null}}`
	var before corev1.PodTemplateSpec
	if err := json.Unmarshal([]byte(raw), &before); err != nil {
		t.Fatal(err)
	}
	after := before.DeepCopy()
	after.Spec.DNSPolicy = corev1.DNSClusterFirst
	after.Spec.SecurityContext = &corev1.PodSecurityContext{}
	after.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways
	after.Spec.Containers[0].Ports[0].Protocol = corev1.ProtocolTCP

	additions, err := DefaultedAdditions([]byte(raw), &before, after)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(additions), "/spec/containers/0/imagePullPolicy /spec/containers/0/ports/0/protocol /spec/dnsPolicy /spec/securityContext"; got != want {
		t.Errorf("patched %s, want %s", got, want)
	}
	sameJSON(t, applyAdditions(t, raw, additions),
		`{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx","imagePullPolicy":"Always","ports":[{"containerPort":80,"protocol":"TCP"}]}],"dnsPolicy":"ClusterFirst","securityContext":{}}}`)
}

// A member the object as received lacks is added whole; a changed element of an array of
// scalars replaces the array; member names are escaped.
func TestDefaultedAdditionsAddWholeMembers(t *testing.T) {
	type inner struct {
		A string `json:"a,omitempty"`
		B string `json:"b,omitempty"`
	}
	type object struct {
		Inner  *inner            `json:"inner,omitempty"`
		List   []string          `json:"list,omitempty"`
		Labels map[string]string `json:"labels,omitempty"`
	}
	raw := `{"list":["x","y"],"labels":{"k":"v"}}`
	before := object{List: []string{"x", "y"}, Labels: map[string]string{"k": "v"}}
	after := object{Inner: &inner{A: "1", B: "2"}, List: []string{"x", "z"}, Labels: map[string]string{"k": "v", "a/b~c": "w"}}
	additions, err := DefaultedAdditions([]byte(raw), before, after)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(additions), "/inner /labels/a~1b~0c /list"; got != want {
		t.Errorf("patched %s, want %s", got, want)
	}
	sameJSON(t, applyAdditions(t, raw, additions), `{"inner":{"a":"1","b":"2"},"list":["x","z"],"labels":{"k":"v","a/b~c":"w"}}`)
}

func TestDefaultedAdditionsNothingChanged(t *testing.T) {
	raw := `{"a":"1"}`
	additions, err := DefaultedAdditions([]byte(raw), map[string]string{"a": "1"}, map[string]string{"a": "1"})
	if err != nil || len(additions) != 0 {
		t.Errorf("got %v, %v; want no additions", additions, err)
	}
}

// Defaults only add: a removal is a mistake of the caller, reported rather than dropped.
func TestDefaultedAdditionsRefuseRemovals(t *testing.T) {
	if _, err := DefaultedAdditions([]byte(`{"a":"1"}`), map[string]string{"a": "1"}, map[string]string{}); err == nil {
		t.Error("a removal was accepted")
	}
}
