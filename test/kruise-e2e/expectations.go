package main

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
)

// expectation is what expectations.txt says of one spec.
type expectation struct {
	// pass is true for `pass`; otherwise notYet says why the spec cannot pass yet.
	pass   bool
	notYet string
	line   int
}

// specKey names a spec across runs: OpenKruise's suite repeats the same texts for v1alpha1
// and v1beta1, so the file the spec is declared in (relative to test/e2e) is part of it.
type specKey struct {
	file string
	text string
}

func (k specKey) String() string { return k.file + " | " + k.text }

// parseExpectations reads expectations.txt: one spec a line as
//
//	pass | apps/v1alpha1/daemonset.go | DaemonSet ... should ...
//	not yet: v1beta1 is not served | apps/v1beta1/daemonset.go | DaemonSet ...
//
// with blank lines and #-comments in between.
func parseExpectations(r io.Reader) (map[specKey]expectation, error) {
	out := map[specKey]expectation{}
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; scanner.Scan(); n++ {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.SplitN(line, " | ", 3)
		if len(fields) != 3 {
			return nil, fmt.Errorf("line %d: want `<verdict> | <file> | <spec>`, got %q", n, line)
		}
		verdict, file, text := strings.TrimSpace(fields[0]), strings.TrimSpace(fields[1]), strings.TrimSpace(fields[2])
		var e expectation
		switch {
		case verdict == "pass":
			e.pass = true
		case strings.HasPrefix(verdict, "not yet:"):
			e.notYet = strings.TrimSpace(strings.TrimPrefix(verdict, "not yet:"))
			if e.notYet == "" {
				return nil, fmt.Errorf("line %d: `not yet:` needs a reason", n)
			}
		default:
			return nil, fmt.Errorf("line %d: verdict %q is neither `pass` nor `not yet: <reason>`", n, verdict)
		}
		if file == "" || text == "" {
			return nil, fmt.Errorf("line %d: empty file or spec text", n)
		}
		key := specKey{file: file, text: text}
		if prev, ok := out[key]; ok {
			return nil, fmt.Errorf("line %d: spec %q already listed at line %d", n, key, prev.line)
		}
		e.line = n
		out[key] = e
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// outcome is how one spec ended in a run.
type outcome struct {
	key    specKey
	passed bool
	// state is the suite's word for it (passed, failed, skipped, timedout, …) and failure
	// the first line of its failure message, when it has one.
	state   string
	failure string
}

// verdict compares a run with the expectations.
type verdict struct {
	passed, notYet int
	// failed are `pass` specs that did not pass; unexpectedPasses are `not yet` specs that
	// passed; unlisted ran but are not in the file; missing are in the file but did not run.
	failed           []outcome
	unexpectedPasses []outcome
	unlisted         []outcome
	missing          []specKey
}

func (v verdict) ok() bool {
	return len(v.failed) == 0 && len(v.unexpectedPasses) == 0 && len(v.unlisted) == 0 && len(v.missing) == 0
}

// failures counts everything that makes the run fail.
func (v verdict) failures() int {
	return len(v.failed) + len(v.unexpectedPasses) + len(v.unlisted) + len(v.missing)
}

// tally is the closing line: what passed as expected, what broke the expectations, and
// what is known not to pass yet.
func (v verdict) tally() string {
	return fmt.Sprintf("%d passed, %d failed, %d not yet", v.passed, v.failures(), v.notYet)
}

func judge(expected map[specKey]expectation, outcomes []outcome) verdict {
	var v verdict
	seen := map[specKey]bool{}
	for _, o := range outcomes {
		seen[o.key] = true
		e, ok := expected[o.key]
		switch {
		case !ok:
			v.unlisted = append(v.unlisted, o)
		case e.pass && o.passed:
			v.passed++
		case e.pass:
			v.failed = append(v.failed, o)
		case o.passed:
			v.unexpectedPasses = append(v.unexpectedPasses, o)
		default:
			v.notYet++
		}
	}
	for key := range expected {
		if !seen[key] {
			v.missing = append(v.missing, key)
		}
	}
	sort.Slice(v.missing, func(i, j int) bool { return v.missing[i].String() < v.missing[j].String() })
	return v
}

// writeVerdict prints what broke the expectations, if anything, then the tally.
func writeVerdict(w io.Writer, v verdict, expectationsPath string) {
	for _, o := range v.failed {
		fmt.Fprintf(w, "FAIL (expected to pass, %s): %s\n", o.state, o.key)
		if o.failure != "" {
			fmt.Fprintf(w, "    %s\n", o.failure)
		}
	}
	for _, o := range v.unexpectedPasses {
		fmt.Fprintf(w, "NOW PASSES (listed as not yet; change it to pass in %s): %s\n", expectationsPath, o.key)
	}
	for _, o := range v.unlisted {
		fmt.Fprintf(w, "UNLISTED (%s; add it to %s): %s\n", o.state, expectationsPath, o.key)
	}
	for _, key := range v.missing {
		fmt.Fprintf(w, "DID NOT RUN (listed in %s): %s\n", expectationsPath, key)
	}
	fmt.Fprintln(w, v.tally())
}
