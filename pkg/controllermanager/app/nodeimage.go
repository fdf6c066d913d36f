package app

import (
	"context"
	"fmt"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"

	"github.com/bosun-dev/bosun/pkg/controller/nodeimage"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/webhook"
	nodeimagewebhook "github.com/bosun-dev/bosun/pkg/webhook/nodeimage"
)

// newNodeImageController builds the controller on the shared informers.
func newNodeImageController(ctx context.Context, cc *registry.ControllerContext) (registry.Controller, error) {
	client, err := cc.Client()
	if err != nil {
		return nil, fmt.Errorf("building the %s client: %w", nodeimage.ControllerName, err)
	}
	served, err := servesResource(client.Discovery(), appsv1alpha1.SchemeGroupVersion.String(), "nodeimages")
	if err != nil {
		return nil, fmt.Errorf("looking up apps.kruise.io NodeImages in discovery: %w", err)
	}
	if !served {
		return nil, registry.NotBuilt("the API server does not serve apps.kruise.io/v1alpha1 nodeimages; install bosun's CRDs (config/crd/bases) and restart")
	}
	if !cc.FeatureGate.Enabled(features.KruiseDaemon) {
		// The webhook refuses every new NodeImage: the controller could only fail to create them.
		return nil, registry.NotBuilt(fmt.Sprintf("feature gate %s is off", features.KruiseDaemon))
	}
	jobs, err := informerIfServed(client.Discovery(), "imagepulljobs", cc.BosunInformerFactory.Apps().V1alpha1().ImagePullJobs)
	if err != nil {
		return nil, err
	}
	bosunClient, err := cc.BosunClient()
	if err != nil {
		return nil, fmt.Errorf("building the %s client for apps.kruise.io: %w", nodeimage.ControllerName, err)
	}
	c, err := nodeimage.NewController(ctx,
		cc.InformerFactory.Core().V1().Nodes(),
		cc.BosunInformerFactory.Apps().V1alpha1().NodeImages(),
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

// nodeImageWebhooks returns the NodeImage's defaulting and validating webhooks, or none
// when the API server does not serve NodeImages.
func nodeImageWebhooks(wc *registry.WebhookContext) ([]webhook.Registration, error) {
	served, err := servesResource(wc.Client.Discovery(), appsv1alpha1.SchemeGroupVersion.String(), "nodeimages")
	if err != nil {
		return nil, fmt.Errorf("looking up apps.kruise.io NodeImages in discovery: %w", err)
	}
	if !served {
		return nil, nil
	}
	return nodeimagewebhook.Registrations(wc.FeatureGate), nil
}
