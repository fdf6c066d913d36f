package runtimecondition

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/daemon/controller"
)

const (
	// ControllerName is the reporter's name and its client's User-Agent suffix.
	ControllerName = "runtime-condition"

	// ConditionType is the Node condition the agent owns.
	ConditionType corev1.NodeConditionType = "BosunDaemonRuntimeReady"

	// Condition reasons.
	ReasonRuntimeAnswering   = "RuntimeAnswering"
	ReasonRuntimeUnavailable = "RuntimeUnavailable"

	// Event reasons, on the Node.
	EventRuntimeAvailable   = "ContainerRuntimeAvailable"
	EventRuntimeUnavailable = "ContainerRuntimeUnavailable"

	// resyncPeriod rewrites a condition someone else changed or removed, and retries a
	// write that failed.
	resyncPeriod = time.Minute
)

// Controller writes ConditionType on its node and records events when it changes.
type Controller struct {
	nodeName string
	client   kubernetes.Interface
	recorder record.EventRecorder
	runtime  controller.RuntimeState
	clock    clock.Clock

	// syncHandler is report; tests replace it to watch the loop.
	syncHandler func(ctx context.Context) error

	// reported is the status last written, "" before the first write. Only the loop of
	// Run touches it.
	reported corev1.ConditionStatus
}

// New builds the reporter from the node agent's context: its node, its client and
// recorder, and the runtime monitor's state.
func New(_ context.Context, cc *controller.Context) (controller.Controller, error) {
	return NewController(cc.NodeName, cc.KubeClient, cc.Recorder, cc.RuntimeState)
}

// NewController returns the reporter for nodeName: client reads and patches the Node,
// events go through recorder, runtime is the runtime monitor's state. Of the options it
// reads the clock (condition times and the minute's resync).
func NewController(nodeName string, client kubernetes.Interface, recorder record.EventRecorder, runtime controller.RuntimeState,
	opts ...options.Option) (*Controller, error) {
	if nodeName == "" {
		return nil, errors.New("the runtime condition reporter needs the node name")
	}
	settings := options.Apply(opts)
	c := &Controller{nodeName: nodeName, client: client, recorder: recorder, runtime: runtime, clock: settings.Clock}
	c.syncHandler = c.report
	return c, nil
}

// Run reports every change until ctx ends, and the current state every resyncPeriod.
func (c *Controller) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("controller", ControllerName)
	logger.Info("Controller starting")
	defer logger.Info("Controller stopped")
	// Tick's ticker is released with the channel once Run returns.
	ticks := c.clock.Tick(resyncPeriod)
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.runtime.Changed():
		case <-ticks:
		}
		if err := c.syncHandler(ctx); err != nil {
			logger.Error(err, "Cannot report the container runtime's state on the node", "node", c.nodeName)
		}
	}
}
