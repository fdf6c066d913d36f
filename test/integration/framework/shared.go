package framework

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"

	"k8s.io/klog/v2/ktesting"
)

// shared is the control plane of a test package that uses Main.
var shared struct {
	mu      sync.Mutex
	opts    *Options // nil until Main runs
	started bool
	cp      *ControlPlane
	err     error
}

// Main runs the tests of a package that shares one control plane, configured by opts,
// between its tests, and exits. Call it from TestMain. The control plane starts when
// the first test asks for it (a run that selects no integration test starts nothing)
// and stops after the last test. Binaries built by BuildBosunBinary stay in
// _output/test-bin, for the next package's build to find up to date.
func Main(m *testing.M, opts Options) {
	shared.mu.Lock()
	shared.opts = &opts
	shared.mu.Unlock()

	// On Ctrl-C or SIGTERM the servers die with the test binary anyway (see
	// childProcAttr); stopping them here also removes their directory.
	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-interrupted
		fmt.Fprintf(os.Stderr, "framework: %v, stopping the integration control plane\n", sig)
		teardownShared()
		os.Exit(1)
	}()

	code := m.Run()
	signal.Stop(interrupted)
	if err := teardownShared(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func teardownShared() error {
	shared.mu.Lock()
	cp := shared.cp
	shared.mu.Unlock()
	if cp == nil {
		return nil
	}
	return cp.Stop()
}

// SharedControlPlane returns the control plane of the test package, starting it on the
// first call; the package's TestMain must call Main. It skips the test like
// RequireIntegration, and fails it if the control plane could not start. If the test
// fails, the end of what the servers logged during the test is printed.
func SharedControlPlane(t testing.TB) *ControlPlane {
	t.Helper()
	RequireIntegration(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.opts == nil {
		t.Fatal("SharedControlPlane needs the package's TestMain to call framework.Main")
	}
	if !shared.started {
		shared.started = true
		_, ctx := ktesting.NewTestContext(t)
		shared.cp, shared.err = StartControlPlane(ctx, *shared.opts)
		if shared.err == nil {
			shared.cp.shared = true
			t.Logf("shared control plane at %s started in %v", shared.cp.Host(), shared.cp.StartupTime())
		}
	}
	if shared.err != nil {
		t.Fatalf("starting the shared control plane: %v", shared.err)
	}
	cp := shared.cp
	for _, p := range cp.Processes() {
		if p.Exited() {
			t.Fatalf("the shared control plane is broken: %s", p.describeExit())
		}
	}
	offsets := map[*Process]int64{}
	for _, p := range cp.Processes() {
		offsets[p] = p.logSize()
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(cp.logTailsSince(offsets, failureLogLines))
		}
	})
	return cp
}
