package app

import (
	"context"
	"fmt"

	"github.com/bosun-dev/bosun/pkg/controller/nodeimage"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/webhook"
	nodeimagewebhook "github.com/bosun-dev/bosun/pkg/webhook/nodeimage"
	"github.com/bosun-dev/bosun/pkg/webhook/noderestriction"
)

// newNodeImageController builds the controller on the shared informers, when the API
// server serves v1beta1 NodeImages; the ImagePullJob informer only when it also serves
// v1beta1 ImagePullJobs.
func newNodeImageController(ctx context.Context, cc *registry.ControllerContext) (registry.Controller, error) {
	client, err := cc.Client()
	if err != nil {
		return nil, fmt.Errorf("building the %s client: %w", nodeimage.ControllerName, err)
	}
	if err := requireServed(client.Discovery(), appsHub, "nodeimages"); err != nil {
		return nil, err
	}
	if !cc.FeatureGate.Enabled(features.KruiseDaemon) {
		// The webhook refuses every new NodeImage: the controller could only fail to create them.
		return nil, registry.NotBuilt(fmt.Sprintf("feature gate %s is off", features.KruiseDaemon))
	}
	jobs, err := informerIfServed(client.Discovery(), appsHub, "imagepulljobs", cc.BosunInformerFactory.Apps().V1beta1().ImagePullJobs)
	if err != nil {
		return nil, err
	}
	bosunClient, err := cc.BosunClient()
	if err != nil {
		return nil, fmt.Errorf("building the %s client for apps.kruise.io: %w", nodeimage.ControllerName, err)
	}
	c, err := nodeimage.NewController(ctx,
		cc.InformerFactory.Core().V1().Nodes(),
		cc.BosunInformerFactory.Apps().V1beta1().NodeImages(),
		jobs,
		client,
		bosunClient,
		cc.EventRecorder(nodeimage.ControllerName),
		options.WithFeatureGate(cc.FeatureGate),
		nodeimage.WithCreationDelay(cc.Config.NodeImage.CreationDelay),
		nodeimage.WithResponseTimeout(cc.Config.NodeImage.ResponseTimeout),
	)
	if err != nil {
		return nil, fmt.Errorf("building the %s: %w", nodeimage.ControllerName, err)
	}
	return withWorkers{run: c.Run, workers: int(cc.Config.NodeImage.ConcurrentSyncs)}, nil
}

// nodeImageWebhooks returns the NodeImage's defaulting and validating webhooks and the one
// that keeps node agents to their own node's NodeImage, or none when the API server does
// not serve v1beta1 NodeImages.
func nodeImageWebhooks(wc *registry.WebhookContext) ([]webhook.Registration, error) {
	served, err := servesResource(wc.Client.Discovery(), appsHub.String(), "nodeimages")
	if err != nil {
		return nil, fmt.Errorf("looking up %s NodeImages in discovery: %w", appsHub, err)
	}
	if !served {
		return nil, nil
	}
	return append(nodeimagewebhook.Registrations(wc.FeatureGate), noderestriction.NodeImageRegistrations(wc.NodeAgents)...), nil
}
