package containerstop

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"

	"github.com/bosun-dev/bosun/pkg/daemon/cri"
	"github.com/bosun-dev/bosun/pkg/daemon/cri/crifake"
)

func TestHookURL(t *testing.T) {
	tests := []struct {
		scheme, path, want string
	}{
		{"", "", "http://10.0.0.1:8080/"},
		{"https", "/x", "https://10.0.0.1:8080/x"},
		{"", "x?a=b", "http://10.0.0.1:8080/x?a=b"},
	}
	for _, tc := range tests {
		if got := hookURL(tc.scheme, "10.0.0.1", 8080, tc.path).String(); got != tc.want {
			t.Errorf("hookURL(%q, %q) = %q, want %q", tc.scheme, tc.path, got, tc.want)
		}
	}
	if got := hookURL("", "fd00::1", 80, "/").String(); got != "http://[fd00::1]:80/" {
		t.Errorf("IPv6: %q", got)
	}
	if n, err := resolvePort(intstr.FromString("8081"), nil); err != nil || n != 8081 {
		t.Errorf("numeric string port: %d, %v", n, err)
	}
}

// A sleep hook waits before the stop, and what it took comes off the grace period; one
// longer than the grace period is cut short, without failing.
func TestSleepHook(t *testing.T) {
	fake := crifake.Start(t, filepath.Join(crifake.ShortTempDir(t), "containerd.sock"))
	ids := fake.AddPod(crifake.Pod{UID: "uid", Namespace: "ns", Name: "p", Containers: []string{"a", "b"}})
	monitor, err := cri.NewMonitor(fake.Endpoint(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		monitor.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	rt, err := monitor.WaitForRuntime(ctx)
	if err != nil {
		t.Fatal(err)
	}

	s := NewStopper(clock.RealClock{})
	failed := 0
	sleep := func(seconds int64) *corev1.LifecycleHandler {
		return &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: seconds}}
	}
	if err := s.Stop(ctx, rt, Container{PodUID: "uid", ID: ids["a"], PreStop: sleep(1), GraceSeconds: 10, HookFailed: func(error) { failed++ }}); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(ctx, rt, Container{PodUID: "uid", ID: ids["b"], PreStop: sleep(30), GraceSeconds: 1, HookFailed: func(error) { failed++ }}); err != nil {
		t.Fatal(err)
	}
	want := []crifake.ContainerCall{
		{Method: "StopContainer", ContainerID: ids["a"], Timeout: 9},
		{Method: "StopContainer", ContainerID: ids["b"], Timeout: MinGraceSeconds},
	}
	if got := fake.StopCalls(); !slices.EqualFunc(got, want, func(a, b crifake.ContainerCall) bool {
		return a.ContainerID == b.ContainerID && a.Timeout == b.Timeout
	}) {
		t.Errorf("stops %+v, want %+v", got, want)
	}
	if failed != 0 {
		t.Errorf("%d hooks reported failed", failed)
	}
}
