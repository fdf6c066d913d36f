package app

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/daemon/controller"
	"github.com/bosun-dev/bosun/pkg/daemon/controller/containerrecreaterequest"
	"github.com/bosun-dev/bosun/pkg/daemon/controller/nodeimage"
)

// agentController is one entry of the node agent's controller list: its name (also its
// client's User-Agent suffix and its event source) and its constructor, which asks the
// scoped factories for the informers it needs.
type agentController struct {
	name string
	new  func(ctx context.Context, cc *controller.Context) (controller.Controller, error)
}

// agentControllers lists the node agent's controllers. Adding one is one entry here and
// its constructor in its own package under pkg/daemon/controller.
func agentControllers() []agentController {
	return []agentController{
		{name: containerrecreaterequest.ControllerName, new: containerrecreaterequest.New},
		{name: nodeimage.ControllerName, new: nodeimage.New},
	}
}

// buildControllers builds every agent controller; each gets a context whose clients and
// recorder carry its name.
func buildControllers(ctx context.Context, clients func(name string) (controller.Context, error)) ([]controller.Controller, []string, error) {
	var (
		built []controller.Controller
		names []string
	)
	for _, entry := range agentControllers() {
		cc, err := clients(entry.name)
		if err != nil {
			return nil, nil, fmt.Errorf("building the clients of %s: %w", entry.name, err)
		}
		c, err := entry.new(klog.NewContext(ctx, klog.FromContext(ctx).WithName(entry.name)), &cc)
		if err != nil {
			return nil, nil, fmt.Errorf("building %s: %w", entry.name, err)
		}
		built = append(built, c)
		names = append(names, entry.name)
	}
	return built, names, nil
}

// runControllers runs every controller until ctx ends and returns once all returned.
func runControllers(ctx context.Context, controllers []controller.Controller, names []string) {
	var wg sync.WaitGroup
	for i, c := range controllers {
		logger := klog.FromContext(ctx).WithName(names[i])
		wg.Go(func() { c.Run(klog.NewContext(ctx, logger)) })
	}
	wg.Wait()
}
