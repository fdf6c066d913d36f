// Package containerstop stops a pod's container through the CRI the way the kubelet stops
// one: the container's preStop hook first, bounded by the grace period, then the runtime's
// StopContainer with what is left of the grace period, never less than the kubelet's 2 s.
// The kubelet then starts the container again per the pod's restart policy; the node agent
// never starts containers itself.
//
// The node agent's controllers that restart containers (ContainerRecreateRequests, and
// env-from-metadata in-place updates) share it, so that a container is stopped the same way
// whoever asks. They record their own events around it.
package containerstop

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/bosun-dev/bosun/pkg/daemon/cri"
)

const (
	// MinGraceSeconds is the least the runtime is given between the stop signal and the
	// kill, whatever the preStop hook took: the kubelet's floor.
	MinGraceSeconds = 2
	// stopCallSlack is how much longer than the grace period a StopContainer call may take
	// before the agent gives up on it.
	stopCallSlack = time.Minute
)

// Container is a container to stop and what the kubelet would stop it with.
type Container struct {
	// PodUID is the UID of the container's pod, whose sandbox gives an httpGet hook without
	// a host its address.
	PodUID string
	// ID is the runtime's container ID, without the "<runtime>://" scheme.
	ID string
	// PreStop is the hook to run first; nil for none. Ports resolve its named port.
	PreStop *corev1.LifecycleHandler
	Ports   []corev1.ContainerPort
	// GraceSeconds is the time the hook and the stop share.
	GraceSeconds int64
	// HookFailed, when set, is told of a preStop hook that failed, before the container is
	// stopped anyway.
	HookFailed func(error)
}

// Stopper stops containers. It is safe for concurrent use.
type Stopper struct {
	clock clock.Clock
	// hookClient sends the GET requests of httpGet preStop hooks.
	hookClient *http.Client
}

// NewStopper returns a Stopper measuring the time hooks take with clk.
func NewStopper(clk clock.Clock) *Stopper {
	return &Stopper{
		clock: clk,
		hookClient: &http.Client{
			// As the kubelet does for hooks: HTTPS hooks do not verify the pod's certificate.
			Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}, //nolint:gosec // hooks talk to the pod itself
		},
	}
}

// Stop runs c's preStop hook, if any and if there is a grace period, then stops c through
// rt with the rest of the grace period (at least MinGraceSeconds). A failing hook does not
// prevent the stop; it is passed to c.HookFailed. The error is the stop's.
func (s *Stopper) Stop(ctx context.Context, rt *cri.Runtime, c Container) error {
	logger := klog.FromContext(ctx).WithValues("containerID", c.ID)
	grace := c.GraceSeconds
	if c.PreStop != nil && grace > 0 {
		start := s.clock.Now()
		if err := s.runPreStop(ctx, rt, c, time.Duration(grace)*time.Second); err != nil {
			logger.Error(err, "PreStop hook failed; stopping the container anyway")
			if c.HookFailed != nil {
				c.HookFailed(err)
			}
		}
		grace -= int64(s.clock.Since(start) / time.Second)
	}
	grace = max(grace, MinGraceSeconds)

	logger.V(2).Info("Stopping container", "gracePeriodSeconds", grace)
	stopCtx, cancel := context.WithTimeout(ctx, time.Duration(grace)*time.Second+stopCallSlack)
	defer cancel()
	return rt.StopContainer(stopCtx, c.ID, time.Duration(grace)*time.Second)
}

// runPreStop runs the container's preStop hook, giving up after grace.
func (s *Stopper) runPreStop(ctx context.Context, rt *cri.Runtime, c Container, grace time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	hook := c.PreStop
	switch {
	case hook.Exec != nil:
		_, err := rt.ExecSync(ctx, c.ID, hook.Exec.Command, grace)
		return err
	case hook.HTTPGet != nil:
		return s.runHTTPHook(ctx, rt, c.PodUID, hook.HTTPGet, c.Ports)
	case hook.Sleep != nil:
		select {
		case <-s.clock.After(time.Duration(hook.Sleep.Seconds) * time.Second):
			return nil
		case <-ctx.Done():
			// As the kubelet: a sleep cut short by the grace period is not a failure.
			return nil
		}
	case hook.TCPSocket != nil:
		return fmt.Errorf("tcpSocket hooks are not supported")
	}
	return fmt.Errorf("the preStop hook has no action")
}

// runHTTPHook sends the hook's GET request to its host or, when it names none, to the pod
// IP from the runtime's sandbox status. Only a failure to get an answer fails the hook, as
// with the kubelet; the answer's status is not looked at.
func (s *Stopper) runHTTPHook(ctx context.Context, rt *cri.Runtime, podUID string, hook *corev1.HTTPGetAction, ports []corev1.ContainerPort) error {
	host := hook.Host
	if host == "" {
		ip, err := rt.PodIP(ctx, podUID)
		if err != nil {
			return fmt.Errorf("finding the pod IP for the preStop hook: %w", err)
		}
		host = ip
	}
	port, err := resolvePort(hook.Port, ports)
	if err != nil {
		return err
	}
	target := hookURL(strings.ToLower(string(hook.Scheme)), host, port, hook.Path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return fmt.Errorf("building the preStop hook request to %s: %w", target, err)
	}
	req.Header.Set("User-Agent", "bosun-daemon")
	req.Header.Set("Accept", "*/*")
	for _, header := range hook.HTTPHeaders {
		if strings.EqualFold(header.Name, "Host") {
			req.Host = header.Value
			continue
		}
		req.Header.Add(header.Name, header.Value)
	}
	resp, err := s.hookClient.Do(req)
	if err != nil {
		return fmt.Errorf("sending the preStop hook request to %s: %w", target, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	return nil
}

// resolvePort returns the port number of a hook's port: a number, or the name of one of the
// container's ports.
func resolvePort(port intstr.IntOrString, ports []corev1.ContainerPort) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	if n, err := strconv.Atoi(port.StrVal); err == nil {
		return n, nil
	}
	for _, p := range ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("the container has no port named %q", port.StrVal)
}

// hookURL builds the hook's URL; path may carry a query.
func hookURL(scheme, host string, port int, path string) *url.URL {
	if scheme == "" {
		scheme = "http"
	}
	u, err := url.Parse(path)
	if err != nil {
		u = &url.URL{Path: path}
	}
	u.Scheme, u.Host = scheme, net.JoinHostPort(host, strconv.Itoa(port))
	if u.Path == "" {
		u.Path = "/"
	} else if !strings.HasPrefix(u.Path, "/") {
		u.Path = "/" + u.Path
	}
	return u
}
