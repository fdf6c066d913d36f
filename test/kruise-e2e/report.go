package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// The parts of Ginkgo's JSON report (--ginkgo.json-report) that a verdict needs.
type ginkgoReport struct {
	SuiteDescription string
	SpecReports      []ginkgoSpecReport
}

type ginkgoSpecReport struct {
	ContainerHierarchyTexts []string
	LeafNodeType            string
	LeafNodeText            string
	LeafNodeLocation        struct{ FileName string }
	State                   string
	// NumAttempts is 0 for a spec that never ran: left out by the filters.
	NumAttempts int
	Failure     *struct{ Message string }
}

// suiteDir is where OpenKruise's suite lives in its module; spec files are named relative to it.
const suiteDir = "/test/e2e/"

// readOutcomes returns every spec (It) of a Ginkgo JSON report with how it ended. Specs the
// label filter left out do not count: they are reported as skipped without having run.
func readOutcomes(path string) ([]outcome, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the suite's report: %w", err)
	}
	var reports []ginkgoReport
	if err := json.Unmarshal(data, &reports); err != nil {
		return nil, fmt.Errorf("decoding the suite's report %s: %w", path, err)
	}
	var out []outcome
	for _, report := range reports {
		for _, spec := range report.SpecReports {
			if spec.LeafNodeType != "It" || (spec.State == "skipped" && spec.NumAttempts == 0) {
				continue
			}
			file := spec.LeafNodeLocation.FileName
			if i := strings.LastIndex(file, suiteDir); i >= 0 {
				file = file[i+len(suiteDir):]
			}
			o := outcome{
				key:    specKey{file: file, text: strings.Join(append(append([]string{}, spec.ContainerHierarchyTexts...), spec.LeafNodeText), " ")},
				passed: spec.State == "passed",
				state:  spec.State,
			}
			if spec.Failure != nil {
				o.failure, _, _ = strings.Cut(strings.TrimSpace(spec.Failure.Message), "\n")
			}
			out = append(out, o)
		}
	}
	return out, nil
}
