package framework

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	// DefaultStopGracePeriod is how long Stop waits after SIGTERM before it sends SIGKILL.
	DefaultStopGracePeriod = 10 * time.Second

	// failureLogLines is how many lines of a process's log a failed test prints.
	failureLogLines = 80
)

// ProcessConfig describes a child process for StartProcess and RunProcess.
type ProcessConfig struct {
	// Name labels the process in messages; the base name of Path when empty.
	Name string
	// Path is the executable.
	Path string
	// Args are the arguments after the program name.
	Args []string
	// Env holds KEY=value entries added to (and overriding) the test's environment.
	Env []string
	// Dir is the working directory; the test's working directory when empty.
	Dir string
	// LogPath is the file that receives stdout and stderr. The child writes to it
	// directly, so the log is complete even if the test binary dies first.
	LogPath string
}

// Process is a child process running in its own process group. The group, not just
// the process, is what gets killed, so helpers the process started die with it.
type Process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	config  ProcessConfig

	done     chan struct{} // closed once the process has exited and been reaped
	waitErr  error         // set before done is closed
	stopOnce sync.Once
}

// StartProcess starts the process described by cfg. The caller owns it and must call
// Stop or Kill; on Linux the process is also killed if the test binary dies.
func StartProcess(cfg ProcessConfig) (*Process, error) {
	name := cfg.Name
	if name == "" {
		name = filepath.Base(cfg.Path)
	}
	if cfg.LogPath == "" {
		return nil, fmt.Errorf("starting %s: no log path", name)
	}
	logFile, err := os.OpenFile(cfg.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("starting %s: opening its log: %w", name, err)
	}
	// The child holds its own descriptor for the log after the fork.
	defer logFile.Close()

	cmd := exec.Command(cfg.Path, cfg.Args...)
	cmd.Dir = cfg.Dir
	cmd.Env = append(os.Environ(), cfg.Env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = childProcAttr()

	cfg.Args, cfg.Env = slices.Clone(cfg.Args), slices.Clone(cfg.Env)
	p := &Process{name: name, logPath: cfg.LogPath, cmd: cmd, config: cfg, done: make(chan struct{})}
	if err := p.start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	return p, nil
}

// start forks the child from a goroutine locked to its OS thread and keeps that thread
// until the child has been reaped. The parent-death signal is tied to the thread that
// forked, not to the process: if the Go runtime retired that thread while the child
// ran, the kernel would kill a healthy child in the middle of a test.
func (p *Process) start() error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := p.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()
	return <-started
}

// Config returns the configuration the process was started with: StartProcess with it
// starts the same program again, appending to the same log.
func (p *Process) Config() ProcessConfig {
	cfg := p.config
	cfg.Args, cfg.Env = slices.Clone(cfg.Args), slices.Clone(cfg.Env)
	return cfg
}

// Name returns the label of the process.
func (p *Process) Name() string { return p.name }

// Pid returns the process id, which is also its process group id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// LogPath returns the file holding the process's stdout and stderr.
func (p *Process) LogPath() string { return p.logPath }

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Signal sends sig to the process itself (not to its group), for tests of how a
// binary reacts to signals.
func (p *Process) Signal(sig os.Signal) error {
	if p.Exited() {
		return fmt.Errorf("signalling %s: %w", p.name, os.ErrProcessDone)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signalling %s: %w", p.name, err)
	}
	return nil
}

// SignalGroup sends sig to the process's whole group, as Stop does, for a test that ends a
// process the way a crash (SIGKILL) or an operator (SIGTERM) would, helpers included.
func (p *Process) SignalGroup(sig syscall.Signal) error {
	if p.Exited() {
		return fmt.Errorf("signalling %s: %w", p.name, os.ErrProcessDone)
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("signalling the process group of %s: %w", p.name, err)
	}
	return nil
}

// Wait waits until the process exits or ctx ends. It returns nil for exit status 0,
// an *exec.ExitError for any other end, or the context's error.
func (p *Process) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.waitErr
	case <-ctx.Done():
		return fmt.Errorf("waiting for %s to exit: %w", p.name, ctx.Err())
	}
}

// ExitCode returns the exit status of the process, or -1 while it runs or when a
// signal ended it.
func (p *Process) ExitCode() int {
	if !p.Exited() {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// Stop sends SIGTERM to the process group, waits up to grace for the process to
// exit, then kills the group with SIGKILL. It returns once the process has been
// reaped; calling it again does nothing.
func (p *Process) Stop(grace time.Duration) {
	p.stopOnce.Do(func() {
		if !p.Exited() {
			p.signalGroup(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(grace):
			}
		}
		// Also after a clean exit: children the process left in its group go too.
		p.signalGroup(syscall.SIGKILL)
		<-p.done
	})
}

// Kill kills the process group at once and waits until the process has been reaped.
func (p *Process) Kill() { p.Stop(0) }

func (p *Process) signalGroup(sig syscall.Signal) {
	// A negative pid addresses the process group; ESRCH only means it is already gone.
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
}

// Log returns everything the process has written so far.
func (p *Process) Log() (string, error) {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return "", fmt.Errorf("reading the log of %s: %w", p.name, err)
	}
	return string(data), nil
}

// LogTail returns the last n lines the process has written.
func (p *Process) LogTail(n int) string {
	return tailFile(p.logPath, 0, n)
}

// logSize returns the current length of the log, to later print only what was
// written after that point.
func (p *Process) logSize() int64 {
	info, err := os.Stat(p.logPath)
	if err != nil {
		return 0
	}
	return info.Size()
}

// describeExit explains why a process that should still run has ended.
func (p *Process) describeExit() string {
	if !p.Exited() {
		return fmt.Sprintf("%s is running", p.name)
	}
	return fmt.Sprintf("%s exited (%v); last lines of %s:\n%s", p.name, p.cmd.ProcessState, p.logPath, p.LogTail(failureLogLines))
}

// tailFile returns at most the last n lines of the file written after byte offset from.
func tailFile(path string, from int64, n int) string {
	// Reading only the end keeps this cheap for the long logs of a shared server.
	const maxRead = 512 << 10
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	start := max(from, info.Size()-maxRead, 0)
	data, err := io.ReadAll(io.NewSectionReader(f, start, info.Size()-start))
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}

// RunBinary starts the binary at path with args for the duration of the test. Its
// output goes to a file in a test temp dir and is printed (the tail) if the test
// fails; the process group is stopped when the test ends.
func RunBinary(t testing.TB, path string, args ...string) *Process {
	t.Helper()
	return RunProcess(t, ProcessConfig{Path: path, Args: args})
}

// RunProcess is RunBinary for a full ProcessConfig. An empty LogPath is replaced by a
// file in a test temp dir.
func RunProcess(t testing.TB, cfg ProcessConfig) *Process {
	t.Helper()
	if cfg.LogPath == "" {
		name := cfg.Name
		if name == "" {
			name = filepath.Base(cfg.Path)
		}
		cfg.LogPath = filepath.Join(t.TempDir(), name+".log")
	}
	p, err := StartProcess(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop(DefaultStopGracePeriod)
		if t.Failed() {
			t.Logf("last lines of %s (pid %d, %v):\n%s", p.name, p.Pid(), p.cmd.ProcessState, p.LogTail(failureLogLines))
		}
	})
	return p
}
