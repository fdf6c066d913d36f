package framework

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

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
