package main

import (
	"bytes"
	"io"
	"strings"
)

// progressWriter passes on only the suite's progress lines (a mark per spec, a line per
// failed one, the count of specs run). The failure details are in the suite's log, and the
// verdict names every spec that matters; the suite's own closing line is left out too, since
// it counts the specs known not to pass yet as failures.
type progressWriter struct {
	out     io.Writer
	pending []byte
}

func (w *progressWriter) Write(p []byte) (int, error) {
	w.pending = append(w.pending, p...)
	for {
		i := bytes.IndexByte(w.pending, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.pending[:i+1])
		w.pending = w.pending[i+1:]
		if isProgress(line) {
			if _, err := io.WriteString(w.out, line); err != nil {
				return len(p), err
			}
		}
	}
}

func isProgress(line string) bool {
	trimmed := strings.TrimLeft(line, "S")
	for _, prefix := range []string{"•", "Ran "} {
		if strings.HasPrefix(trimmed, prefix) {
			return true
		}
	}
	return false
}
