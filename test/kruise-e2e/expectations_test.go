package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const sampleExpectations = `# OpenKruise's suite against bosun
pass | apps/v1alpha1/daemonset.go | DaemonSet should run

not yet: v1beta1 is not served | apps/v1beta1/daemonset.go | DaemonSet should run
pass | policy/v1alpha1/podunavailablebudget.go | PodUnavailableBudget protects
`

func mustParse(t *testing.T, text string) map[specKey]expectation {
	t.Helper()
	e, err := parseExpectations(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parseExpectations: %v", err)
	}
	return e
}

func TestParseExpectations(t *testing.T) {
	got := mustParse(t, sampleExpectations)
	want := map[specKey]expectation{
		{"apps/v1alpha1/daemonset.go", "DaemonSet should run"}:                       {pass: true, line: 2},
		{"apps/v1beta1/daemonset.go", "DaemonSet should run"}:                        {notYet: "v1beta1 is not served", line: 4},
		{"policy/v1alpha1/podunavailablebudget.go", "PodUnavailableBudget protects"}: {pass: true, line: 5},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(expectation{}, specKey{})); diff != "" {
		t.Errorf("expectations (-want +got):\n%s", diff)
	}
}

func TestParseExpectationsRejects(t *testing.T) {
	for name, text := range map[string]string{
		"two fields":      "pass | DaemonSet should run\n",
		"unknown verdict": "flaky | a.go | DaemonSet should run\n",
		"no reason":       "not yet: | a.go | DaemonSet should run\n",
		"empty text":      "pass | a.go |  \n",
		"listed twice":    "pass | a.go | x\nnot yet: later | a.go | x\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := parseExpectations(strings.NewReader(text)); err == nil {
				t.Errorf("parseExpectations(%q) accepted it", text)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	expected := mustParse(t, sampleExpectations+"not yet: CloneSet is not served | apps/v1alpha1/cloneset.go | CloneSet scales\n")
	outcomes := []outcome{
		{key: specKey{"apps/v1alpha1/daemonset.go", "DaemonSet should run"}, passed: true, state: "passed"},
		{key: specKey{"apps/v1beta1/daemonset.go", "DaemonSet should run"}, state: "failed"},
		{key: specKey{"apps/v1alpha1/cloneset.go", "CloneSet scales"}, passed: true, state: "passed"},
		{key: specKey{"apps/v1alpha1/new.go", "New spec"}, state: "failed"},
	}
	v := judge(expected, outcomes)
	if v.passed != 1 || v.notYet != 1 {
		t.Errorf("passed %d, not yet %d; want 1 and 1", v.passed, v.notYet)
	}
	if len(v.unexpectedPasses) != 1 || v.unexpectedPasses[0].key.text != "CloneSet scales" {
		t.Errorf("unexpected passes %v, want the CloneSet spec", v.unexpectedPasses)
	}
	if len(v.unlisted) != 1 || v.unlisted[0].key.text != "New spec" {
		t.Errorf("unlisted %v, want the new spec", v.unlisted)
	}
	if want := []specKey{{"policy/v1alpha1/podunavailablebudget.go", "PodUnavailableBudget protects"}}; !cmp.Equal(want, v.missing, cmp.AllowUnexported(specKey{})) {
		t.Errorf("missing %v, want %v", v.missing, want)
	}
	if v.ok() {
		t.Error("ok() is true for a run with mismatches")
	}
	if got, want := v.tally(), "1 passed, 3 failed, 1 not yet"; got != want {
		t.Errorf("tally %q, want %q", got, want)
	}

	failing := judge(expected, []outcome{
		{key: specKey{"apps/v1alpha1/daemonset.go", "DaemonSet should run"}, state: "timedout", failure: "Timed out"},
		{key: specKey{"apps/v1beta1/daemonset.go", "DaemonSet should run"}, state: "failed"},
		{key: specKey{"apps/v1alpha1/cloneset.go", "CloneSet scales"}, state: "failed"},
		{key: specKey{"policy/v1alpha1/podunavailablebudget.go", "PodUnavailableBudget protects"}, passed: true, state: "passed"},
	})
	if len(failing.failed) != 1 || failing.failed[0].state != "timedout" || failing.ok() {
		t.Errorf("a pass spec that timed out: failed %v, ok %v", failing.failed, failing.ok())
	}
	var out strings.Builder
	writeVerdict(&out, failing, "expectations.txt")
	if want := "FAIL (expected to pass, timedout): apps/v1alpha1/daemonset.go | DaemonSet should run\n    Timed out\n1 passed, 1 failed, 2 not yet\n"; out.String() != want {
		t.Errorf("writeVerdict printed\n%s\nwant\n%s", out.String(), want)
	}
}
