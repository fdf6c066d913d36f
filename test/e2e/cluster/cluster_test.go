package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// A component that dies while the cluster runs must fail whoever waits on the cluster at
// once, naming it and showing its log, instead of leaving tests to time out.
func TestWatchReportsAComponentThatExits(t *testing.T) {
	dir := t.TempDir()
	start := func(name string) *framework.Process {
		p, err := framework.StartProcess(framework.ProcessConfig{
			Name: name, Path: "/bin/sh", Args: []string{"-c", "echo " + name + " serving; exec sleep 600"},
			LogPath: filepath.Join(dir, name+".log"),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Kill)
		return p
	}
	containerd, kubelet := start("containerd"), start("kubelet")
	c := &Cluster{
		failed: make(chan struct{}), stopping: make(chan struct{}),
		components: []*component{{Process: containerd}, {Process: kubelet}},
	}
	c.watch()
	defer close(c.stopping)

	if err := c.Err(); err != nil {
		t.Fatalf("Err() with every component running = %v", err)
	}
	waitForLogLines(t, kubelet, "serving", 1) // the error must be able to show it
	kubelet.Kill()
	select {
	case <-c.Failed():
	case <-time.After(10 * time.Second):
		t.Fatal("Failed() not closed 10s after the kubelet was killed")
	}
	err := c.Err()
	if err == nil || !strings.Contains(err.Error(), "kubelet exited") || !strings.Contains(err.Error(), "kubelet serving") {
		t.Errorf("Err() = %v, want it to name the kubelet and show its log", err)
	}
}

// A restart on purpose is no failure: the cluster stays healthy through it, the component
// runs again as a new process with the same command line and log, and the new process is
// watched like the old one, so that an unintended exit of it still breaks the cluster.
func TestRestartComponentIsNoFailureButItsNewProcessIsWatched(t *testing.T) {
	dir := t.TempDir()
	start := func(name string) *framework.Process {
		// The program says when it started, so that the log shows each start.
		p, err := framework.StartProcess(framework.ProcessConfig{
			Name: name, Path: "/bin/sh", Args: []string{"-c", "echo " + name + " serving as $$; exec sleep 600"},
			LogPath: filepath.Join(dir, name+".log"),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Kill)
		return p
	}
	containerd, daemon := start("containerd"), start("bosun-daemon")
	// Killed before its shell wrote the first line, the log would never hold two starts.
	waitForLogLines(t, daemon, "serving as", 1)
	readyCalls := 0
	c := &Cluster{
		failed: make(chan struct{}), stopping: make(chan struct{}),
		components: []*component{{Process: containerd}, {Process: daemon, ready: func(ctx context.Context, p *framework.Process) error {
			readyCalls++
			return framework.WaitFor(ctx, 10*time.Second, "the log line of the restarted process", func(context.Context) (bool, error) {
				log, err := p.Log()
				return strings.Count(log, "serving as") == 2, err
			})
		}}},
	}
	c.watch()
	defer close(c.stopping)

	if err := c.RestartComponent(context.Background(), "bosun-daemon", syscall.SIGKILL); err != nil {
		t.Fatalf("RestartComponent: %v", err)
	}
	restarted := c.Component("bosun-daemon")
	t.Cleanup(restarted.Kill)
	if !daemon.Exited() || restarted == daemon || restarted.Exited() || readyCalls != 1 {
		t.Fatalf("after the restart: old process exited %v, new process %v (running %v), readiness waited %d times",
			daemon.Exited(), restarted != daemon, !restarted.Exited(), readyCalls)
	}
	if restarted.LogPath() != daemon.LogPath() || !slices.Equal(restarted.Config().Args, daemon.Config().Args) {
		t.Errorf("restarted with %+v, want the first start's %+v", restarted.Config(), daemon.Config())
	}
	// The old process's watcher has seen its exit by now; give it the time it would need.
	time.Sleep(200 * time.Millisecond)
	if err := c.Err(); err != nil {
		t.Fatalf("Err() after an intended restart = %v", err)
	}

	restarted.Kill()
	select {
	case <-c.Failed():
	case <-time.After(10 * time.Second):
		t.Fatal("Failed() not closed 10s after the restarted bosun-daemon was killed")
	}
	if err := c.Err(); err == nil || !strings.Contains(err.Error(), "bosun-daemon exited") {
		t.Errorf("Err() = %v, want it to name bosun-daemon", err)
	}
	if err := c.RestartComponent(context.Background(), "containerd", syscall.SIGKILL); err == nil {
		t.Error("RestartComponent of a broken cluster succeeded")
	}
	if err := c.RestartComponent(context.Background(), "etcd", syscall.SIGKILL); err == nil {
		t.Error("RestartComponent of an unknown component succeeded")
	}
}

// A restarted component that does not come back breaks the cluster.
func TestRestartComponentThatStaysUnhealthyBreaksTheCluster(t *testing.T) {
	dir := t.TempDir()
	p, err := framework.StartProcess(framework.ProcessConfig{
		Name: "kubelet", Path: "/bin/sh", Args: []string{"-c", "exec sleep 600"}, LogPath: filepath.Join(dir, "kubelet.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	c := &Cluster{
		failed: make(chan struct{}), stopping: make(chan struct{}),
		components: []*component{{Process: p, ready: func(context.Context, *framework.Process) error { return errors.New("never healthy") }}},
	}
	c.watch()
	defer close(c.stopping)
	err = c.RestartComponent(context.Background(), "kubelet", syscall.SIGTERM)
	t.Cleanup(c.Component("kubelet").Kill)
	if err == nil || !strings.Contains(err.Error(), "never healthy") {
		t.Fatalf("RestartComponent = %v, want the readiness error", err)
	}
	if err := c.Err(); err == nil || !strings.Contains(err.Error(), "kubelet") {
		t.Errorf("Err() = %v, want the failed restart of the kubelet", err)
	}
}

func TestAttachedClusterReportsAGoneProcess(t *testing.T) {
	dir := t.TempDir()
	p, err := framework.StartProcess(framework.ProcessConfig{Name: "containerd", Path: "sleep", Args: []string{"600"},
		LogPath: filepath.Join(dir, "containerd.log")})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"+
		"contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: x}}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{dir: dir, nodeName: "n", components: []*component{{Process: p}}}
	c.attached = &state{Kubeconfig: kubeconfig} // lets writeState's accessors work without a control plane
	c.attached.RuntimeEndpoint = "unix:///nowhere.sock"
	if err := c.writeState(); err != nil {
		t.Fatal(err)
	}
	attached, err := Attach(dir)
	if err != nil {
		t.Fatalf("Attach while the component runs: %v", err)
	}
	if attached.NodeName() != "n" || attached.RuntimeEndpoint() != "unix:///nowhere.sock" || attached.Config().Host != "https://127.0.0.1:1" {
		t.Errorf("attached handle = node %q, runtime %q, host %q", attached.NodeName(), attached.RuntimeEndpoint(), attached.Config().Host)
	}
	p.Kill()
	if err := attached.Err(); err == nil || !strings.Contains(err.Error(), "containerd") {
		t.Errorf("Err() after the process died = %v, want it to name containerd", err)
	}
}

func TestUnescapeMountPath(t *testing.T) {
	for in, want := range map[string]string{
		`/a/b`:              "/a/b",
		`/with\040space`:    "/with space",
		`/tab\011x\134y`:    "/tab\tx\\y",
		`/trailing\04`:      `/trailing\04`,
		`/not\999an-escape`: `/not\999an-escape`,
	} {
		if got := unescapeMountPath(in); got != want {
			t.Errorf("unescapeMountPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// waitForLogLines waits until p's log holds want lines containing text.
func waitForLogLines(t *testing.T, p *framework.Process, text string, want int) {
	t.Helper()
	err := framework.WaitFor(context.Background(), 10*time.Second, "the log of "+p.Config().Name, func(context.Context) (bool, error) {
		log, err := p.Log()
		return strings.Count(log, text) >= want, err
	})
	if err != nil {
		t.Fatal(err)
	}
}
