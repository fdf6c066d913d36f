package cri

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/bosun-dev/bosun/pkg/daemon/cri/crifake"
	"github.com/bosun-dev/bosun/pkg/serving"
)

// The monitor names the runtime in /readyz?verbose. The assertion lives here so that package
// cri, which the agent's controllers use, does not import the serving code.
var _ serving.Describer = &Monitor{}

func TestCandidatesAndDiscover(t *testing.T) {
	explicit, err := Candidates("/run/x.sock", DefaultSocketDirs)
	if err != nil || len(explicit) != 1 || explicit[0] != "unix:///run/x.sock" {
		t.Errorf("explicit path: %v, %v", explicit, err)
	}
	if _, err := Candidates("tcp://127.0.0.1:1", nil); err == nil {
		t.Error("tcp endpoint accepted")
	}
	if _, err := Candidates("relative.sock", nil); err == nil {
		t.Error("relative endpoint accepted")
	}

	dir := crifake.ShortTempDir(t)
	candidates, _ := Candidates("", []string{dir})
	if len(candidates) != 6 || candidates[0] != "unix://"+dir+"/containerd.sock" || candidates[5] != "unix://"+dir+"/cri-dockerd/cri-dockerd.sock" {
		t.Fatalf("candidates %v", candidates)
	}
	if _, err := Discover(candidates); err == nil || !strings.Contains(err.Error(), "no CRI runtime socket found") {
		t.Errorf("empty dir: %v", err)
	}
	// A regular file with a socket's name is not a socket.
	if err := os.WriteFile(filepath.Join(dir, "containerd.sock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	crifake.Start(t, filepath.Join(dir, "cri-dockerd.sock"))
	crifake.Start(t, filepath.Join(dir, "crio", "crio.sock"))
	got, err := Discover(candidates)
	if err != nil || got != "unix://"+dir+"/crio/crio.sock" {
		t.Errorf("Discover = %q, %v; want the CRI-O socket, which comes before cri-dockerd", got, err)
	}
}

// eventually polls cond for up to a minute; the monitor's own intervals are milliseconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestMonitorReadiness(t *testing.T) {
	dir := crifake.ShortTempDir(t)
	m, err := NewMonitor("", []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	m.probePeriod, m.initialRetry, m.maxRetry = 20*time.Millisecond, 10*time.Millisecond, 40*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	ready := func() bool { return m.Check(&http.Request{}) == nil }

	if ready() {
		t.Fatal("ready before any runtime exists")
	}
	if d := m.Describe(); d != "" {
		t.Errorf("description before any runtime answered: %q", d)
	}
	runtime := crifake.Start(t, filepath.Join(dir, "containerd", "containerd.sock"))
	eventually(t, "the runtime is found", ready)
	rt, err := m.WaitForRuntime(ctx)
	if err != nil || rt.Name != "fake-runtime" || rt.Version != "1.2.3" || rt.APIVersion != "v1" || rt.Endpoint != "unix://"+dir+"/containerd/containerd.sock" {
		t.Errorf("runtime %+v, %v", rt, err)
	}
	if got, want := m.Describe(), "fake-runtime 1.2.3 (runtime API v1) at unix://"+dir+"/containerd/containerd.sock"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}

	runtime.Stop()
	eventually(t, "the vanished runtime makes the agent not ready", func() bool { return !ready() })

	crifake.Start(t, filepath.Join(dir, "crio.sock"))
	eventually(t, "a runtime reappearing elsewhere is found", ready)
	if rt := m.Runtime(); rt.Endpoint != "unix://"+dir+"/crio.sock" {
		t.Errorf("after rediscovery the endpoint is %q", rt.Endpoint)
	}
	if got := m.Describe(); !strings.HasSuffix(got, " at unix://"+dir+"/crio.sock") {
		t.Errorf("after rediscovery Describe() = %q", got)
	}
	cancel()
	<-done
}

func TestCheckRequiresRecentSuccess(t *testing.T) {
	dir := crifake.ShortTempDir(t)
	runtime := crifake.Start(t, filepath.Join(dir, "r.sock"))
	m, err := NewMonitor("unix://"+filepath.Join(dir, "r.sock"), nil)
	if err != nil {
		t.Fatal(err)
	}
	fakeClock := clocktesting.NewFakeClock(time.Now())
	m.clock = fakeClock
	conn, err := grpc.NewClient(m.candidates[0], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := m.probe(context.Background(), conn, m.candidates[0]); err != nil {
		t.Fatal(err)
	}
	if err := m.Check(nil); err != nil {
		t.Errorf("right after a successful call: %v", err)
	}
	// An upgrade behind the same socket is seen at the next call, without a new connection.
	first := m.Runtime()
	runtime.SetRuntimeVersion("1.2.4")
	if err := m.probe(context.Background(), conn, m.candidates[0]); err != nil {
		t.Fatal(err)
	}
	if rt := m.Runtime(); rt == first || rt.Version != "1.2.4" || first.Version != "1.2.3" || !strings.HasPrefix(m.Describe(), "fake-runtime 1.2.4 ") {
		t.Errorf("after an in-place upgrade: runtime %+v (was %+v), description %q", rt, first, m.Describe())
	}
	fakeClock.Step(ReadinessWindow)
	if err := m.Check(nil); err != nil {
		t.Errorf("%v after the call: %v", ReadinessWindow, err)
	}
	fakeClock.Step(time.Second)
	if err := m.Check(nil); err == nil {
		t.Error("still ready 11s after the last successful call")
	}
	m.recordFailure(context.DeadlineExceeded)
	fakeClock.SetTime(m.lastSuccess)
	if err := m.Check(nil); err == nil {
		t.Error("ready although the last call failed")
	}
}
