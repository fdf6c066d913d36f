package nodeimage

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/daemon/cri"
)

const (
	// Pull policy defaults, for tags admitted before the webhook defaulted them.
	defaultTimeoutSeconds = 600
	defaultBackoffLimit   = 3

	// Between two attempts at one tag the worker sleeps 1 s, doubling up to 30 s.
	firstAttemptDelay = time.Second
	maxAttemptDelay   = 30 * time.Second
)

// errDeadlineExceeded is the message of a tag whose activeDeadlineSeconds passed.
var errDeadlineExceeded = errors.New("pulling exceeds the activeDeadlineSeconds")

// imagePool holds the pulls of one image: its pull configuration and one worker per tag
// being pulled.
type imagePool struct {
	name string

	// mu guards the pull configuration, which tag workers read at every attempt so that a
	// secret or sandbox change reaches pulls already retrying.
	mu          sync.Mutex
	credentials []cri.RegistryCredential
	sandbox     *runtimeapi.PodSandboxConfig

	// workers are by tag; only the controller's sync touches the map.
	workers map[string]*tagWorker
}

func newImagePool(name string) *imagePool {
	return &imagePool{name: name, workers: map[string]*tagWorker{}}
}

// setPullConfig records the credentials and sandbox config of the image's next pulls. The
// sandbox config carries the spec's labels and annotations plus the annotation that tells
// runtimes and their plugins the agent is pulling.
func (p *imagePool) setPullConfig(credentials []cri.RegistryCredential, sandbox *appsv1beta1.SandboxConfig) {
	config := &runtimeapi.PodSandboxConfig{Annotations: map[string]string{}}
	if sandbox != nil {
		config.Labels = maps.Clone(sandbox.Labels)
		maps.Copy(config.Annotations, sandbox.Annotations)
	}
	config.Annotations[appsv1beta1.PullingImageByAnnotationKey] = appsv1beta1.PullingImageByAnnotationValue
	p.mu.Lock()
	defer p.mu.Unlock()
	p.credentials, p.sandbox = credentials, config
}

func (p *imagePool) pullConfig() ([]cri.RegistryCredential, *runtimeapi.PodSandboxConfig) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.credentials, p.sandbox
}

// stop stops every worker of the pool.
func (p *imagePool) stop() {
	for tag, w := range p.workers {
		w.cancel()
		delete(p.workers, tag)
	}
}

// tagWorker pulls one version of one tag, with retries, and keeps its status.
type tagWorker struct {
	image   string
	spec    appsv1beta1.ImageTagSpec
	owner   *corev1.ObjectReference // the NodeImage, for events
	cancel  context.CancelFunc
	started time.Time

	mu     sync.Mutex
	status appsv1beta1.ImageTagStatus
}

// currentStatus returns a copy of the worker's status.
func (w *tagWorker) currentStatus() appsv1beta1.ImageTagStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	return *w.status.DeepCopy()
}

func (w *tagWorker) update(change func(*appsv1beta1.ImageTagStatus)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	change(&w.status)
}

func (w *tagWorker) finished() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status.CompletionTime != nil
}

// now is the controller's time at the precision the API server keeps, so that a status
// read back compares equal to the one written.
func now(clk clock.Clock) *metav1.Time {
	t := metav1.NewTime(clk.Now()).Rfc3339Copy()
	return &t
}

// startWorker starts pulling version spec.Version of a tag of pool; the worker reports
// Waiting at once.
func (c *Controller) startWorker(ctx context.Context, pool *imagePool, spec appsv1beta1.ImageTagSpec, nodeImage *corev1.ObjectReference) *tagWorker {
	ctx, cancel := context.WithCancel(ctx)
	w := &tagWorker{
		image:  pool.name,
		spec:   *spec.DeepCopy(),
		owner:  nodeImage,
		cancel: cancel,
		status: appsv1beta1.ImageTagStatus{Tag: spec.Tag, Phase: appsv1beta1.ImagePhaseWaiting, Version: spec.Version},
	}
	logger := klog.FromContext(ctx).WithValues("image", pool.name, "tag", spec.Tag, "version", spec.Version)
	c.pulls.Add(1)
	go func() {
		defer c.pulls.Done()
		defer cancel()
		c.runWorker(klog.NewContext(ctx, logger), pool, w)
	}()
	return w
}

// runWorker waits for a pull slot, pulls with retries and reports the result. A stopped
// worker reports nothing.
func (c *Controller) runWorker(ctx context.Context, pool *imagePool, w *tagWorker) {
	logger := klog.FromContext(ctx)
	if c.slots != nil {
		select {
		case c.slots <- struct{}{}:
			defer func() { <-c.slots }()
		case <-ctx.Done():
			return
		}
	}
	// Pulling is reported before the runtime is called at all: a pull can take longer than
	// the manager waits for a node to answer.
	w.started = c.clock.Now()
	w.update(func(s *appsv1beta1.ImageTagStatus) {
		s.Phase = appsv1beta1.ImagePhasePulling
		s.StartTime = now(c.clock)
		s.Progress = 0
	})
	c.enqueue(0)
	logger.V(2).Info("Pulling image")

	imageID, err := c.pullWithRetries(ctx, pool, w)
	if ctx.Err() != nil {
		logger.V(2).Info("Pull stopped")
		return
	}
	elapsed := c.clock.Since(w.started).Round(time.Millisecond)
	ref := cri.ImageReference(w.image, w.spec.Tag)
	if err != nil {
		w.update(func(s *appsv1beta1.ImageTagStatus) {
			s.Phase = appsv1beta1.ImagePhaseFailed
			s.CompletionTime = now(c.clock)
			s.Message = err.Error()
		})
		logger.Info("Image pull failed", "err", err)
		message := fmt.Sprintf("Image %s failed to pull after %s: %v", ref, elapsed, err)
		for i := range w.spec.OwnerReferences {
			c.recorder.Event(w.spec.OwnerReferences[i].DeepCopy(), corev1.EventTypeWarning, PullImageFailedReason, message)
		}
		c.recorder.Event(w.owner, corev1.EventTypeWarning, PullImageFailedReason, message)
	} else {
		w.update(func(s *appsv1beta1.ImageTagStatus) {
			s.Phase = appsv1beta1.ImagePhaseSucceeded
			s.CompletionTime = now(c.clock)
			s.Progress = 100
			s.ImageID = w.image + "@" + imageID
			s.Message = ""
		})
		logger.V(2).Info("Image pulled", "imageID", imageID)
		c.recorder.Event(w.owner, corev1.EventTypeNormal, PullImageSucceedReason, fmt.Sprintf("Image %s pulled in %s", ref, elapsed))
	}
	c.enqueue(0)
}

// pullWithRetries makes up to backoffLimit+1 attempts, each bounded by timeoutSeconds and
// by what is left of activeDeadlineSeconds, and returns the image ID or the last error.
func (c *Controller) pullWithRetries(ctx context.Context, pool *imagePool, w *tagWorker) (string, error) {
	logger := klog.FromContext(ctx)
	timeout, attempts, deadline := pullLimits(w.spec.PullPolicy, w.started)
	delay := firstAttemptDelay
	var lastErr error
	for attempt := 1; attempt <= attempts; attempt++ {
		if attempt > 1 {
			if !sleep(ctx, c.clock, delay) {
				return "", ctx.Err()
			}
			delay = min(2*delay, maxAttemptDelay)
		}
		attemptTimeout := timeout
		if !deadline.IsZero() {
			left := deadline.Sub(c.clock.Now())
			if left <= 0 {
				return "", errDeadlineExceeded
			}
			attemptTimeout = min(attemptTimeout, left)
		}
		imageID, err := c.pullOnce(ctx, pool, w, attemptTimeout)
		if err == nil {
			return imageID, nil
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if !deadline.IsZero() && !c.clock.Now().Before(deadline) {
			return "", errDeadlineExceeded
		}
		logger.V(2).Info("Pull attempt failed", "attempt", attempt, "attempts", attempts, "err", err)
		lastErr = err
	}
	return "", lastErr
}

// pullLimits reads a tag's pull policy: the bound of one attempt, the number of attempts,
// and the deadline of all of them (zero: none) for a pull started at start.
func pullLimits(policy *appsv1beta1.ImageTagPullPolicy, start time.Time) (timeout time.Duration, attempts int, deadline time.Time) {
	timeoutSeconds, backoffLimit := int32(defaultTimeoutSeconds), int32(defaultBackoffLimit)
	if policy != nil {
		if policy.TimeoutSeconds != nil && *policy.TimeoutSeconds > 0 {
			timeoutSeconds = *policy.TimeoutSeconds
		}
		if policy.BackoffLimit != nil && *policy.BackoffLimit >= 0 {
			backoffLimit = *policy.BackoffLimit
		}
		if policy.ActiveDeadlineSeconds != nil {
			deadline = start.Add(time.Duration(*policy.ActiveDeadlineSeconds) * time.Second)
		}
	}
	return time.Duration(timeoutSeconds) * time.Second, int(backoffLimit) + 1, deadline
}

// errAttemptTimeout is the cause of an attempt stopped by its timeout.
type errAttemptTimeout struct{ timeout time.Duration }

func (e errAttemptTimeout) Error() string {
	return fmt.Sprintf("the pull did not finish within %s", e.timeout)
}

// pullOnce makes one attempt: with policy IfNotPresent an image the runtime already has is
// taken as pulled; otherwise the image is pulled with the credentials that match its
// registry.
func (c *Controller) pullOnce(ctx context.Context, pool *imagePool, w *tagWorker, timeout time.Duration) (string, error) {
	// The timeout runs on the controller's clock, so that tests can let it pass.
	attemptCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(context.Canceled)
	timer := c.clock.NewTimer(timeout)
	go func() {
		defer timer.Stop()
		select {
		case <-timer.C():
			cancel(errAttemptTimeout{timeout})
		case <-attemptCtx.Done():
		}
	}()
	imageID, err := c.attempt(attemptCtx, pool, w)
	if err != nil && ctx.Err() == nil {
		var timedOut errAttemptTimeout
		if cause := context.Cause(attemptCtx); errors.As(cause, &timedOut) {
			return "", timedOut
		}
	}
	return imageID, err
}

func (c *Controller) attempt(ctx context.Context, pool *imagePool, w *tagWorker) (string, error) {
	ref := cri.ImageReference(w.image, w.spec.Tag)
	if w.spec.ImagePullPolicy == appsv1beta1.PullIfNotPresent {
		rt := c.runtime.Runtime()
		if rt == nil {
			return "", errRuntimeUnavailable
		}
		id, err := presentImageID(ctx, rt, ref)
		if err != nil {
			return "", err
		}
		if id != "" {
			klog.FromContext(ctx).V(2).Info("Image already present", "imageID", id)
			return id, nil
		}
	}
	credentials, sandbox := pool.pullConfig()
	return c.puller.PullImage(ctx, PullRequest{
		Image:         ref,
		Credentials:   cri.MatchCredentials(credentials, w.image),
		SandboxConfig: sandbox,
	}, func(percent int32) {
		w.update(func(s *appsv1beta1.ImageTagStatus) { s.Progress = max(0, min(100, percent)) })
		c.enqueue(0)
	})
}

// sleep waits d on clk; false when ctx ended first.
func sleep(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	timer := clk.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C():
		return true
	case <-ctx.Done():
		return false
	}
}
