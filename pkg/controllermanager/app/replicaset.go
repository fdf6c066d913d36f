package app

import (
	"context"
	"fmt"

	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/replicaset"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
)

// newReplicaSetController builds the ReplicaSet controller on the shared informers.
func newReplicaSetController(ctx context.Context, cc *registry.ControllerContext) (registry.Controller, error) {
	client, err := cc.Client()
	if err != nil {
		return nil, fmt.Errorf("building the %s client: %w", replicaset.ControllerName, err)
	}
	c, err := replicaset.NewController(ctx,
		cc.InformerFactory.Apps().V1().ReplicaSets(),
		cc.InformerFactory.Core().V1().Pods(),
		client,
		cc.EventRecorder(replicaset.ControllerName),
		options.WithFeatureGate(cc.FeatureGate),
	)
	if err != nil {
		return nil, fmt.Errorf("building the %s: %w", replicaset.ControllerName, err)
	}
	return withWorkers{run: c.Run, workers: int(cc.Config.ReplicaSet.ConcurrentSyncs)}, nil
}
