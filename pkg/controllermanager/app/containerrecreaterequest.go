package app

import (
	"context"
	"fmt"

	"github.com/bosun-dev/bosun/pkg/controller/containerrecreaterequest"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/webhook"
	crrwebhook "github.com/bosun-dev/bosun/pkg/webhook/containerrecreaterequest"
	"github.com/bosun-dev/bosun/pkg/webhook/noderestriction"
)

// newContainerRecreateRequestController builds the controller on the shared informers, when
// the API server serves v1beta1 ContainerRecreateRequests.
func newContainerRecreateRequestController(ctx context.Context, cc *registry.ControllerContext) (registry.Controller, error) {
	client, err := cc.Client()
	if err != nil {
		return nil, fmt.Errorf("building the %s client: %w", containerrecreaterequest.ControllerName, err)
	}
	if err := requireServed(client.Discovery(), appsHub, "containerrecreaterequests"); err != nil {
		return nil, err
	}
	bosunClient, err := cc.BosunClient()
	if err != nil {
		return nil, fmt.Errorf("building the %s client for apps.kruise.io: %w", containerrecreaterequest.ControllerName, err)
	}
	c, err := containerrecreaterequest.NewController(ctx,
		cc.BosunInformerFactory.Apps().V1beta1().ContainerRecreateRequests(),
		cc.InformerFactory.Core().V1().Pods(),
		client,
		bosunClient,
		options.WithFeatureGate(cc.FeatureGate),
	)
	if err != nil {
		return nil, fmt.Errorf("building the %s: %w", containerrecreaterequest.ControllerName, err)
	}
	return withWorkers{run: c.Run, workers: int(cc.Config.ContainerRecreateRequest.ConcurrentSyncs)}, nil
}

// containerRecreateRequestWebhooks returns the request's mutating webhook, which reads
// pods and Nodes from the webhook informers and from the API server when they miss, and
// the one that keeps node agents to the requests of pods on their node; none when the API
// server does not serve v1beta1 ContainerRecreateRequests.
func containerRecreateRequestWebhooks(wc *registry.WebhookContext) ([]webhook.Registration, error) {
	served, err := servesResource(wc.Client.Discovery(), appsHub.String(), "containerrecreaterequests")
	if err != nil {
		return nil, fmt.Errorf("looking up %s containerrecreaterequests in discovery: %w", appsHub, err)
	}
	if !served {
		return nil, nil
	}
	regs := crrwebhook.Registrations(crrwebhook.Dependencies{
		Pods:        wc.InformerFactory.Core().V1().Pods().Lister(),
		Nodes:       wc.InformerFactory.Core().V1().Nodes().Lister(),
		LivePods:    wc.Client.CoreV1(),
		LiveNodes:   wc.Client.CoreV1(),
		FeatureGate: wc.FeatureGate,
	})
	return append(regs, noderestriction.ContainerRecreateRequestRegistrations(wc.NodeAgents)...), nil
}
