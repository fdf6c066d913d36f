// Package crifake serves a fake container runtime over the real CRI v1 gRPC protocol on a
// unix socket, for tests of code that talks to the CRI: the daemon's readiness check now,
// the node agent's container and image work later. Calls it does not implement answer
// gRPC's Unimplemented status, as a real runtime of another version would.
package crifake

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Runtime is a running fake CRI runtime.
type Runtime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	server   *grpc.Server
	path     string
	stopOnce sync.Once

	mu             sync.Mutex
	runtimeVersion string

	// containers are the pod sandboxes and containers of the runtime service
	// (containers.go); images are the image service's images and pulls (images.go). Each
	// has its own lock.
	containers containerState
	images     imageState
}

// Version answers like a v1 runtime named RuntimeName, version "1.2.3" unless changed with
// SetRuntimeVersion.
func (r *Runtime) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: RuntimeName, RuntimeVersion: r.runtimeVersion, RuntimeApiVersion: "v1"}, nil
}

// SetRuntimeVersion changes the version Version answers, as an in-place upgrade of the
// runtime behind the same socket would.
func (r *Runtime) SetRuntimeVersion(version string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runtimeVersion = version
}

// Start serves a fake runtime on the unix socket path (its directory is created) until
// the test ends or Stop is called.
func Start(t testing.TB, path string) *Runtime {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	listener, err := net.Listen("unix", path)
	if err != nil {
		t.Fatalf("listening on %s: %v", path, err)
	}
	r := &Runtime{server: grpc.NewServer(), path: path, runtimeVersion: "1.2.3"}
	runtimeapi.RegisterRuntimeServiceServer(r.server, r)
	runtimeapi.RegisterImageServiceServer(r.server, r)
	go func() { _ = r.server.Serve(listener) }()
	t.Cleanup(r.Stop)
	return r
}

// Endpoint is the runtime's address in --runtime-endpoint form.
func (r *Runtime) Endpoint() string { return "unix://" + r.path }

// Stop stops serving; the socket file is removed with the listener.
func (r *Runtime) Stop() { r.stopOnce.Do(r.server.Stop) }

// ShortTempDir returns a new temporary directory whose path is short enough for unix
// sockets (108 bytes), which t.TempDir's often is not; it is removed when the test ends.
func ShortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cri")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
