package cluster

import (
	"os"
	"path/filepath"
	"strings"
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
	go c.watch()
	defer close(c.stopping)

	if err := c.Err(); err != nil {
		t.Fatalf("Err() with every component running = %v", err)
	}
	time.Sleep(100 * time.Millisecond) // let the log line land
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
