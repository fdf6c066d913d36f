package framework_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestStopLeavesNoProcessesAndNoFiles(t *testing.T) {
	framework.RequireIntegration(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cp, err := framework.StartControlPlane(ctx, framework.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	t.Logf("control plane started in %v", cp.StartupTime())
	processes := cp.Processes()
	if len(processes) != 2 {
		t.Fatalf("Processes() = %d processes, want etcd and kube-apiserver", len(processes))
	}
	for _, p := range processes {
		if !processRunning(p.Pid(), p.Name()) {
			t.Fatalf("%s (pid %d) is not running after the start", p.Name(), p.Pid())
		}
	}

	began := time.Now()
	if err := cp.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("control plane stopped in %v", time.Since(began))
	for _, p := range processes {
		assertGone(ctx, t, p.Pid(), p.Name())
	}
	if leftovers := processesMentioning(cp.Dir()); len(leftovers) > 0 {
		t.Errorf("processes still using %s after Stop: %v", cp.Dir(), leftovers)
	}
	if _, err := os.Stat(cp.Dir()); !os.IsNotExist(err) {
		t.Errorf("the control plane directory %s is still there (stat: %v)", cp.Dir(), err)
	}
	if err := cp.Stop(); err != nil {
		t.Errorf("a second Stop failed: %v", err)
	}
}

func TestFailedStartReportsTheLogAndCleansUp(t *testing.T) {
	framework.RequireIntegration(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "cp")
	cp, err := framework.StartControlPlane(ctx, framework.Options{Dir: dir, APIServerArgs: []string{"--no-such-flag=1"}})
	if err == nil {
		_ = cp.Stop()
		t.Fatal("kube-apiserver started with an unknown flag")
	}
	// The error explains itself with the server's own words.
	if !strings.Contains(err.Error(), "unknown flag: --no-such-flag") {
		t.Errorf("the error does not quote the kube-apiserver log: %v", err)
	}
	// etcd, which did start, is stopped again; a directory the caller chose is kept.
	if leftovers := processesMentioning(dir); len(leftovers) > 0 {
		t.Errorf("processes left after the failed start: %v", leftovers)
	}
	if _, err := os.Stat(filepath.Join(dir, "etcd.log")); err != nil {
		t.Errorf("the etcd log in the caller's directory is gone: %v", err)
	}
}

// crashHelperEnv makes TestCrashHelper start servers and crash the test binary the
// way its value says.
const crashHelperEnv = "BOSUN_FRAMEWORK_CRASH_HELPER"

// pidsPrefix starts the line on which TestCrashHelper reports its children.
const pidsPrefix = "crash-helper-pids:"

func TestCrashedTestBinaryLeavesNoServers(t *testing.T) {
	framework.RequireIntegration(t)
	for _, mode := range []string{"panic", "sigkill"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			dir := t.TempDir()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashHelper$", "-test.v")
			cmd.Env = append(os.Environ(), crashHelperEnv+"="+mode, "TMPDIR="+dir)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the helper test binary did not crash:\n%s", out)
			}
			children := parseHelperPIDs(t, string(out))
			for name, pid := range children {
				assertGone(ctx, t, pid, name)
			}
			if leftovers := processesMentioning(dir); len(leftovers) > 0 {
				t.Errorf("processes of the crashed test binary still run: %v", leftovers)
			}
			if t.Failed() {
				t.Logf("helper output:\n%s", out)
			}
		})
	}
}

// TestCrashHelper is not a test by itself: TestCrashedTestBinaryLeavesNoServers runs
// it in a child test binary, which starts a control plane and a process, reports their
// pids and dies without running any cleanup.
func TestCrashHelper(t *testing.T) {
	mode := os.Getenv(crashHelperEnv)
	if mode == "" {
		t.Skip("only runs as a child of TestCrashedTestBinaryLeavesNoServers")
	}
	cp, err := framework.StartControlPlane(context.Background(), framework.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sleeper := framework.RunBinary(t, "/bin/sleep", "300")
	var pids []string
	for _, p := range append(cp.Processes(), sleeper) {
		pids = append(pids, fmt.Sprintf("%s=%d", p.Name(), p.Pid()))
	}
	fmt.Println(pidsPrefix, strings.Join(pids, " "))
	os.Stdout.Sync()

	switch mode {
	case "panic":
		// A panic outside the test goroutine kills the binary without running the
		// test's cleanups, like a bug in a controller under test would.
		go panic("crash helper panics")
		select {}
	case "sigkill":
		// What the OOM killer or an impatient CI runner does.
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	default:
		t.Fatalf("unknown %s=%q", crashHelperEnv, mode)
	}
}

// parseHelperPIDs returns the command name and pid of every child the helper reported.
func parseHelperPIDs(t *testing.T, out string) map[string]int {
	t.Helper()
	scanner := bufio.NewScanner(strings.NewReader(out))
	for scanner.Scan() {
		line, ok := strings.CutPrefix(scanner.Text(), pidsPrefix)
		if !ok {
			continue
		}
		children := map[string]int{}
		for _, field := range strings.Fields(line) {
			name, pid, _ := strings.Cut(field, "=")
			n, err := strconv.Atoi(pid)
			if err != nil {
				t.Fatalf("bad pid in %q: %v", line, err)
			}
			children[name] = n
		}
		if len(children) != 3 {
			t.Fatalf("the helper reported %v, want etcd, kube-apiserver and sleep", children)
		}
		return children
	}
	t.Fatalf("the helper reported no pids:\n%s", out)
	return nil
}

// processesMentioning lists the live processes whose command line contains s, such as
// a server's data directory.
func processesMentioning(s string) []string {
	entries, _ := os.ReadDir("/proc")
	var found []string
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", entry.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), s) {
			continue
		}
		found = append(found, fmt.Sprintf("%d: %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
	}
	return found
}
