package app

import (
	"context"
	"fmt"

	"github.com/bosun-dev/bosun/pkg/controller/deployment"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
)

// newDeploymentController builds the Deployment controller on the shared informers.
func newDeploymentController(ctx context.Context, cc *registry.ControllerContext) (registry.Controller, error) {
	client, err := cc.Client()
	if err != nil {
		return nil, fmt.Errorf("building the %s client: %w", deployment.ControllerName, err)
	}
	c, err := deployment.NewController(ctx,
		cc.InformerFactory.Apps().V1().Deployments(),
		cc.InformerFactory.Apps().V1().ReplicaSets(),
		cc.InformerFactory.Core().V1().Pods(),
		client,
		cc.EventRecorder(deployment.ControllerName),
		options.WithFeatureGate(cc.FeatureGate),
	)
	if err != nil {
		return nil, fmt.Errorf("building the %s: %w", deployment.ControllerName, err)
	}
	return withWorkers{run: c.Run, workers: int(cc.Config.Deployment.ConcurrentSyncs)}, nil
}
