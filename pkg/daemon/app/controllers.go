package app

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/daemon/controller"
	"github.com/bosun-dev/bosun/pkg/daemon/controller/containermeta"
	"github.com/bosun-dev/bosun/pkg/daemon/controller/containerrecreaterequest"
	"github.com/bosun-dev/bosun/pkg/daemon/controller/nodeimage"
	"github.com/bosun-dev/bosun/pkg/daemon/controller/runtimecondition"
)

// agentController is one entry of the node agent's controller list: its name (also its
// client's User-Agent suffix and, unless eventSource says otherwise, its event source), its
// constructor, which asks the scoped factories for the informers it needs, and when it
// starts.
type agentController struct {
	name string
	new  func(ctx context.Context, cc *controller.Context) (controller.Controller, error)
	// startsBeforeRuntime runs the controller as soon as it is built, without waiting for
	// the informers to sync or the runtime to answer first: it reports that wait.
	startsBeforeRuntime bool
	// eventSource, when set, is the component its events name instead of its name.
	eventSource string
}

// agentControllers lists the node agent's controllers. Adding one is one entry here and
// its constructor in its own package under pkg/daemon/controller.
func agentControllers() []agentController {
	return []agentController{
		{name: containerrecreaterequest.ControllerName, new: containerrecreaterequest.New},
		{name: nodeimage.ControllerName, new: nodeimage.New},
		{name: containermeta.ControllerName, new: containermeta.New},
		// The runtime's state goes on the Node from the start: a missing runtime is exactly
		// what an operator needs to see there. Its events speak for the whole agent.
		{name: runtimecondition.ControllerName, new: runtimecondition.New, startsBeforeRuntime: true, eventSource: componentName},
	}
}

// builtController is an agent controller built from its entry.
type builtController struct {
	controller.Controller
	name                string
	startsBeforeRuntime bool
}

// buildControllers builds every agent controller of entries; each gets a context whose
// clients carry its name and whose recorder its event source.
func buildControllers(ctx context.Context, entries []agentController,
	clients func(name, eventSource string) (controller.Context, error)) ([]builtController, error) {
	var built []builtController
	for _, entry := range entries {
		eventSource := entry.name
		if entry.eventSource != "" {
			eventSource = entry.eventSource
		}
		cc, err := clients(entry.name, eventSource)
		if err != nil {
			return nil, fmt.Errorf("building the clients of %s: %w", entry.name, err)
		}
		c, err := entry.new(klog.NewContext(ctx, klog.FromContext(ctx).WithName(entry.name)), &cc)
		if err != nil {
			return nil, fmt.Errorf("building %s: %w", entry.name, err)
		}
		built = append(built, builtController{Controller: c, name: entry.name, startsBeforeRuntime: entry.startsBeforeRuntime})
	}
	return built, nil
}

// byStart splits controllers into those that start at once and those that wait for the
// informers and the runtime.
func byStart(controllers []builtController) (atOnce, afterRuntime []builtController) {
	for _, c := range controllers {
		if c.startsBeforeRuntime {
			atOnce = append(atOnce, c)
		} else {
			afterRuntime = append(afterRuntime, c)
		}
	}
	return atOnce, afterRuntime
}

// names returns the controllers' names.
func names(controllers []builtController) []string {
	out := make([]string, 0, len(controllers))
	for _, c := range controllers {
		out = append(out, c.name)
	}
	return out
}

// runControllers runs every controller until ctx ends and returns once all returned.
func runControllers(ctx context.Context, controllers []builtController) {
	var wg sync.WaitGroup
	for _, c := range controllers {
		logger := klog.FromContext(ctx).WithName(c.name)
		wg.Go(func() { c.Run(klog.NewContext(ctx, logger)) })
	}
	wg.Wait()
}
