package cri

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/bosun-dev/bosun/pkg/daemon/cri/crifake"
)

// connect starts a fake runtime and returns it with a connection to it.
func connect(t *testing.T) (*crifake.Runtime, *Runtime) {
	t.Helper()
	fake := crifake.Start(t, filepath.Join(crifake.ShortTempDir(t), "containerd.sock"))
	m, err := NewMonitor(fake.Endpoint(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	rt, err := m.WaitForRuntime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return fake, rt
}

func TestPodContainersFindsTheCurrentContainerOfEachName(t *testing.T) {
	fake, rt := connect(t)
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	fake.SetContainerClock(clk)
	ids := fake.AddPod(crifake.Pod{UID: "uid-1", Namespace: "ns", Name: "web", IP: "10.0.0.7", Containers: []string{"app", "sidecar"}})
	fake.AddPod(crifake.Pod{UID: "uid-2", Namespace: "ns", Name: "other", Containers: []string{"app"}})
	clk.SetTime(time.Unix(1010, 0))
	restarted := fake.RestartContainer("uid-1", "app")
	// A second restart within the same clock tick: the restart count decides.
	again := fake.RestartContainer("uid-1", "sidecar")
	again = fake.RestartContainer("uid-1", "sidecar")

	got, err := rt.PodContainers(context.Background(), "uid-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("containers %v, want app and sidecar", got)
	}
	app := got["app"]
	if app.ID != restarted || app.ID == ids["app"] || app.RestartCount != 1 || app.State != runtimeapi.ContainerState_CONTAINER_RUNNING ||
		!app.StartedAt.Equal(time.Unix(1010, 0)) || app.Name != "app" {
		t.Errorf("app = %+v, want the restarted container %s, restart count 1, running since 1010", app, restarted)
	}
	if sidecar := got["sidecar"]; sidecar.ID != again || sidecar.RestartCount != 2 {
		t.Errorf("sidecar = %+v, want %s with restart count 2", sidecar, again)
	}
	if got := KubeContainerID(rt.Name, app.ID); got != crifake.KubeContainerID(app.ID) {
		t.Errorf("KubeContainerID = %q, want %q", got, crifake.KubeContainerID(app.ID))
	}

	fake.ExitContainer("uid-2", "app")
	other, err := rt.PodContainers(context.Background(), "uid-2")
	if err != nil || other["app"].State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("exited container: %+v, %v", other, err)
	}
	none, err := rt.PodContainers(context.Background(), "unknown")
	if err != nil || len(none) != 0 {
		t.Errorf("unknown pod: %v, %v", none, err)
	}
}

func TestPodIP(t *testing.T) {
	fake, rt := connect(t)
	fake.AddPod(crifake.Pod{UID: "uid-1", Namespace: "ns", Name: "web", IP: "10.0.0.7", Containers: []string{"app"}})
	fake.AddPod(crifake.Pod{UID: "uid-2", Namespace: "ns", Name: "hostless", Containers: []string{"app"}})
	if ip, err := rt.PodIP(context.Background(), "uid-1"); err != nil || ip != "10.0.0.7" {
		t.Errorf("PodIP = %q, %v", ip, err)
	}
	if _, err := rt.PodIP(context.Background(), "uid-2"); err == nil || !strings.Contains(err.Error(), "has no IP") {
		t.Errorf("sandbox without IP: %v", err)
	}
	if _, err := rt.PodIP(context.Background(), "unknown"); err == nil || !strings.Contains(err.Error(), "no ready sandbox") {
		t.Errorf("unknown pod: %v", err)
	}
}

func TestStopContainer(t *testing.T) {
	fake, rt := connect(t)
	ids := fake.AddPod(crifake.Pod{UID: "uid-1", Namespace: "ns", Name: "web", Containers: []string{"app", "broken"}})
	if err := rt.StopContainer(context.Background(), ids["app"], 7*time.Second); err != nil {
		t.Fatal(err)
	}
	if c, _ := fake.Container("uid-1", "app"); c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("stopped container is %v", c.State)
	}
	fake.FailStopContainer(ids["broken"], status.Error(codes.Internal, "device busy"))
	err := rt.StopContainer(context.Background(), ids["broken"], 2*time.Second)
	if err == nil || !strings.Contains(err.Error(), "device busy") {
		t.Errorf("failing stop: %v", err)
	}
	want := []crifake.ContainerCall{
		{Method: "StopContainer", ContainerID: ids["app"], Timeout: 7},
		{Method: "StopContainer", ContainerID: ids["broken"], Timeout: 2},
	}
	if got := fake.StopCalls(); !slices.EqualFunc(got, want, equalCalls) {
		t.Errorf("stop calls %+v, want %+v", got, want)
	}
}

func TestExecSync(t *testing.T) {
	fake, rt := connect(t)
	ids := fake.AddPod(crifake.Pod{UID: "uid-1", Namespace: "ns", Name: "web", Containers: []string{"app"}})
	fake.SetExecSyncHandler(func(call crifake.ExecCall) (*runtimeapi.ExecSyncResponse, error) {
		switch call.Cmd[0] {
		case "fail":
			return &runtimeapi.ExecSyncResponse{Stderr: []byte("no such file"), ExitCode: 2}, nil
		case "broken":
			return nil, errors.New("exec not possible")
		}
		return &runtimeapi.ExecSyncResponse{Stdout: []byte("drained")}, nil
	})
	result, err := rt.ExecSync(context.Background(), ids["app"], []string{"drain", "-q"}, 5*time.Second)
	if err != nil || string(result.Stdout) != "drained" {
		t.Errorf("ExecSync = %+v, %v", result, err)
	}
	result, err = rt.ExecSync(context.Background(), ids["app"], []string{"fail"}, time.Second)
	if err == nil || result.ExitCode != 2 || !strings.Contains(err.Error(), "exited with code 2: no such file") {
		t.Errorf("non-zero exit: %+v, %v", result, err)
	}
	if _, err := rt.ExecSync(context.Background(), ids["app"], []string{"broken"}, time.Second); err == nil {
		t.Error("an exec the runtime refuses must fail")
	}
	calls := fake.ContainerCalls()
	if len(calls) != 3 || calls[0].Method != "ExecSync" || calls[0].Timeout != 5 || !slices.Equal(calls[0].Cmd, []string{"drain", "-q"}) {
		t.Errorf("calls %+v", calls)
	}
}

func equalCalls(a, b crifake.ContainerCall) bool {
	return a.Method == b.Method && a.ContainerID == b.ContainerID && a.Timeout == b.Timeout && slices.Equal(a.Cmd, b.Cmd)
}
