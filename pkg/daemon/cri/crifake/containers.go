package crifake

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// RuntimeName is the runtime name Version answers. The kubelet writes container IDs in pod
// status as "<runtime name>://<id>", so tests that play the kubelet use it as the scheme.
const RuntimeName = "fake-runtime"

// The labels and annotation the kubelet puts on the sandboxes and containers it creates,
// which is how readers of the CRI find a pod's containers.
const (
	podUIDLabel                = "io.kubernetes.pod.uid"
	podNameLabel               = "io.kubernetes.pod.name"
	podNamespaceLabel          = "io.kubernetes.pod.namespace"
	containerNameLabel         = "io.kubernetes.container.name"
	containerRestartAnnotation = "io.kubernetes.container.restartCount"
)

// containerState holds the fake runtime's pod sandboxes and containers, and the calls made
// on them that tests assert on.
type containerState struct {
	mu sync.Mutex
	// clock stamps creation, start and finish times; the real clock unless
	// SetContainerClock replaced it.
	clock  clock.PassiveClock
	nextID int

	sandboxes  map[string]*fakeSandbox
	containers map[string]*fakeContainer

	// stopErrors are the answers StopContainer gives for some container IDs.
	stopErrors map[string]error
	// execHandler answers ExecSync; nil answers exit code 0.
	execHandler func(ExecCall) (*runtimeapi.ExecSyncResponse, error)
	// stopHook is called on every StopContainer call before it takes effect.
	stopHook func(ContainerCall)
	// calls are the container calls made, in order.
	calls []ContainerCall
}

type fakeSandbox struct {
	id, uid, namespace, name, ip string
	state                        runtimeapi.PodSandboxState
	createdAt                    int64
}

type fakeContainer struct {
	id, sandboxID, name string
	restartCount        int32
	state               runtimeapi.ContainerState
	labels, annotations map[string]string
	createdAt           int64
	startedAt           int64
	finishedAt          int64
	exitCode            int32
	// env is the environment a verbose ContainerStatus reports in the runtime spec, as
	// containerd does; nil reports no runtime spec.
	env []string
}

// Pod is a pod as AddPod creates it in the fake runtime: a ready sandbox with the pod's IP
// and one running container per name, as the kubelet would have started them.
type Pod struct {
	UID, Namespace, Name string
	// IP is the sandbox's IP, which PodSandboxStatus reports.
	IP         string
	Containers []string
}

// ContainerCall is one StopContainer or ExecSync call the fake runtime received.
type ContainerCall struct {
	// Method is "StopContainer" or "ExecSync".
	Method      string
	ContainerID string
	// Timeout is the call's timeout in seconds: the stop grace period, or the exec timeout.
	Timeout int64
	// Cmd is the ExecSync command.
	Cmd []string
}

// ExecCall is what an ExecSync handler is asked to run.
type ExecCall struct {
	ContainerID string
	Cmd         []string
	Timeout     int64
}

// ContainerInfo is the current container of a name in a pod.
type ContainerInfo struct {
	ID           string
	RestartCount int32
	State        runtimeapi.ContainerState
	StartedAt    time.Time
}

// KubeContainerID is id as the kubelet writes it into pod status.
func KubeContainerID(id string) string { return RuntimeName + "://" + id }

func (s *containerState) init() {
	if s.sandboxes == nil {
		s.sandboxes = map[string]*fakeSandbox{}
		s.containers = map[string]*fakeContainer{}
		s.stopErrors = map[string]error{}
	}
}

func (s *containerState) now() int64 {
	if s.clock == nil {
		return time.Now().UnixNano()
	}
	return s.clock.Now().UnixNano()
}

func (s *containerState) newID(kind string) string {
	s.nextID++
	return fmt.Sprintf("%s%04d", kind, s.nextID)
}

// SetContainerClock makes the fake runtime stamp container and sandbox times from clk, so
// that tests with a fake clock see consistent start times.
func (r *Runtime) SetContainerClock(clk clock.PassiveClock) {
	r.containers.mu.Lock()
	defer r.containers.mu.Unlock()
	r.containers.clock = clk
}

// AddPod creates pod's sandbox and a running container per name, and returns the
// container IDs by name.
func (r *Runtime) AddPod(pod Pod) map[string]string {
	s := &r.containers
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	now := s.now()
	sandbox := &fakeSandbox{id: s.newID("sandbox"), uid: pod.UID, namespace: pod.Namespace, name: pod.Name, ip: pod.IP,
		state: runtimeapi.PodSandboxState_SANDBOX_READY, createdAt: now}
	s.sandboxes[sandbox.id] = sandbox
	ids := map[string]string{}
	for _, name := range pod.Containers {
		ids[name] = s.startContainer(sandbox, name, 0).id
	}
	return ids
}

// startContainer creates and starts a container in sandbox; the caller holds the lock.
func (s *containerState) startContainer(sandbox *fakeSandbox, name string, restartCount int32) *fakeContainer {
	now := s.now()
	c := &fakeContainer{
		id: s.newID("container"), sandboxID: sandbox.id, name: name, restartCount: restartCount,
		state: runtimeapi.ContainerState_CONTAINER_RUNNING,
		labels: map[string]string{
			podUIDLabel: sandbox.uid, podNameLabel: sandbox.name, podNamespaceLabel: sandbox.namespace, containerNameLabel: name,
		},
		annotations: map[string]string{containerRestartAnnotation: strconv.Itoa(int(restartCount))},
		createdAt:   now,
		startedAt:   now,
	}
	s.containers[c.id] = c
	return c
}

// current returns the newest container called name in the pod with podUID; the caller
// holds the lock.
func (s *containerState) current(podUID, name string) *fakeContainer {
	var newest *fakeContainer
	for _, c := range s.containers {
		if c.labels[podUIDLabel] != podUID || c.name != name {
			continue
		}
		if newest == nil || c.createdAt > newest.createdAt || (c.createdAt == newest.createdAt && c.restartCount > newest.restartCount) {
			newest = c
		}
	}
	return newest
}

// RestartContainer does what the kubelet does after the container called name exited: it
// marks the current one exited (if it is not already) and starts a new one under a new ID
// with the restart count one higher, whose ID it returns. It panics when the pod has no such
// container: that is a mistake in the test.
func (r *Runtime) RestartContainer(podUID, name string) string {
	s := &r.containers
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.current(podUID, name)
	if old == nil {
		panic(fmt.Sprintf("crifake: pod %s has no container %q", podUID, name))
	}
	if old.state != runtimeapi.ContainerState_CONTAINER_EXITED {
		old.state, old.finishedAt = runtimeapi.ContainerState_CONTAINER_EXITED, s.now()
	}
	started := s.startContainer(s.sandboxes[old.sandboxID], name, old.restartCount+1)
	// The kubelet starts the new container from the same spec: same hash and environment,
	// until a test says otherwise.
	started.env = slices.Clone(old.env)
	for key, value := range old.annotations {
		if key != containerRestartAnnotation {
			started.annotations[key] = value
		}
	}
	return started.id
}

// SetContainerEnv sets the environment the current container called name of the pod with
// podUID runs with, which a verbose ContainerStatus reports in the runtime spec (nil: no
// runtime spec is reported). It panics when the pod has no such container.
func (r *Runtime) SetContainerEnv(podUID, name string, env []string) {
	s := &r.containers
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.current(podUID, name)
	if c == nil {
		panic(fmt.Sprintf("crifake: pod %s has no container %q", podUID, name))
	}
	c.env = slices.Clone(env)
}

// SetContainerAnnotation sets an annotation of the current container called name of the
// pod with podUID, as the kubelet sets them when it creates the container (its hash, say).
// It panics when the pod has no such container.
func (r *Runtime) SetContainerAnnotation(podUID, name, key, value string) {
	s := &r.containers
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.current(podUID, name)
	if c == nil {
		panic(fmt.Sprintf("crifake: pod %s has no container %q", podUID, name))
	}
	c.annotations[key] = value
}

// ExitContainer makes the current container called name exit, as a crash would, without
// starting a new one.
func (r *Runtime) ExitContainer(podUID, name string) {
	s := &r.containers
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.current(podUID, name); c != nil {
		c.state, c.finishedAt, c.exitCode = runtimeapi.ContainerState_CONTAINER_EXITED, s.now(), 1
	}
}

// Container returns the current container called name of the pod with podUID.
func (r *Runtime) Container(podUID, name string) (ContainerInfo, bool) {
	s := &r.containers
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.current(podUID, name)
	if c == nil {
		return ContainerInfo{}, false
	}
	return ContainerInfo{ID: c.id, RestartCount: c.restartCount, State: c.state, StartedAt: time.Unix(0, c.startedAt)}, true
}

// FailStopContainer makes StopContainer of container id answer err (nil: succeed again).
func (r *Runtime) FailStopContainer(id string, err error) {
	s := &r.containers
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	if err == nil {
		delete(s.stopErrors, id)
		return
	}
	s.stopErrors[id] = err
}

// SetExecSyncHandler makes ExecSync answer through handler (nil: exit code 0 at once). The
// handler runs without the fake's lock held, so it may block, for example to make a preStop
// hook take time.
func (r *Runtime) SetExecSyncHandler(handler func(ExecCall) (*runtimeapi.ExecSyncResponse, error)) {
	s := &r.containers
	s.mu.Lock()
	defer s.mu.Unlock()
	s.execHandler = handler
}

// SetStopHook makes every StopContainer call first call hook (nil: none), without the
// fake's lock held, so that a test can look at the world at the moment a container is
// stopped.
func (r *Runtime) SetStopHook(hook func(ContainerCall)) {
	s := &r.containers
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopHook = hook
}

// ContainerCalls returns the StopContainer and ExecSync calls received so far, in order.
func (r *Runtime) ContainerCalls() []ContainerCall {
	s := &r.containers
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// StopCalls returns the StopContainer calls received so far, in order.
func (r *Runtime) StopCalls() []ContainerCall {
	var stops []ContainerCall
	for _, call := range r.ContainerCalls() {
		if call.Method == "StopContainer" {
			stops = append(stops, call)
		}
	}
	return stops
}

// ListPodSandbox lists sandboxes, filtered by ID, state and labels.
func (r *Runtime) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	s := &r.containers
	s.mu.Lock()
	defer s.mu.Unlock()
	filter := req.GetFilter()
	resp := &runtimeapi.ListPodSandboxResponse{}
	for _, id := range slices.Sorted(maps.Keys(s.sandboxes)) {
		sandbox := s.sandboxes[id]
		if filter.GetId() != "" && filter.GetId() != id {
			continue
		}
		if filter.GetState() != nil && filter.GetState().GetState() != sandbox.state {
			continue
		}
		if !matchesLabels(sandbox.labels(), filter.GetLabelSelector()) {
			continue
		}
		resp.Items = append(resp.Items, &runtimeapi.PodSandbox{
			Id: id, Metadata: sandbox.metadata(), State: sandbox.state, CreatedAt: sandbox.createdAt, Labels: sandbox.labels(),
		})
	}
	return resp, nil
}

// PodSandboxStatus reports a sandbox with its IP.
func (r *Runtime) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	s := &r.containers
	s.mu.Lock()
	defer s.mu.Unlock()
	sandbox, ok := s.sandboxes[req.GetPodSandboxId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "sandbox %q not found", req.GetPodSandboxId())
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{
		Id: sandbox.id, Metadata: sandbox.metadata(), State: sandbox.state, CreatedAt: sandbox.createdAt,
		Network: &runtimeapi.PodSandboxNetworkStatus{Ip: sandbox.ip}, Labels: sandbox.labels(),
	}}, nil
}

// ListContainers lists containers, filtered by ID, sandbox, state and labels.
func (r *Runtime) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	s := &r.containers
	s.mu.Lock()
	defer s.mu.Unlock()
	filter := req.GetFilter()
	resp := &runtimeapi.ListContainersResponse{}
	for _, id := range slices.Sorted(maps.Keys(s.containers)) {
		c := s.containers[id]
		if filter.GetId() != "" && filter.GetId() != id ||
			filter.GetPodSandboxId() != "" && filter.GetPodSandboxId() != c.sandboxID ||
			filter.GetState() != nil && filter.GetState().GetState() != c.state ||
			!matchesLabels(c.labels, filter.GetLabelSelector()) {
			continue
		}
		resp.Containers = append(resp.Containers, &runtimeapi.Container{
			Id: id, PodSandboxId: c.sandboxID, Metadata: c.metadata(), State: c.state, CreatedAt: c.createdAt,
			Labels: maps.Clone(c.labels), Annotations: maps.Clone(c.annotations),
		})
	}
	return resp, nil
}

// ContainerStatus reports a container with its start and finish times and, when verbose
// and the container has an environment (SetContainerEnv), containerd's "info" entry with the
// runtime spec's process environment.
func (r *Runtime) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	s := &r.containers
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[req.GetContainerId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %q not found", req.GetContainerId())
	}
	resp := &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{
		Id: c.id, Metadata: c.metadata(), State: c.state, CreatedAt: c.createdAt, StartedAt: c.startedAt,
		FinishedAt: c.finishedAt, ExitCode: c.exitCode, Labels: maps.Clone(c.labels), Annotations: maps.Clone(c.annotations),
	}}
	if req.GetVerbose() && c.env != nil {
		info, err := json.Marshal(map[string]any{"sandboxID": c.sandboxID, "runtimeSpec": map[string]any{"process": map[string]any{"env": c.env}}})
		if err != nil {
			return nil, status.Errorf(codes.Internal, "encoding the info of container %q: %v", c.id, err)
		}
		resp.Info = map[string]string{"info": string(info)}
	}
	return resp, nil
}

// StopContainer records the call and, unless FailStopContainer set an error for the
// container, marks it exited. It does not start a replacement: that is the kubelet's job,
// which tests play with RestartContainer.
func (r *Runtime) StopContainer(_ context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	s := &r.containers
	call := ContainerCall{Method: "StopContainer", ContainerID: req.GetContainerId(), Timeout: req.GetTimeout()}
	s.mu.Lock()
	hook := s.stopHook
	s.mu.Unlock()
	if hook != nil {
		hook(call)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call)
	if err := s.stopErrors[req.GetContainerId()]; err != nil {
		return nil, err
	}
	c, ok := s.containers[req.GetContainerId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %q not found", req.GetContainerId())
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_EXITED {
		c.state, c.finishedAt, c.exitCode = runtimeapi.ContainerState_CONTAINER_EXITED, s.now(), 137
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

// ExecSync records the call and answers through the handler SetExecSyncHandler installed.
func (r *Runtime) ExecSync(_ context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	s := &r.containers
	s.mu.Lock()
	call := ExecCall{ContainerID: req.GetContainerId(), Cmd: slices.Clone(req.GetCmd()), Timeout: req.GetTimeout()}
	s.calls = append(s.calls, ContainerCall{Method: "ExecSync", ContainerID: call.ContainerID, Timeout: call.Timeout, Cmd: call.Cmd})
	_, exists := s.containers[call.ContainerID]
	handler := s.execHandler
	s.mu.Unlock()
	if !exists {
		return nil, status.Errorf(codes.NotFound, "container %q not found", call.ContainerID)
	}
	if handler == nil {
		return &runtimeapi.ExecSyncResponse{}, nil
	}
	return handler(call)
}

func (sb *fakeSandbox) labels() map[string]string {
	return map[string]string{podUIDLabel: sb.uid, podNameLabel: sb.name, podNamespaceLabel: sb.namespace}
}

func (sb *fakeSandbox) metadata() *runtimeapi.PodSandboxMetadata {
	return &runtimeapi.PodSandboxMetadata{Name: sb.name, Namespace: sb.namespace, Uid: sb.uid}
}

func (c *fakeContainer) metadata() *runtimeapi.ContainerMetadata {
	return &runtimeapi.ContainerMetadata{Name: c.name, Attempt: uint32(c.restartCount)}
}

// matchesLabels reports whether labels carry every key and value of selector.
func matchesLabels(labels, selector map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}
