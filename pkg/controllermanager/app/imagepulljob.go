package app

import (
	"context"
	"fmt"

	"github.com/bosun-dev/bosun/pkg/controller/imagepulljob"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/webhook"
	imagepulljobwebhook "github.com/bosun-dev/bosun/pkg/webhook/imagepulljob"
)

// newImagePullJobController builds the controller on the shared informers, when the API
// server serves v1beta1 ImagePullJobs and NodeImages. It is built whatever
// ImagePullJobGate says: with the gate off admission refuses new jobs, but the existing
// ones still need their secret copies released when they go.
func newImagePullJobController(ctx context.Context, cc *registry.ControllerContext) (registry.Controller, error) {
	client, err := cc.Client()
	if err != nil {
		return nil, fmt.Errorf("building the %s client: %w", imagepulljob.ControllerName, err)
	}
	if err := requireServed(client.Discovery(), appsHub, "imagepulljobs", "nodeimages"); err != nil {
		return nil, err
	}
	bosunClient, err := cc.BosunClient()
	if err != nil {
		return nil, fmt.Errorf("building the %s client for apps.kruise.io: %w", imagepulljob.ControllerName, err)
	}
	c, err := imagepulljob.NewController(ctx,
		cc.BosunInformerFactory.Apps().V1beta1().ImagePullJobs(),
		cc.BosunInformerFactory.Apps().V1beta1().NodeImages(),
		cc.InformerFactory.Core().V1().Pods(),
		cc.InformerFactory.Core().V1().Secrets(),
		cc.InformerFactory.Core().V1().Namespaces(),
		client,
		bosunClient,
		cc.Config.ImagePullJob.SecretsNamespace,
		options.WithFeatureGate(cc.FeatureGate),
	)
	if err != nil {
		return nil, fmt.Errorf("building the %s: %w", imagepulljob.ControllerName, err)
	}
	return withWorkers{run: c.Run, workers: int(cc.Config.ImagePullJob.ConcurrentSyncs)}, nil
}

// imagePullJobWebhooks returns the ImagePullJob's defaulting and validating webhooks, or
// none when the API server does not serve v1beta1 ImagePullJobs.
func imagePullJobWebhooks(wc *registry.WebhookContext) ([]webhook.Registration, error) {
	served, err := servesResource(wc.Client.Discovery(), appsHub.String(), "imagepulljobs")
	if err != nil {
		return nil, fmt.Errorf("looking up %s ImagePullJobs in discovery: %w", appsHub, err)
	}
	if !served {
		return nil, nil
	}
	return imagepulljobwebhook.Registrations(wc.FeatureGate), nil
}
