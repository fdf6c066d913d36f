package podtemplate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// templateCase is a pod spec with claim templates, as the testdata files hold them.
type templateCase struct {
	Spec   corev1.PodSpec                 `json:"spec"`
	Claims []corev1.PersistentVolumeClaim `json:"claims"`
}

func readCase(t *testing.T, name string) templateCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var c templateCase
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// asJSON is v encoded and decoded generically, so that quantities compare by how they are
// written, which is what the revision hash sees.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// The defaults are exactly OpenKruise's: template-defaulted.json is what OpenKruise 1.9's
// CloneSet webhook makes of template.json (every volume source, init containers with and
// without tags and digests, an image that does not parse, probes, handlers, quantities
// finer than milli-units, an ephemeral container, a hostNetwork pod, claims with and
// without a phase). The revision hash is computed over the defaulted template, so any
// difference here would roll every pod of a CloneSet handed over from OpenKruise.
func TestSetDefaultsAsOpenKruise(t *testing.T) {
	in := readCase(t, "template.json")
	want := readCase(t, "template-defaulted.json")
	SetDefaults(&in.Spec)
	for i := range in.Claims {
		SetClaimDefaults(&in.Claims[i])
	}
	if diff := cmp.Diff(asJSON(t, want), asJSON(t, in)); diff != "" {
		t.Errorf("defaulted template differs from OpenKruise's (-want +got):\n%s", diff)
	}
}

// Defaulting twice changes nothing more: the webhook defaults again on every update that
// changes the template.
func TestSetDefaultsIdempotent(t *testing.T) {
	once := readCase(t, "template.json")
	SetDefaults(&once.Spec)
	for i := range once.Claims {
		SetClaimDefaults(&once.Claims[i])
	}
	twice := readCase(t, "template.json")
	SetDefaults(&twice.Spec)
	SetDefaults(&twice.Spec)
	for i := range twice.Claims {
		SetClaimDefaults(&twice.Claims[i])
		SetClaimDefaults(&twice.Claims[i])
	}
	if diff := cmp.Diff(asJSON(t, once), asJSON(t, twice)); diff != "" {
		t.Errorf("a second defaulting changed the template (-once +twice):\n%s", diff)
	}
}

// What the user set is kept.
func TestSetDefaultsKeepsSetValues(t *testing.T) {
	grace := int64(5)
	spec := corev1.PodSpec{
		DNSPolicy:                     corev1.DNSDefault,
		RestartPolicy:                 corev1.RestartPolicyOnFailure,
		SecurityContext:               &corev1.PodSecurityContext{RunAsUser: &grace},
		TerminationGracePeriodSeconds: &grace,
		SchedulerName:                 "custom",
		Containers: []corev1.Container{{
			Name: "c", Image: "nginx:latest", ImagePullPolicy: corev1.PullIfNotPresent,
			TerminationMessagePath: "/tmp/msg", TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			ReadinessProbe: &corev1.Probe{TimeoutSeconds: 2, PeriodSeconds: 4, SuccessThreshold: 5, FailureThreshold: 6,
				ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Scheme: corev1.URISchemeHTTPS}}},
		}},
	}
	want := spec.DeepCopy()
	SetDefaults(&spec)
	if diff := cmp.Diff(asJSON(t, want), asJSON(t, spec)); diff != "" {
		t.Errorf("set values changed (-want +got):\n%s", diff)
	}
}

// An init container's pull policy follows its tag as upstream reads it; every case here
// gives what OpenKruise 1.9 gives.
func TestPullPolicyForTag(t *testing.T) {
	for image, want := range map[string]corev1.PullPolicy{
		"nginx":                            corev1.PullAlways,
		"nginx:latest":                     corev1.PullAlways,
		"nginx:1.25":                       corev1.PullIfNotPresent,
		"registry.example:5000/a/b":        corev1.PullAlways,
		"registry.example:5000/a/b:v1":     corev1.PullIfNotPresent,
		"nginx@sha256:" + sha256Hex:        corev1.PullIfNotPresent,
		"nginx:latest@sha256:" + sha256Hex: corev1.PullAlways,
		"":                                 corev1.PullIfNotPresent,
		"UPPER/case":                       corev1.PullAlways, // an upper-case first component is a registry
		"Nginx":                            corev1.PullIfNotPresent,
		"nginx:":                           corev1.PullIfNotPresent,
		"nginx@":                           corev1.PullIfNotPresent,
		"nginx:LATEST":                     corev1.PullIfNotPresent,
		"localhost/x":                      corev1.PullAlways,
		"index.docker.io/library/nginx":    corev1.PullAlways,
		"a/b/c:tag":                        corev1.PullIfNotPresent,
	} {
		if got := pullPolicyForTag(image); got != want {
			t.Errorf("pullPolicyForTag(%q) = %s, want %s", image, got, want)
		}
	}
}

const sha256Hex = "0123456789012345678901234567890123456789012345678901234567890123"
