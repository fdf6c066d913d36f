package cri

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// envExecTimeout bounds the env command run in a container whose runtime does not report
// its environment.
const envExecTimeout = 3 * time.Second

// verboseContainerInfo is the part of the "info" entry of a verbose container status that
// holds the container's environment: the OCI runtime spec the container was created with
// (containerd and CRI-O report it).
type verboseContainerInfo struct {
	RuntimeSpec *struct {
		Process *struct {
			Env []string `json:"env"`
		} `json:"process"`
	} `json:"runtimeSpec"`
}

// ContainerEnv returns the environment container id runs with, by name. It reads the
// runtime spec that the runtime's verbose container status reports, which holds every
// value exactly as the container got it; only when the runtime reports none does it run env
// in the container, which needs an env program there and reads a value spanning lines
// only up to its first line break.
func (r *Runtime) ContainerEnv(ctx context.Context, id string) (map[string]string, error) {
	resp, err := r.RuntimeService.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		return nil, fmt.Errorf("reading the verbose status of container %s: %w", id, err)
	}
	if raw, ok := resp.GetInfo()["info"]; ok {
		var info verboseContainerInfo
		if err := json.Unmarshal([]byte(raw), &info); err == nil && info.RuntimeSpec != nil && info.RuntimeSpec.Process != nil {
			return parseEnv(info.RuntimeSpec.Process.Env), nil
		}
	}
	result, err := r.ExecSync(ctx, id, []string{"env"}, envExecTimeout)
	if err != nil {
		return nil, fmt.Errorf("reading the environment of container %s: %w", id, err)
	}
	return parseEnv(strings.Split(strings.TrimSpace(string(result.Stdout)), "\n")), nil
}

// parseEnv turns NAME=value lines into a map; lines without "=" are skipped.
func parseEnv(lines []string) map[string]string {
	env := make(map[string]string, len(lines))
	for _, line := range lines {
		if name, value, ok := strings.Cut(line, "="); ok {
			env[name] = value
		}
	}
	return env
}
