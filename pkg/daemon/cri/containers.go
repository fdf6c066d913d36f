package cri

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The labels and annotation the kubelet sets on the sandboxes and containers it creates.
// They are the only link between a pod and its containers in the runtime.
const (
	PodUIDLabel                     = "io.kubernetes.pod.uid"
	ContainerNameLabel              = "io.kubernetes.container.name"
	ContainerRestartCountAnnotation = "io.kubernetes.container.restartCount"
	// ContainerHashAnnotation is the kubelet's hash of the container's spec (hexadecimal),
	// which it restarts the container on when it changes.
	ContainerHashAnnotation = "io.kubernetes.container.hash"
)

// Container is the current container of one name in a pod, as the runtime reports it.
type Container struct {
	// ID is the runtime's container ID, without the "<runtime>://" scheme of pod status.
	ID   string
	Name string
	// RestartCount is what the kubelet recorded when it created the container.
	RestartCount int32
	// Hash is the kubelet's hash of the spec it created the container from; 0 when it
	// recorded none.
	Hash      uint64
	State     runtimeapi.ContainerState
	CreatedAt time.Time
	// StartedAt is zero for a container that never started.
	StartedAt time.Time
}

// KubeContainerID returns the ID of a container of the runtime called runtimeName the way
// the kubelet writes it into pod status: "<runtime name>://<id>".
func KubeContainerID(runtimeName, id string) string {
	return runtimeName + "://" + id
}

// PodContainers returns the pod's current containers by name, found the way the kubelet
// finds them: every container labelled with the pod's UID, the newest of each name being
// the current one (older ones are exited instances the kubelet keeps for their logs).
func (r *Runtime) PodContainers(ctx context.Context, podUID string) (map[string]Container, error) {
	resp, err := r.RuntimeService.ListContainers(ctx, &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{LabelSelector: map[string]string{PodUIDLabel: podUID}},
	})
	if err != nil {
		return nil, fmt.Errorf("listing the containers of pod %s: %w", podUID, err)
	}
	newest := map[string]*runtimeapi.Container{}
	for _, c := range resp.GetContainers() {
		name := c.GetLabels()[ContainerNameLabel]
		if name == "" {
			// Not created by the kubelet (or by a kubelet too old to label it): it is not one
			// of the pod's spec containers.
			continue
		}
		if current, ok := newest[name]; !ok || newerContainer(c, current) {
			newest[name] = c
		}
	}
	containers := make(map[string]Container, len(newest))
	for name, c := range newest {
		status, err := r.RuntimeService.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.GetId()})
		if err != nil {
			return nil, fmt.Errorf("reading the status of container %s (%s) of pod %s: %w", name, c.GetId(), podUID, err)
		}
		st := status.GetStatus()
		container := Container{
			ID:           c.GetId(),
			Name:         name,
			RestartCount: restartCount(c),
			Hash:         containerHash(c),
			State:        st.GetState(),
			CreatedAt:    time.Unix(0, c.GetCreatedAt()),
		}
		if st.GetStartedAt() > 0 {
			container.StartedAt = time.Unix(0, st.GetStartedAt())
		}
		containers[name] = container
	}
	return containers, nil
}

// newerContainer reports whether a was created after b. Equal creation times (coarse
// runtime clocks) fall back to the restart count, which only grows.
func newerContainer(a, b *runtimeapi.Container) bool {
	return cmp.Or(cmp.Compare(a.GetCreatedAt(), b.GetCreatedAt()), cmp.Compare(restartCount(a), restartCount(b))) > 0
}

// restartCount reads the kubelet's restart count annotation; without one (or with a value
// that does not parse) the metadata's attempt, which the kubelet sets to the same number.
func restartCount(c *runtimeapi.Container) int32 {
	if value, ok := c.GetAnnotations()[ContainerRestartCountAnnotation]; ok {
		if n, err := strconv.ParseInt(value, 10, 32); err == nil {
			return int32(n)
		}
	}
	return int32(c.GetMetadata().GetAttempt())
}

// containerHash reads the kubelet's container hash annotation; 0 without one or with a value
// that does not parse.
func containerHash(c *runtimeapi.Container) uint64 {
	hash, err := strconv.ParseUint(c.GetAnnotations()[ContainerHashAnnotation], 16, 64)
	if err != nil {
		return 0
	}
	return hash
}

// PodIP returns the IP of the pod's newest ready sandbox, from its status. It is where an
// HTTP hook without a host is sent, as the kubelet sends it to the pod IP.
func (r *Runtime) PodIP(ctx context.Context, podUID string) (string, error) {
	resp, err := r.RuntimeService.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{
			LabelSelector: map[string]string{PodUIDLabel: podUID},
			State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		},
	})
	if err != nil {
		return "", fmt.Errorf("listing the sandboxes of pod %s: %w", podUID, err)
	}
	sandboxes := resp.GetItems()
	if len(sandboxes) == 0 {
		return "", fmt.Errorf("pod %s has no ready sandbox", podUID)
	}
	newest := slices.MaxFunc(sandboxes, func(a, b *runtimeapi.PodSandbox) int { return cmp.Compare(a.GetCreatedAt(), b.GetCreatedAt()) })
	status, err := r.RuntimeService.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: newest.GetId()})
	if err != nil {
		return "", fmt.Errorf("reading the status of sandbox %s of pod %s: %w", newest.GetId(), podUID, err)
	}
	ip := status.GetStatus().GetNetwork().GetIp()
	if ip == "" {
		return "", fmt.Errorf("sandbox %s of pod %s has no IP", newest.GetId(), podUID)
	}
	return ip, nil
}

// StopContainer stops container id, giving it grace (whole seconds) between the stop
// signal and the kill. The call can take that long; ctx should allow for it.
func (r *Runtime) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	if _, err := r.RuntimeService.StopContainer(ctx, &runtimeapi.StopContainerRequest{
		ContainerId: id, Timeout: int64(grace / time.Second),
	}); err != nil {
		return fmt.Errorf("stopping container %s: %w", id, err)
	}
	return nil
}

// ExecResult is the outcome of a command run in a container.
type ExecResult struct {
	Stdout, Stderr []byte
	ExitCode       int32
}

// ExecSync runs cmd in container id and waits for it, for at most timeout (whole seconds;
// below one second: no limit of the runtime's own, only ctx's). A command that ran but
// exited non-zero is an error too, carrying its output.
func (r *Runtime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (ExecResult, error) {
	resp, err := r.RuntimeService.ExecSync(ctx, &runtimeapi.ExecSyncRequest{
		ContainerId: id, Cmd: cmd, Timeout: int64(timeout / time.Second),
	})
	if err != nil {
		return ExecResult{}, fmt.Errorf("running %q in container %s: %w", cmd, id, err)
	}
	result := ExecResult{Stdout: resp.GetStdout(), Stderr: resp.GetStderr(), ExitCode: resp.GetExitCode()}
	if result.ExitCode != 0 {
		return result, fmt.Errorf("command %q in container %s exited with code %d: %s", cmd, id, result.ExitCode, slices.Concat(result.Stdout, result.Stderr))
	}
	return result, nil
}
