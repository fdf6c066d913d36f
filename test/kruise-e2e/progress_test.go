package main

import (
	"strings"
	"testing"
)

func TestProgressWriter(t *testing.T) {
	var out strings.Builder
	w := &progressWriter{out: &out}
	input := "Running Suite: Kruise e2e suite\n" +
		"SSSS• [FAILED] [6.1 seconds]\nDaemonSet should run\n  details\n" +
		"•••\nRan 55 of 337 Specs in 900 seconds\nFAIL! -- 20 Passed | 35 Failed\n"
	// Written in pieces that split lines, as a pipe delivers them.
	for len(input) > 0 {
		n := min(7, len(input))
		if _, err := w.Write([]byte(input[:n])); err != nil {
			t.Fatal(err)
		}
		input = input[n:]
	}
	want := "SSSS• [FAILED] [6.1 seconds]\n•••\nRan 55 of 337 Specs in 900 seconds\n"
	if out.String() != want {
		t.Errorf("passed on\n%q\nwant\n%q", out.String(), want)
	}
}
