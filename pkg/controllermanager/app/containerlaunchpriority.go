package app

import (
	"context"
	"fmt"

	"github.com/bosun-dev/bosun/pkg/controller/containerlaunchpriority"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/webhook"
	podwebhook "github.com/bosun-dev/bosun/pkg/webhook/pod"
)

// containerLaunchPriorityWorkers is the controller's number of workers, OpenKruise's; it has
// no flag there either.
const containerLaunchPriorityWorkers = 4

// newContainerLaunchPriorityController builds the controller on the shared pod informer.
func newContainerLaunchPriorityController(ctx context.Context, cc *registry.ControllerContext) (registry.Controller, error) {
	client, err := cc.Client()
	if err != nil {
		return nil, fmt.Errorf("building the %s client: %w", containerlaunchpriority.ControllerName, err)
	}
	c, err := containerlaunchpriority.NewController(ctx, cc.InformerFactory.Core().V1().Pods(), client)
	if err != nil {
		return nil, fmt.Errorf("building the %s: %w", containerlaunchpriority.ControllerName, err)
	}
	return withWorkers{run: c.Run, workers: containerLaunchPriorityWorkers}, nil
}

// containerLaunchPriorityWebhooks adds the launch priority mutation to the mutating pod
// webhook podMutations. The mutation comes with the controller: the barrier env it gives
// containers would keep them from starting without the controller to write the barrier.
func containerLaunchPriorityWebhooks(podMutations *podwebhook.MutatingWebhook) registry.WebhooksFunc {
	return func(*registry.WebhookContext) ([]webhook.Registration, error) {
		return podMutations.Add(podwebhook.LaunchPriority()), nil
	}
}
