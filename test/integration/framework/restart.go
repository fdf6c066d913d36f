package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/klog/v2"
)

// APIServerStop says how RestartAPIServer stops kube-apiserver.
type APIServerStop int

const (
	// KillAPIServer sends SIGKILL, as a crashed or OOM-killed server: requests in flight
	// are cut off, some after their write reached etcd and before the audit log or the
	// client heard of it, and watches break without a word.
	KillAPIServer APIServerStop = iota
	// TerminateAPIServer sends SIGTERM, as a rolling upgrade does: the server finishes
	// the requests in flight and closes the watches before it exits (SIGKILL after
	// serverStopGracePeriod).
	TerminateAPIServer
)

func (s APIServerStop) String() string {
	if s == TerminateAPIServer {
		return "SIGTERM"
	}
	return "SIGKILL"
}

// apiServerRestartAttempts bounds the starts on the old port: a client connecting while the
// server is down may hold the port as its own end for a moment.
const apiServerRestartAttempts = 5

// RestartAPIServer stops kube-apiserver as how says and starts it again in place: the
// same flags, the same port (Host and every client config stay valid), the same etcd and
// so every stored object, the same log file and audit log, both appended to. It returns
// once the new server answers /readyz, or fails when ctx ends first. Clients are not told:
// their requests fail while the server is down and informers reconnect on their own,
// which is what a test of it checks. The servers of SharedControlPlane are never
// restarted, since other tests use them: start a control plane of the test's own
// (StartTestControlPlane).
func (cp *ControlPlane) RestartAPIServer(ctx context.Context, how APIServerStop) error {
	if cp.shared {
		return errors.New("restarting kube-apiserver: the shared control plane serves other tests; start one with StartTestControlPlane")
	}
	cp.mu.Lock()
	old, stopped := cp.apiServer, cp.stopped
	cp.mu.Unlock()
	if stopped || old == nil {
		return errors.New("restarting kube-apiserver: the control plane is stopped")
	}
	logger := klog.FromContext(ctx)
	began := time.Now()
	if how == TerminateAPIServer {
		old.Stop(serverStopGracePeriod)
	} else {
		old.Kill()
	}
	down := time.Now()
	if cp.auditLog != "" {
		// The new server appends its events after a line the old one may have left half
		// written, which would make the log unreadable from there on.
		if err := trimPartialLine(cp.auditLog); err != nil {
			return err
		}
	}
	for attempt := 1; ; attempt++ {
		proc, err := runAPIServer(ctx, cp.apiServerBinary, cp.apiServerArgs, apiServerLogPath(cp.dir), cp.adminConfig)
		if err == nil {
			cp.mu.Lock()
			stopped := cp.stopped
			if !stopped {
				cp.apiServer = proc
			}
			cp.mu.Unlock()
			if stopped {
				proc.Kill()
				return errors.New("restarting kube-apiserver: the control plane was stopped meanwhile")
			}
			logger.Info("kube-apiserver restarted", "signal", how, "host", cp.Host(), "pid", proc.Pid(),
				"down", time.Since(down).Round(time.Millisecond), "took", time.Since(began).Round(time.Millisecond))
			return nil
		}
		if proc == nil || attempt >= apiServerRestartAttempts || !logMentionsPortConflict(proc) || ctx.Err() != nil {
			return fmt.Errorf("restarting kube-apiserver on %s: %w", cp.Host(), err)
		}
		logger.Info("The port of kube-apiserver is taken; trying it again", "host", cp.Host(), "attempt", attempt)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// trimPartialLine cuts the file at path back to the end of its last complete line.
func trimPartialLine(path string) error {
	end, err := endOfLastLine(path)
	if err != nil {
		return err
	}
	info, err := os.Stat(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	if info.Size() == end {
		return nil
	}
	if err := os.Truncate(path, end); err != nil {
		return fmt.Errorf("cutting a partly written line off the audit log: %w", err)
	}
	return nil
}
