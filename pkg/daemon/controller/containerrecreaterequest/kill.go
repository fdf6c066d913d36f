package containerrecreaterequest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/daemon/cri"
)

const (
	// defaultStopGraceSeconds is the grace period of a request that sets none (admission
	// normally copies the pod's).
	defaultStopGraceSeconds = 30
	// minStopGraceSeconds is the least the runtime is given between the stop signal and the
	// kill, whatever the preStop hook took: the kubelet's floor.
	minStopGraceSeconds = 2
	// stopCallSlack is how much longer than the grace period a StopContainer call may take
	// before the agent gives up on it.
	stopCallSlack = time.Minute
)

// kill stops container (the current instance of the target called name) the way the kubelet
// stops a container: event, preStop hook within the grace period, then StopContainer with
// what is left of the grace period. The kubelet starts the replacement.
func (c *Controller) kill(ctx context.Context, crr *appsv1beta1.ContainerRecreateRequest, podUID, name string, container cri.Container, rt *cri.Runtime) error {
	logger := klog.FromContext(ctx).WithValues("container", name, "containerID", container.ID)
	grace := int64(defaultStopGraceSeconds)
	if crr.Spec.Strategy != nil && crr.Spec.Strategy.TerminationGracePeriodSeconds != nil {
		grace = *crr.Spec.Strategy.TerminationGracePeriodSeconds
	}
	ref := c.containerReference(crr, podUID, name)
	c.recorder.Event(ref, corev1.EventTypeNormal, KillingReason, fmt.Sprintf("Stopping container %s by ContainerRecreateRequest %s", name, crr.Name))

	if target := specContainer(crr, name); target != nil && target.PreStop != nil && grace > 0 {
		start := c.clock.Now()
		if err := c.runPreStop(ctx, rt, podUID, container.ID, target, time.Duration(grace)*time.Second); err != nil {
			logger.Error(err, "PreStop hook failed; stopping the container anyway")
			// As the kubelet: the event does not carry the hook's output, which may hold secrets.
			c.recorder.Event(ref, corev1.EventTypeWarning, FailedPreStopHookReason, "PreStopHook failed")
		}
		grace -= int64(c.clock.Since(start) / time.Second)
	}
	grace = max(grace, minStopGraceSeconds)

	logger.V(2).Info("Stopping container", "gracePeriodSeconds", grace)
	stopCtx, cancel := context.WithTimeout(ctx, time.Duration(grace)*time.Second+stopCallSlack)
	defer cancel()
	return rt.StopContainer(stopCtx, container.ID, time.Duration(grace)*time.Second)
}

// specContainer returns the request's entry for the container called name.
func specContainer(crr *appsv1beta1.ContainerRecreateRequest, name string) *appsv1beta1.ContainerRecreateRequestContainer {
	for i := range crr.Spec.Containers {
		if crr.Spec.Containers[i].Name == name {
			return &crr.Spec.Containers[i]
		}
	}
	return nil
}

// containerReference names the container called name of crr's pod, for events, as the
// kubelet's container events do. The pod comes from the informer when it is there (and is
// the request's pod), otherwise from what the request says about it.
func (c *Controller) containerReference(crr *appsv1beta1.ContainerRecreateRequest, podUID, name string) *corev1.ObjectReference {
	ref := &corev1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: crr.Namespace, Name: crr.Spec.PodName, UID: types.UID(podUID),
		FieldPath: fmt.Sprintf("spec.containers{%s}", name),
	}
	if pod, err := c.pods.Pods(crr.Namespace).Get(crr.Spec.PodName); err == nil && string(pod.UID) == podUID {
		ref.ResourceVersion = pod.ResourceVersion
	}
	return ref
}

// runPreStop runs the container's preStop hook, giving up after grace.
func (c *Controller) runPreStop(ctx context.Context, rt *cri.Runtime, podUID, containerID string, target *appsv1beta1.ContainerRecreateRequestContainer, grace time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	hook := target.PreStop
	switch {
	case hook.Exec != nil:
		_, err := rt.ExecSync(ctx, containerID, hook.Exec.Command, grace)
		return err
	case hook.HTTPGet != nil:
		return c.runHTTPHook(ctx, rt, podUID, hook.HTTPGet, target.Ports)
	case hook.TCPSocket != nil:
		return fmt.Errorf("tcpSocket hooks are not supported")
	}
	return fmt.Errorf("the preStop hook has no action")
}

// runHTTPHook sends the hook's GET request to its host or, when it names none, to the pod
// IP from the runtime's sandbox status. Only a failure to get an answer fails the hook, as
// with the kubelet; the answer's status is not looked at.
func (c *Controller) runHTTPHook(ctx context.Context, rt *cri.Runtime, podUID string, hook *corev1.HTTPGetAction, ports []corev1.ContainerPort) error {
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
	resp, err := c.hookClient.Do(req)
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
