package cri

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

const (
	// ReadinessWindow is how recent the last successful Version call must be for the node
	// agent to be ready.
	ReadinessWindow = 10 * time.Second
	// probePeriod is the Version call interval while the runtime answers; well inside
	// ReadinessWindow so that one slow call does not flip readiness.
	probePeriod = 3 * time.Second
	// Retry backoff while the runtime is missing or failing.
	initialRetry = 500 * time.Millisecond
	maxRetry     = 8 * time.Second
	// callTimeout bounds one Version call.
	callTimeout = 2 * time.Second
	// maxMessageSize matches the kubelet's limit: image lists of busy nodes exceed gRPC's
	// default 4 MiB.
	maxMessageSize = 16 * 1024 * 1024
)

// Runtime is a connection to a CRI runtime.
type Runtime struct {
	// Endpoint is the unix:// endpoint in use.
	Endpoint string
	// Name and Version come from the runtime's Version answer, e.g. "containerd", "1.6.20".
	Name    string
	Version string
	// APIVersion is the CRI API version the runtime reports, e.g. "v1".
	APIVersion string

	conn *grpc.ClientConn
	// RuntimeService and ImageService are the CRI v1 clients.
	RuntimeService runtimeapi.RuntimeServiceClient
	ImageService   runtimeapi.ImageServiceClient
}

// Monitor finds the runtime, keeps a connection to it and calls Version periodically. It is
// also the "cri" readiness check, which names the runtime in /readyz?verbose.
type Monitor struct {
	candidates []string
	explicit   bool
	clock      clock.Clock
	// Probe and retry intervals; fields so that tests can shorten them.
	probePeriod, initialRetry, maxRetry time.Duration

	mu          sync.Mutex
	runtime     *Runtime
	lastSuccess time.Time
	lastErr     error
	connected   chan struct{}
	// changed receives a token whenever the runtime turns available or unavailable; one
	// pending token stands for any number of changes (read State for the latest).
	changed chan struct{}
}

// NewMonitor returns a monitor for an explicit endpoint or, with an empty endpoint, for the
// first socket found in dirs.
func NewMonitor(endpoint string, dirs []string) (*Monitor, error) {
	candidates, err := Candidates(endpoint, dirs)
	if err != nil {
		return nil, err
	}
	return &Monitor{
		candidates:   candidates,
		explicit:     endpoint != "",
		clock:        clock.RealClock{},
		probePeriod:  probePeriod,
		initialRetry: initialRetry,
		maxRetry:     maxRetry,
		lastErr:      fmt.Errorf("no Version call has been made yet"),
		connected:    make(chan struct{}),
		changed:      make(chan struct{}, 1),
	}, nil
}

// Changed returns a channel that receives a token after the runtime turned available or
// unavailable; State tells which.
func (m *Monitor) Changed() <-chan struct{} { return m.changed }

// State returns whether the last probe succeeded, and the error of the last failed probe
// otherwise (nil before the first probe).
func (m *Monitor) State() (available bool, lastErr error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastErr == nil && !m.lastSuccess.IsZero(), m.lastErr
}

func (m *Monitor) notifyChange() {
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// Name is the readiness check's name.
func (*Monitor) Name() string { return "cri" }

// Check passes when the last Version call succeeded and was made within ReadinessWindow.
func (m *Monitor) Check(*http.Request) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lastErr != nil {
		return fmt.Errorf("container runtime not available: %w", m.lastErr)
	}
	if age := m.clock.Since(m.lastSuccess); age > ReadinessWindow {
		return fmt.Errorf("last successful CRI Version call was %v ago", age.Round(time.Second))
	}
	return nil
}

// Describe names the runtime for the passing readiness check, for example "containerd 1.6.20
// (runtime API v1) at unix:///run/containerd/containerd.sock", so that an operator sees which
// runtime the agent talks to. It is empty before the runtime first answered.
func (m *Monitor) Describe() string {
	rt := m.Runtime()
	if rt == nil {
		return ""
	}
	// Runtimes fill the Version answer unevenly; leave out what is missing.
	description := rt.Name
	if rt.Version != "" {
		description += " " + rt.Version
	}
	if rt.APIVersion != "" {
		description += " (runtime API " + rt.APIVersion + ")"
	}
	return strings.TrimSpace(description + " at " + rt.Endpoint)
}

// Runtime returns the current connection, or nil before the first successful Version call.
func (m *Monitor) Runtime() *Runtime {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runtime
}

// WaitForRuntime blocks until the runtime first answered or ctx ends.
func (m *Monitor) WaitForRuntime(ctx context.Context) (*Runtime, error) {
	select {
	case <-m.connected:
		return m.Runtime(), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Run connects and probes until ctx ends, then closes the connection.
func (m *Monitor) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	retry := m.initialRetry
	var conn *grpc.ClientConn
	var endpoint string
	defer func() {
		if conn != nil {
			_ = conn.Close()
		}
	}()
	wasHealthy := true // log the first failure
	probed := false
	for {
		err := func() error {
			if conn == nil {
				found, err := Discover(m.candidates)
				if err != nil {
					return err
				}
				conn, err = grpc.NewClient(found,
					grpc.WithTransportCredentials(insecure.NewCredentials()),
					grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageSize), grpc.MaxCallSendMsgSize(maxMessageSize)))
				if err != nil {
					return fmt.Errorf("connecting to %s: %w", found, err)
				}
				endpoint = found
			}
			return m.probe(ctx, conn, endpoint)
		}()

		// The first answer, and every change after it, is news for the node's condition.
		changed := !probed || (err == nil) != wasHealthy
		probed = true
		next := m.probePeriod
		if err != nil {
			m.recordFailure(err)
			if wasHealthy {
				logger.Error(err, "Container runtime not available; retrying", "endpoint", endpoint)
			}
			wasHealthy = false
			// A discovered socket that disappeared may come back elsewhere (the runtime was
			// replaced): look again. An explicit endpoint is kept; gRPC reconnects to it.
			if conn != nil && !m.explicit && !socketExists(endpoint) {
				_ = conn.Close()
				conn, endpoint = nil, ""
			}
			next = retry
			retry = min(retry*2, m.maxRetry)
		} else {
			if !wasHealthy {
				rt := m.Runtime()
				logger.Info("Container runtime available", "endpoint", endpoint, "runtime", rt.Name, "version", rt.Version)
			}
			wasHealthy = true
			retry = m.initialRetry
		}
		if changed {
			m.notifyChange()
		}

		select {
		case <-ctx.Done():
			return
		case <-m.clock.After(next):
		}
	}
}

// probe calls Version and records the result.
func (m *Monitor) probe(ctx context.Context, conn *grpc.ClientConn, endpoint string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	runtimeService := runtimeapi.NewRuntimeServiceClient(conn)
	resp, err := runtimeService.Version(ctx, &runtimeapi.VersionRequest{Version: "v1"})
	if err != nil {
		return fmt.Errorf("CRI Version call to %s: %w", endpoint, err)
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	// A runtime upgraded behind the same socket answers on the same connection with a new
	// version: replace the Runtime (never modify it, callers hold it unlocked) so that logs and
	// /readyz name the runtime that answered last.
	if rt := m.runtime; rt == nil || rt.conn != conn || rt.Name != resp.GetRuntimeName() ||
		rt.Version != resp.GetRuntimeVersion() || rt.APIVersion != resp.GetRuntimeApiVersion() {
		m.runtime = &Runtime{
			Endpoint:       endpoint,
			Name:           resp.GetRuntimeName(),
			Version:        resp.GetRuntimeVersion(),
			APIVersion:     resp.GetRuntimeApiVersion(),
			conn:           conn,
			RuntimeService: runtimeService,
			ImageService:   runtimeapi.NewImageServiceClient(conn),
		}
	}
	m.lastSuccess = m.clock.Now()
	m.lastErr = nil
	select {
	case <-m.connected:
	default:
		close(m.connected)
	}
	return nil
}

func (m *Monitor) recordFailure(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lastErr = err
}

func socketExists(endpoint string) bool {
	_, err := os.Stat(strings.TrimPrefix(endpoint, "unix://"))
	return err == nil
}
