package framework_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestRunBinaryExitAndSignals(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		signal   os.Signal // sent once the script has printed "ready"
		wantCode int
		wantLog  string
	}{
		{name: "exit status", script: "echo hello; echo oops >&2; exit 3", wantCode: 3, wantLog: "hello\noops\n"},
		{name: "clean exit", script: "echo done", wantCode: 0, wantLog: "done\n"},
		{
			name:     "handled signal",
			script:   `trap 'echo got TERM; exit 7' TERM; echo ready; while :; do sleep 0.05; done`,
			signal:   syscall.SIGTERM,
			wantCode: 7,
			wantLog:  "ready\ngot TERM\n",
		},
		{
			name:     "fatal signal",
			script:   `echo ready; while :; do sleep 0.05; done`,
			signal:   syscall.SIGKILL,
			wantCode: -1,
			wantLog:  "ready\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			p := framework.RunBinary(t, "/bin/sh", "-c", tc.script)
			if tc.signal != nil {
				waitForLog(ctx, t, p, "ready\n")
				if err := p.Signal(tc.signal); err != nil {
					t.Fatal(err)
				}
			}
			err := p.Wait(ctx)
			if ctx.Err() != nil {
				t.Fatalf("process did not exit: %v", err)
			}
			if (err == nil) != (tc.wantCode == 0) {
				t.Errorf("Wait() = %v, want an error: %v", err, tc.wantCode != 0)
			}
			if got := p.ExitCode(); got != tc.wantCode {
				t.Errorf("ExitCode() = %d, want %d", got, tc.wantCode)
			}
			if got, _ := p.Log(); got != tc.wantLog {
				t.Errorf("Log() = %q, want %q", got, tc.wantLog)
			}
		})
	}
}

func TestProcessStopKillsTheProcessGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The shell ignores SIGTERM, so Stop has to escalate to SIGKILL; its background
	// child must die with it although nobody waits for it.
	p := framework.RunBinary(t, "/bin/sh", "-c", `trap '' TERM; sleep 300 & echo "child $!"; wait`)
	childPID := waitForChildPID(ctx, t, p)
	if p.ExitCode() != -1 || p.Exited() {
		t.Fatalf("process ended early: %s", p.LogTail(10))
	}

	p.Stop(500 * time.Millisecond)
	if !p.Exited() {
		t.Fatal("Stop returned before the process exited")
	}
	if got := p.ExitCode(); got != -1 {
		t.Errorf("ExitCode() = %d, want -1: only SIGKILL can have ended the shell", got)
	}
	assertGone(ctx, t, p.Pid(), "/bin/sh")
	assertGone(ctx, t, childPID, "sleep")
}

func TestBuildGoBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	path := framework.BuildGoBinary(t, "./test/integration/framework/testdata/exitwith")
	if again := framework.BuildGoBinary(t, "./test/integration/framework/testdata/exitwith"); again != path {
		t.Errorf("second build returned %s, want the first binary %s", again, path)
	}
	p := framework.RunBinary(t, path, "4", "x")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = p.Wait(ctx)
	if got := p.ExitCode(); got != 4 {
		t.Errorf("ExitCode() = %d, want 4", got)
	}
	if got, _ := p.Log(); got != "[4 x]\n" {
		t.Errorf("Log() = %q, want %q", got, "[4 x]\n")
	}
}

func waitForLog(ctx context.Context, t *testing.T, p *framework.Process, want string) {
	t.Helper()
	err := framework.WaitFor(ctx, 20*time.Second, "log line "+strconv.Quote(want), func(context.Context) (bool, error) {
		log, err := p.Log()
		return strings.Contains(log, want), err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func waitForChildPID(ctx context.Context, t *testing.T, p *framework.Process) int {
	t.Helper()
	waitForLog(ctx, t, p, "\n")
	log, _ := p.Log()
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(log, "child ")))
	if err != nil {
		t.Fatalf("parsing the child pid from %q: %v", log, err)
	}
	return pid
}

// assertGone fails the test unless the process pid running command is gone within a
// few seconds. A zombie counts as gone: it holds no resources, and reaping orphans is
// the job of the pid 1 of the machine.
func assertGone(ctx context.Context, t *testing.T, pid int, command string) {
	t.Helper()
	err := framework.WaitFor(ctx, 10*time.Second, "process "+strconv.Itoa(pid)+" ("+command+") to end", func(context.Context) (bool, error) {
		return !processRunning(pid, command), nil
	})
	if err != nil {
		t.Error(err)
	}
}

// processRunning reports whether pid is a live (not zombie) process whose command line
// starts with command, which tells it apart from an unrelated process reusing the pid.
func processRunning(pid int, command string) bool {
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return false
	}
	argv0, _, _ := strings.Cut(string(cmdline), "\x00")
	if argv0 != command && filepath.Base(argv0) != filepath.Base(command) {
		return false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name: "pid (comm) S ...".
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}
