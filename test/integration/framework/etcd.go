package framework

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

const (
	// portAttempts bounds the retries when a port picked as free was taken before the
	// server could bind it, which can happen while other tests start servers.
	portAttempts = 3

	// readinessPollInterval is how often a starting server is asked whether it is ready.
	readinessPollInterval = 100 * time.Millisecond
)

// startEtcd starts a single-member etcd serving plain HTTP on loopback, with its data
// in dir, and waits until it is healthy. It returns the process and the client URL.
func startEtcd(ctx context.Context, binary, dir string, extraArgs []string) (*Process, string, error) {
	logger := klog.FromContext(ctx)
	logPath := filepath.Join(dir, "etcd.log")
	for attempt := 1; ; attempt++ {
		ports, err := FreeLoopbackPorts(2)
		if err != nil {
			return nil, "", err
		}
		clientURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
		peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
		dataDir := filepath.Join(dir, "etcd-data")
		// A failed attempt may have left a member with other peer URLs in the data dir.
		if err := os.RemoveAll(dataDir); err != nil {
			return nil, "", fmt.Errorf("clearing the etcd data dir: %w", err)
		}
		args := mergeArgs([]string{
			"--name=integration",
			"--data-dir=" + dataDir,
			"--listen-client-urls=" + clientURL,
			"--advertise-client-urls=" + clientURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=integration=" + peerURL,
			"--initial-cluster-state=new",
			// The data is thrown away after the test: durability only costs time.
			"--unsafe-no-fsync=true",
			// Snapshot (and truncate the in-memory raft log) often, which keeps memory
			// small during tests that write many objects.
			"--snapshot-count=5000",
			// A bound on disk use, well above what any test should write.
			"--quota-backend-bytes=" + strconv.Itoa(2<<30),
			// Info logs cost disk and CPU on every request; warnings say what matters.
			"--log-level=warn",
		}, extraArgs)
		proc, err := StartProcess(ProcessConfig{Name: "etcd", Path: binary, Args: args, LogPath: logPath})
		if err != nil {
			return nil, "", err
		}
		err = waitForServer(ctx, proc, func(ctx context.Context) error { return etcdHealthy(ctx, clientURL) })
		if err == nil {
			logger.V(2).Info("etcd is healthy", "url", clientURL, "pid", proc.Pid())
			return proc, clientURL, nil
		}
		proc.Kill()
		if attempt < portAttempts && logMentionsPortConflict(proc) {
			logger.Info("Retrying etcd start on other ports", "attempt", attempt)
			continue
		}
		return nil, "", fmt.Errorf("starting etcd: %w", err)
	}
}

// etcdHealthy asks etcd's /health endpoint whether it serves requests.
func etcdHealthy(ctx context.Context, clientURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientURL+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"health":"true"`) {
		return fmt.Errorf("etcd /health: %s: %s", resp.Status, body)
	}
	return nil
}

// waitForServer polls ready until it succeeds, the process exits or ctx ends. A server
// that exits is reported at once with the end of its log instead of after a timeout.
func waitForServer(ctx context.Context, proc *Process, ready func(ctx context.Context) error) error {
	ticker := time.NewTicker(readinessPollInterval)
	defer ticker.Stop()
	var lastErr error
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		lastErr = ready(attemptCtx)
		cancel()
		if lastErr == nil {
			return nil
		}
		select {
		case <-proc.Done():
			return fmt.Errorf("%s", proc.describeExit())
		case <-ctx.Done():
			return fmt.Errorf("%s did not become ready: %w (last check: %v); last lines of %s:\n%s",
				proc.Name(), ctx.Err(), lastErr, proc.LogPath(), proc.LogTail(failureLogLines))
		case <-ticker.C:
		}
	}
}

// logMentionsPortConflict reports whether a server failed because a port was taken.
func logMentionsPortConflict(proc *Process) bool {
	return strings.Contains(proc.LogTail(failureLogLines), "address already in use")
}

// FreeLoopbackPorts returns n distinct TCP ports that were free on 127.0.0.1 a moment
// ago. All listeners are open at once so that the ports differ; a port can still be
// taken before the server binds it, which the callers retry.
func FreeLoopbackPorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free loopback port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
