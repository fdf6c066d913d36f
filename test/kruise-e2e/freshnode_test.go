package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// Each fresh-node run must select its one spec and nothing else: the v1alpha1 spec's text
// begins the v1beta1 ones', and Ginkgo matches a focus anywhere in a spec's text.
func TestExactlyMatchesWholeSpecTextsOnly(t *testing.T) {
	texts := specTexts(freshNodeSpecs)
	if len(texts) != 3 {
		t.Fatalf("texts %q, want the three distinct texts", texts)
	}
	all := append(slices.Clone(texts), "PullImage ImagePullJob pulling images functionality [ImagePullJob] never completion pull job with updated pull secrets")
	for i, text := range texts {
		focus := regexp.MustCompile(exactly(text))
		for _, other := range all {
			if got, want := focus.MatchString(other), other == texts[i]; got != want {
				t.Errorf("focus %s on %q: %v, want %v", focus, other, got, want)
			}
		}
	}
	skip := regexp.MustCompile(exactly(texts...))
	for _, text := range all {
		if got, want := skip.MatchString(text), slices.Contains(texts, text); got != want {
			t.Errorf("skip %s on %q: %v, want %v", skip, text, got, want)
		}
	}
}

// Every fresh-node spec is left out of the main run and runs in a part of its own, on a
// cluster directory of its own; a -focus runs as one part.
func TestPartsIsolateTheFreshNodeSpecs(t *testing.T) {
	ps := parts(options{}, nil)
	if len(ps) != 1+len(specTexts(freshNodeSpecs)) {
		t.Fatalf("%d parts, want the main run and one per fresh-node spec", len(ps))
	}
	dirs := map[string]bool{}
	for _, p := range ps {
		if dirs[p.dir] {
			t.Errorf("two parts share the cluster directory %s", p.dir)
		}
		dirs[p.dir] = true
	}
	if ps[0].focus != "" || ps[0].skip != exactly(specTexts(freshNodeSpecs)...) {
		t.Errorf("main part %+v, want no focus and every fresh-node spec skipped", ps[0])
	}
	for i, text := range specTexts(freshNodeSpecs) {
		if p := ps[i+1]; p.focus != exactly(text) || p.skip != "" {
			t.Errorf("part %+v, want focused on %q alone", p, text)
		}
	}
	if focused := parts(options{focus: "DaemonSet"}, nil); len(focused) != 1 || focused[0].focus != "DaemonSet" || focused[0].skip != "" {
		t.Errorf("with -focus: %+v, want one part with that focus", focused)
	}
}

// The fresh-node specs are specs of the expectation file.
func TestFreshNodeSpecsAreExpected(t *testing.T) {
	expected := readExpectationsFile(t)
	for _, s := range freshNodeSpecs {
		if _, ok := expected[s]; !ok {
			t.Errorf("%s is not in expectations.txt", s)
		}
	}
}

func readExpectationsFile(t *testing.T) map[specKey]expectation {
	t.Helper()
	f, err := os.Open("expectations.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	expected, err := parseExpectations(f)
	if err != nil {
		t.Fatal(err)
	}
	return expected
}

// Each part, handed to OpenKruise's suite itself (a dry run of the binary hack/build-kruise.sh
// builds; skipped when it is not built), selects what it should: the main part every spec
// of the label filter but the fresh-node specs, each fresh-node part its one spec.
func TestPartsSelectTheirSpecsInTheSuite(t *testing.T) {
	binary, err := framework.ToolPath("kruise-e2e.test")
	if err != nil {
		t.Skipf("OpenKruise's suite is not built (hack/build-kruise.sh kruise-e2e.test): %v", err)
	}
	selected := func(p part) []specKey {
		t.Helper()
		report := filepath.Join(t.TempDir(), "report.json")
		args := []string{"--ginkgo.dry-run", "--ginkgo.label-filter=" + defaultLabelFilter, "--ginkgo.json-report=" + report}
		if p.focus != "" {
			args = append(args, "--ginkgo.focus="+p.focus)
		}
		if p.skip != "" {
			args = append(args, "--ginkgo.skip="+p.skip)
		}
		cmd := exec.Command(binary, args...)
		cmd.Dir = t.TempDir()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("dry run of %s: %v\n%s", p.name, err, out)
		}
		outcomes, err := readOutcomes(report)
		if err != nil {
			t.Fatal(err)
		}
		var keys []specKey
		for _, o := range outcomes {
			if o.state != "skipped" {
				keys = append(keys, o.key)
			}
		}
		return keys
	}
	ps := parts(options{}, nil)
	expected := readExpectationsFile(t)
	main := selected(ps[0])
	if len(main) != len(expected)-len(freshNodeSpecs) {
		t.Errorf("the main part selects %d specs, want the %d of the expectation file but the %d fresh-node ones", len(main), len(expected), len(freshNodeSpecs))
	}
	for _, key := range main {
		if slices.Contains(freshNodeSpecs, key) {
			t.Errorf("the main part selects %s", key)
		}
	}
	for i, p := range ps[1:] {
		if got := selected(p); len(got) != 1 || got[0] != freshNodeSpecs[i] {
			t.Errorf("part %s selects %v, want %s alone", p.name, got, freshNodeSpecs[i])
		}
	}

	// -expected-passes-only: the main part selects every spec expected to pass but the
	// fresh-node ones, and otherwise only `not yet` twins of passing specs.
	passing := map[string]bool{}
	for key, e := range expected {
		passing[key.text] = passing[key.text] || e.pass
	}
	onlyPasses := parts(options{passesOnly: true}, expected)
	chosen := selected(onlyPasses[0])
	for key, e := range expected {
		if e.pass && !slices.Contains(freshNodeSpecs, key) && !slices.Contains(chosen, key) {
			t.Errorf("with -expected-passes-only the main part leaves out %s, which is expected to pass", key)
		}
	}
	for _, key := range chosen {
		if !passing[key.text] || slices.Contains(freshNodeSpecs, key) {
			t.Errorf("with -expected-passes-only the main part selects %s", key)
		}
	}
}

// With -expected-passes-only the main run leaves out every text no spec is expected to
// pass with (a `not yet` twin of a passing spec stays in: Ginkgo selects by text), and a
// fresh-node spec gets its own cluster only when it is expected to pass.
func TestPartsWithExpectedPassesOnly(t *testing.T) {
	fresh := specTexts(freshNodeSpecs)
	expected := map[specKey]expectation{
		{file: "apps/v1alpha1/a.go", text: "A passes"}:               {pass: true},
		{file: "apps/v1alpha1/b.go", text: "B twin"}:                 {pass: true},
		{file: "apps/v1beta1/b.go", text: "B twin"}:                  {notYet: "v1beta1 only"},
		{file: "apps/v1alpha1/c.go", text: "C not yet"}:              {notYet: "later"},
		{file: freshNodeSpecs[0].file, text: fresh[0]}:               {pass: true},
		{file: freshNodeSpecs[1].file, text: freshNodeSpecs[1].text}: {notYet: "later"},
	}
	ps := parts(options{passesOnly: true}, expected)
	skip := regexp.MustCompile(ps[0].skip)
	for text, want := range map[string]bool{"A passes": false, "B twin": false, "C not yet": true,
		fresh[0]: true, freshNodeSpecs[1].text: true} {
		if got := skip.MatchString(text); got != want {
			t.Errorf("main part skips %q: %v, want %v", text, got, want)
		}
	}
	if len(ps) != 2 || ps[1].focus != exactly(fresh[0]) {
		t.Errorf("parts %+v, want the main run and one fresh node for %q", ps, fresh[0])
	}
}

// -skip leaves its specs out of every part: the main run skips them besides its own, and
// a fresh-node spec it matches gets no cluster.
func TestPartsWithSkip(t *testing.T) {
	fresh := specTexts(freshNodeSpecs)
	expected := map[specKey]expectation{
		{file: "apps/v1alpha1/a.go", text: "A with a cloneSet"}: {pass: true},
		{file: "apps/v1alpha1/b.go", text: "B alone"}:           {pass: true},
		{file: freshNodeSpecs[0].file, text: fresh[0]}:          {pass: true},
	}
	ps := parts(options{passesOnly: true, skip: "cloneSet|" + regexp.QuoteMeta(fresh[0])}, expected)
	if len(ps) != 1 {
		t.Fatalf("parts %+v, want the main run only: the fresh-node spec is skipped", ps)
	}
	skip := regexp.MustCompile(ps[0].skip)
	for text, want := range map[string]bool{"A with a cloneSet": true, "B alone": false} {
		if got := skip.MatchString(text); got != want {
			t.Errorf("main part skips %q: %v, want %v", text, got, want)
		}
	}
	if focused := parts(options{focus: "DaemonSet", skip: "cloneSet"}, nil); focused[0].skip != "cloneSet" {
		t.Errorf("focused part skips %q, want the -skip expression", focused[0].skip)
	}
}

// -without-fresh-nodes runs the main part alone, which still leaves the fresh-node specs
// out: on the shared node they would fail for want of a node without their image.
func TestPartsWithoutFreshNodes(t *testing.T) {
	fresh := specTexts(freshNodeSpecs)
	expected := map[specKey]expectation{
		{file: "apps/v1alpha1/a.go", text: "A passes"}: {pass: true},
		{file: freshNodeSpecs[0].file, text: fresh[0]}: {pass: true},
	}
	for _, o := range []options{{withoutFreshNodes: true}, {withoutFreshNodes: true, passesOnly: true}} {
		ps := parts(o, expected)
		if len(ps) != 1 {
			t.Fatalf("parts(%+v) = %+v, want the main run only", o, ps)
		}
		skip := regexp.MustCompile(ps[0].skip)
		for _, text := range fresh {
			if !skip.MatchString(text) {
				t.Errorf("parts(%+v): the main run does not skip %q", o, text)
			}
		}
		if skip.MatchString("A passes") {
			t.Errorf("parts(%+v): the main run skips %q", o, "A passes")
		}
	}
}
