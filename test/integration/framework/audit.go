package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

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

// IsWriteVerb reports whether an audited request of verb can change an object.
func IsWriteVerb(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// AuditEvents returns the audit events logged since the Env was made (see EnvOptions.Audit)
// for which match holds, oldest first.
func (e *Env) AuditEvents(match func(*auditv1.Event) bool) ([]auditv1.Event, error) {
	if e.Audit == nil {
		return nil, fmt.Errorf("the test keeps no audit tail: set EnvOptions.Audit")
	}
	events, err := e.Audit.Read()
	if err != nil {
		return nil, err
	}
	var out []auditv1.Event
	for i := range events {
		if match(&events[i]) {
			out = append(out, events[i])
		}
	}
	return out, nil
}

// WaitForNoWrites waits until no request has written to the test's namespace for period
// (see EnvOptions.Audit). Tests call it before checking that something did NOT happen: by
// then the controllers have acted on all they saw.
func (e *Env) WaitForNoWrites(t testing.TB, period time.Duration) {
	t.Helper()
	start := time.Now()
	var last time.Time
	e.Await(t, "the namespace to see no writes for "+period.String(), func(context.Context) (bool, error) {
		writes, err := e.AuditEvents(func(ev *auditv1.Event) bool {
			return IsWriteVerb(ev.Verb) && ev.ObjectRef != nil && ev.ObjectRef.Namespace == e.Namespace
		})
		if err != nil {
			return false, err
		}
		last = start
		for _, w := range writes {
			if w.StageTimestamp.After(last) {
				last = w.StageTimestamp.Time
			}
		}
		return time.Since(last) >= period, nil
	}, func() string { return "last write completed at " + last.Format("15:04:05.000") })
}

// Request is one completed API request, as the audit log saw it.
type Request struct {
	Verb, Resource, Subresource, Name string
	// UserAgent is the client's, which tells the controllers of one manager apart.
	UserAgent string
	// Code and Message are the response's status.
	Code    int32
	Message string
	// Received and Completed are the API server's times for the request's arrival and its
	// response.
	Received, Completed time.Time
}

// Requests returns the completed requests logged since the Env was made (see
// EnvOptions.Audit) for which match holds, ordered by arrival.
func (e *Env) Requests(match func(*auditv1.Event) bool) ([]Request, error) {
	events, err := e.AuditEvents(match)
	if err != nil {
		return nil, err
	}
	requests := make([]Request, 0, len(events))
	for i := range events {
		ev := &events[i]
		r := Request{Verb: ev.Verb, UserAgent: ev.UserAgent, Received: ev.RequestReceivedTimestamp.Time, Completed: ev.StageTimestamp.Time}
		if ev.ObjectRef != nil {
			r.Resource, r.Subresource, r.Name = ev.ObjectRef.Resource, ev.ObjectRef.Subresource, ev.ObjectRef.Name
		}
		if ev.ResponseStatus != nil {
			r.Code, r.Message = ev.ResponseStatus.Code, ev.ResponseStatus.Message
		}
		requests = append(requests, r)
	}
	slices.SortStableFunc(requests, func(a, b Request) int { return a.Received.Compare(b.Received) })
	return requests, nil
}
