//go:build linux

// Tests for the pause binary's zombie reaping.

package main

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestReapChildrenStopsWhenNothingIsLeft(t *testing.T) {
	// Two exited children, an interrupted call, then "children remain but none
	// has exited": the loop must collect both and stop without blocking.
	results := []struct {
		pid int
		err error
	}{
		{pid: 101},
		{err: syscall.EINTR},
		{pid: 102},
		{pid: 0},
	}
	calls := 0
	fake := func(pid int, _ *syscall.WaitStatus, options int, _ *syscall.Rusage) (int, error) {
		if pid != -1 || options&syscall.WNOHANG == 0 {
			t.Errorf("wait4(%d, options %#x): want pid -1 with WNOHANG", pid, options)
		}
		if calls >= len(results) {
			t.Fatalf("wait4 called %d times after it said nothing was left", calls-len(results)+1)
		}
		r := results[calls]
		calls++
		return r.pid, r.err
	}
	if got := reapChildren(fake); got != 2 {
		t.Errorf("reapChildren() = %d, want 2", got)
	}
	if calls != len(results) {
		t.Errorf("wait4 called %d times, want %d", calls, len(results))
	}
}

func TestReapChildrenReapsARealChild(t *testing.T) {
	// Start a child that exits at once and leave it unwaited, as an orphan
	// re-parented to pause would be; the real Wait4 must collect it.
	proc, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Skipf("cannot start /bin/true: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for reapChildren(syscall.Wait4) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("child %d was not reaped within 5s", proc.Pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The zombie is gone: the kernel no longer knows the child.
	if _, err := syscall.Wait4(proc.Pid, nil, syscall.WNOHANG, nil); !errors.Is(err, syscall.ECHILD) {
		t.Errorf("wait4(%d) after reaping: err = %v, want ECHILD", proc.Pid, err)
	}
	_ = proc.Release()
}
