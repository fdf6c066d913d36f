package framework

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// AuditEvents returns the audit events logged so far, oldest first. The control plane
// must have been started with Options.AuditPolicy.
func (cp *ControlPlane) AuditEvents() ([]auditv1.Event, error) {
	if cp.auditLog == "" {
		return nil, fmt.Errorf("auditing is off: start the control plane with Options.AuditPolicy")
	}
	return ReadAuditLog(cp.auditLog)
}

// ReadAuditLog parses a JSON-lines audit log written by kube-apiserver. A last line
// without its newline is still being written and is left out.
func ReadAuditLog(path string) ([]auditv1.Event, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil // nothing audited yet
	}
	if err != nil {
		return nil, fmt.Errorf("reading audit log: %w", err)
	}
	lines := bytes.Split(data, []byte("\n"))
	lines = lines[:len(lines)-1] // after the last newline: empty or incomplete
	events := make([]auditv1.Event, 0, len(lines))
	for i, line := range lines {
		var event auditv1.Event
		if err := json.Unmarshal(line, &event); err != nil {
			return nil, fmt.Errorf("parsing line %d of audit log %s: %w", i+1, path, err)
		}
		events = append(events, event)
	}
	return events, nil
}

// AuditTail reads the control plane's audit log incrementally, from where it ended when the
// tail was made, so that a test sees only the requests of its own time and never parses
// again what earlier tests of the package logged. It is safe for concurrent use.
type AuditTail struct {
	mu     sync.Mutex
	path   string
	offset int64
	events []auditv1.Event
}

// NewAuditTail starts a tail at the end of cp's audit log. The control plane must have
// been started with Options.AuditPolicy.
func NewAuditTail(t testing.TB, cp *ControlPlane) *AuditTail {
	t.Helper()
	if cp.auditLog == "" {
		t.Fatal("the control plane has no audit log: start it with Options.AuditPolicy")
	}
	offset, err := endOfLastLine(cp.auditLog)
	if err != nil {
		t.Fatal(err)
	}
	return &AuditTail{path: cp.auditLog, offset: offset}
}

// endOfLastLine returns the offset just after the last complete line of the file at path
// (0 when there is none yet). The API server writes whole lines; a partly written last one
// is read with the next Read.
func endOfLastLine(path string) (int64, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("opening audit log: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("audit log: %w", err)
	}
	// One audit line is a few KiB at most; the last MiB holds a newline.
	start := max(info.Size()-1<<20, 0)
	buf := make([]byte, info.Size()-start)
	if _, err := f.ReadAt(buf, start); err != nil && err != io.EOF {
		return 0, fmt.Errorf("reading audit log: %w", err)
	}
	return start + int64(bytes.LastIndexByte(buf, '\n')+1), nil
}

// Read returns the ResponseComplete events logged since the tail was made, oldest first.
func (a *AuditTail) Read() ([]auditv1.Event, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f, err := os.Open(a.path)
	if os.IsNotExist(err) {
		return a.events, nil
	}
	if err != nil {
		return nil, fmt.Errorf("opening audit log: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(a.offset, io.SeekStart); err != nil {
		return nil, fmt.Errorf("seeking in audit log: %w", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("reading audit log: %w", err)
	}
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return a.events, nil // no complete new line yet
	}
	for _, line := range bytes.Split(data[:end], []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var ev auditv1.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("parsing audit event %q: %w", line, err)
		}
		if ev.Stage == auditv1.StageResponseComplete {
			a.events = append(a.events, ev)
		}
	}
	a.offset += int64(end + 1)
	return a.events, nil
}
