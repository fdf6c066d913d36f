// Package cri connects bosun-daemon to the node's container runtime over CRI v1 gRPC and
// watches that connection. The agent never gives up on a missing or broken runtime: it keeps
// retrying with backoff and reports not-ready through the "cri" readiness check, instead of
// crash-looping (a long-standing complaint about OpenKruise's daemon).
package cri

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DefaultSocketDirs are the directories probed for a runtime socket when no endpoint is
// given. In a pod, the host's /run (or /var/run) is typically mounted at one of them.
var DefaultSocketDirs = []string{"/run", "/var/run"}

// socketNames are probed in each directory, in this order: containerd, CRI-O, cri-dockerd,
// each directly in the directory and in its own subdirectory.
var socketNames = []string{
	"containerd.sock",
	"containerd/containerd.sock",
	"crio.sock",
	"crio/crio.sock",
	"cri-dockerd.sock",
	"cri-dockerd/cri-dockerd.sock",
}

// NormalizeEndpoint turns "unix:///path" or "/path" into "unix:///path". Other schemes are
// rejected: CRI runtimes on Linux listen on unix sockets.
func NormalizeEndpoint(endpoint string) (string, error) {
	path := strings.TrimPrefix(endpoint, "unix://")
	if strings.Contains(path, "://") || !filepath.IsAbs(path) {
		return "", fmt.Errorf("CRI endpoint %q must be unix:///<absolute path> or an absolute socket path", endpoint)
	}
	return "unix://" + path, nil
}

// Candidates returns the endpoints to try: the explicit endpoint alone when given, otherwise
// every known socket name in every directory.
func Candidates(endpoint string, dirs []string) ([]string, error) {
	if endpoint != "" {
		normalized, err := NormalizeEndpoint(endpoint)
		if err != nil {
			return nil, err
		}
		return []string{normalized}, nil
	}
	var candidates []string
	for _, dir := range dirs {
		for _, name := range socketNames {
			candidates = append(candidates, "unix://"+filepath.Join(dir, name))
		}
	}
	return candidates, nil
}

// Discover returns the first candidate whose socket file exists.
func Discover(candidates []string) (string, error) {
	for _, candidate := range candidates {
		info, err := os.Stat(strings.TrimPrefix(candidate, "unix://"))
		if err == nil && info.Mode()&os.ModeSocket != 0 {
			return candidate, nil
		}
	}
	return "", fmt.Errorf("no CRI runtime socket found; tried %s", strings.Join(candidates, ", "))
}
