package cri

import (
	"context"
	"slices"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/bosun-dev/bosun/pkg/daemon/cri/crifake"
)

func TestPodContainersReadTheKubeletHash(t *testing.T) {
	fake, rt := connect(t)
	fake.AddPod(crifake.Pod{UID: "uid-1", Namespace: "ns", Name: "web", Containers: []string{"app", "bare"}})
	fake.SetContainerAnnotation("uid-1", "app", ContainerHashAnnotation, "5d0e9a3f")
	got, err := rt.PodContainers(context.Background(), "uid-1")
	if err != nil {
		t.Fatal(err)
	}
	if got["app"].Hash != 0x5d0e9a3f {
		t.Errorf("app hash = %x, want 5d0e9a3f", got["app"].Hash)
	}
	if got["bare"].Hash != 0 {
		t.Errorf("a container without the annotation has hash %x, want 0", got["bare"].Hash)
	}
}

// The environment comes from the runtime spec of a verbose status when the runtime reports
// one, exactly (a value may hold "=" or span lines); otherwise from env run in the container.
func TestContainerEnv(t *testing.T) {
	fake, rt := connect(t)
	ids := fake.AddPod(crifake.Pod{UID: "uid-1", Namespace: "ns", Name: "web", Containers: []string{"spec", "exec"}})
	fake.SetContainerEnv("uid-1", "spec", []string{"PATH=/bin", "TEST_ENV=a=b", "MULTI=one\ntwo"})
	fake.SetExecSyncHandler(func(call crifake.ExecCall) (*runtimeapi.ExecSyncResponse, error) {
		if !slices.Equal(call.Cmd, []string{"env"}) || call.ContainerID != ids["exec"] {
			t.Errorf("exec %+v, want env in %s", call, ids["exec"])
		}
		return &runtimeapi.ExecSyncResponse{Stdout: []byte("PATH=/bin\nTEST_ENV=bar\nnot a var\n")}, nil
	})

	env, err := rt.ContainerEnv(context.Background(), ids["spec"])
	if err != nil {
		t.Fatal(err)
	}
	if env["TEST_ENV"] != "a=b" || env["MULTI"] != "one\ntwo" || env["PATH"] != "/bin" || len(env) != 3 {
		t.Errorf("env from the runtime spec = %q", env)
	}
	if calls := fake.ContainerCalls(); len(calls) != 0 {
		t.Errorf("ran %+v although the runtime reported the spec", calls)
	}

	env, err = rt.ContainerEnv(context.Background(), ids["exec"])
	if err != nil {
		t.Fatal(err)
	}
	if env["TEST_ENV"] != "bar" || env["PATH"] != "/bin" || len(env) != 2 {
		t.Errorf("env from exec = %q", env)
	}

	fake.SetExecSyncHandler(func(crifake.ExecCall) (*runtimeapi.ExecSyncResponse, error) {
		return &runtimeapi.ExecSyncResponse{ExitCode: 127, Stderr: []byte("env: not found")}, nil
	})
	if _, err := rt.ContainerEnv(context.Background(), ids["exec"]); err == nil {
		t.Error("no error for a container without env and a runtime that reports no spec")
	}
	if _, err := rt.ContainerEnv(context.Background(), "gone"); err == nil {
		t.Error("no error for a missing container")
	}
}
