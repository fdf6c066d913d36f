package app

import (
	"context"
	"fmt"

	"github.com/bosun-dev/bosun/pkg/controller/advanceddaemonset"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
)

// newAdvancedDaemonSetController builds the Advanced DaemonSet controller on the shared
// informers: bosun's for DaemonSets, the built-in ones for revisions, pods and nodes.
func newAdvancedDaemonSetController(ctx context.Context, cc *registry.ControllerContext) (registry.Controller, error) {
	client, err := cc.Client()
	if err != nil {
		return nil, fmt.Errorf("building the %s client: %w", advanceddaemonset.ControllerName, err)
	}
	bosunClient, err := cc.BosunClient()
	if err != nil {
		return nil, fmt.Errorf("building the %s client for apps.kruise.io: %w", advanceddaemonset.ControllerName, err)
	}
	c, err := advanceddaemonset.NewController(ctx,
		cc.BosunInformerFactory.Apps().V1alpha1().DaemonSets(),
		cc.InformerFactory.Apps().V1().ControllerRevisions(),
		cc.InformerFactory.Core().V1().Pods(),
		cc.InformerFactory.Core().V1().Nodes(),
		client,
		bosunClient,
		cc.EventRecorder(advanceddaemonset.ControllerName),
		options.WithFeatureGate(cc.FeatureGate),
	)
	if err != nil {
		return nil, fmt.Errorf("building the %s: %w", advanceddaemonset.ControllerName, err)
	}
	return withWorkers{run: c.Run, workers: int(cc.Config.AdvancedDaemonSet.ConcurrentSyncs)}, nil
}
