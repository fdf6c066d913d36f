package containerrecreaterequest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/daemon/cri/crifake"
)

// killWith runs a request for container app with grace and preStop until app is stopped,
// and returns the container calls and events.
func killWith(t *testing.T, f *fixture, grace *int64, preStop *appsv1beta1.ProbeHandler, ports []corev1.ContainerPort) ([]crifake.ContainerCall, []string) {
	t.Helper()
	crr := f.newRequest("r1", "app")
	crr.Spec.Strategy.TerminationGracePeriodSeconds = grace
	crr.Spec.Containers[0].PreStop = preStop
	crr.Spec.Containers[0].Ports = ports
	crr.Status.Phase = recreating
	f.create(crr)
	f.sync()
	f.sync()
	f.expectStates("r1", "app:Recreating:killed")
	return f.runtime.ContainerCalls(), f.events()
}

func TestPreStopExecRunsFirstAndShortensTheGrace(t *testing.T) {
	tests := []struct {
		name      string
		grace     int64
		hookTakes time.Duration
		exitCode  int32
		wantStop  int64
		wantEvent []string
	}{
		{name: "hook time subtracted", grace: 10, hookTakes: 3500 * time.Millisecond, wantStop: 7},
		{name: "floor of two seconds", grace: 3, hookTakes: 2 * time.Second, wantStop: 2},
		{name: "failing hook", grace: 10, hookTakes: time.Second, exitCode: 1, wantStop: 9,
			wantEvent: []string{"Warning FailedPreStopHook PreStopHook failed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "app")
			f.runtime.SetExecSyncHandler(func(crifake.ExecCall) (*runtimeapi.ExecSyncResponse, error) {
				f.clock.Step(tc.hookTakes)
				return &runtimeapi.ExecSyncResponse{ExitCode: tc.exitCode}, nil
			})
			calls, events := killWith(t, f, ptr.To(tc.grace),
				&appsv1beta1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/drain", "--now"}}}, nil)
			want := []crifake.ContainerCall{
				{Method: "ExecSync", ContainerID: f.ids["app"], Timeout: tc.grace, Cmd: []string{"/drain", "--now"}},
				{Method: "StopContainer", ContainerID: f.ids["app"], Timeout: tc.wantStop},
			}
			if !slices.EqualFunc(calls, want, equalCalls) {
				t.Errorf("calls %+v, want %+v", calls, want)
			}
			wantEvents := append([]string{"Normal Killing Stopping container app by ContainerRecreateRequest r1"}, tc.wantEvent...)
			if !slices.Equal(events, wantEvents) {
				t.Errorf("events %q, want %q", events, wantEvents)
			}
		})
	}
}

func TestGraceDefaultsAndZeroSkipsTheHook(t *testing.T) {
	f := newFixture(t, "app")
	calls, _ := killWith(t, f, nil, nil, nil)
	if len(calls) != 1 || calls[0].Timeout != defaultStopGraceSeconds {
		t.Errorf("calls %+v, want one stop with the default grace", calls)
	}

	g := newFixture(t, "app")
	calls, _ = killWith(t, g, ptr.To[int64](0), &appsv1beta1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, nil)
	if len(calls) != 1 || calls[0].Method != "StopContainer" || calls[0].Timeout != minStopGraceSeconds {
		t.Errorf("calls %+v, want no hook and a stop with the floor grace", calls)
	}
}

// An httpGet hook without a host goes to the pod IP from the sandbox status, with a named
// port resolved from the container's ports.
func TestPreStopHTTPGetToThePodIP(t *testing.T) {
	var (
		mu       sync.Mutex
		requests []string
	)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		requests = append(requests, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("X-Drain")+" "+r.Host)
	}))
	defer server.Close()
	_, port, err := net.SplitHostPort(server.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	portNumber, _ := strconv.Atoi(port)

	f := newFixture(t, "app")
	hook := &appsv1beta1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: "drain?fast=1", Port: intstr.FromString("admin"),
		HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Drain", Value: "yes"}, {Name: "Host", Value: "app.local"}},
	}}
	calls, events := killWith(t, f, ptr.To[int64](10), hook, []corev1.ContainerPort{{Name: "admin", ContainerPort: int32(portNumber)}})
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"GET /drain?fast=1 yes app.local"}; !slices.Equal(requests, want) {
		t.Errorf("hook requests %q, want %q", requests, want)
	}
	if len(calls) != 1 || calls[0].Method != "StopContainer" {
		t.Errorf("calls %+v", calls)
	}
	if len(events) != 1 {
		t.Errorf("events %q, want only Killing", events)
	}
}

func TestPreStopFailuresStillStop(t *testing.T) {
	tests := map[string]*appsv1beta1.ProbeHandler{
		"unknown named port": {HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("nope")}},
		"nothing listens":    {HTTPGet: &corev1.HTTPGetAction{Host: "127.0.0.1", Port: intstr.FromInt32(1)}},
		"tcpSocket":          {TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}},
	}
	for name, hook := range tests {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, "app")
			calls, events := killWith(t, f, ptr.To[int64](5), hook, nil)
			if len(calls) != 1 || calls[0].Method != "StopContainer" {
				t.Errorf("calls %+v", calls)
			}
			if len(events) != 2 || events[1] != "Warning FailedPreStopHook PreStopHook failed" {
				t.Errorf("events %q", events)
			}
		})
	}
}

func equalCalls(a, b crifake.ContainerCall) bool {
	return a.Method == b.Method && a.ContainerID == b.ContainerID && a.Timeout == b.Timeout && slices.Equal(a.Cmd, b.Cmd)
}

// Events name the container of the pod, as the kubelet's do, with the cached pod's version
// when the informer has the request's pod.
func TestContainerReference(t *testing.T) {
	f := newFixture(t, "app")
	crr := f.newRequest("r1", "app")
	ref := f.c.containerReference(crr, testPodUID, "app")
	if ref.Kind != "Pod" || ref.Namespace != testNamespace || ref.Name != testPod || ref.UID != testPodUID ||
		ref.FieldPath != "spec.containers{app}" || ref.ResourceVersion != "" {
		t.Errorf("reference without a cached pod: %+v", ref)
	}
	f.addPod()
	if ref := f.c.containerReference(crr, testPodUID, "app"); ref.ResourceVersion != "7" {
		t.Errorf("reference with the cached pod: %+v", ref)
	}
	if ref := f.c.containerReference(crr, "another-uid", "app"); ref.ResourceVersion != "" || ref.UID != "another-uid" {
		t.Errorf("a cached pod of another UID must not be named: %+v", ref)
	}
}
