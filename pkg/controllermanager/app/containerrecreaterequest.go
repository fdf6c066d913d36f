package app

import (
	"context"
	"fmt"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	"k8s.io/client-go/discovery"

	"github.com/bosun-dev/bosun/pkg/controller/containerrecreaterequest"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/webhook"
	crrwebhook "github.com/bosun-dev/bosun/pkg/webhook/containerrecreaterequest"
)

// servesContainerRecreateRequests reports whether the API server serves apps.kruise.io
// ContainerRecreateRequests; without the CRD an informer for them would never sync.
func servesContainerRecreateRequests(client discovery.DiscoveryInterface) (bool, error) {
	served, err := servesResource(client, appsv1alpha1.SchemeGroupVersion.String(), "containerrecreaterequests")
	if err != nil {
		return false, fmt.Errorf("looking up apps.kruise.io ContainerRecreateRequests in discovery: %w", err)
	}
	return served, nil
}

// newContainerRecreateRequestController builds the controller on the shared informers.
func newContainerRecreateRequestController(ctx context.Context, cc *registry.ControllerContext) (registry.Controller, error) {
	client, err := cc.Client()
	if err != nil {
		return nil, fmt.Errorf("building the %s client: %w", containerrecreaterequest.ControllerName, err)
	}
	served, err := servesContainerRecreateRequests(client.Discovery())
	if err != nil {
		return nil, err
	}
	if !served {
		return nil, registry.NotBuilt("the API server does not serve apps.kruise.io/v1alpha1 containerrecreaterequests; install bosun's CRDs (config/crd/bases) and restart")
	}
	bosunClient, err := cc.BosunClient()
	if err != nil {
		return nil, fmt.Errorf("building the %s client for apps.kruise.io: %w", containerrecreaterequest.ControllerName, err)
	}
	c, err := containerrecreaterequest.NewController(ctx,
		cc.BosunInformerFactory.Apps().V1alpha1().ContainerRecreateRequests(),
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
// pods and Nodes from the webhook informers and from the API server when they miss; none
// when the API server does not serve the resource.
func containerRecreateRequestWebhooks(wc *registry.WebhookContext) ([]webhook.Registration, error) {
	served, err := servesContainerRecreateRequests(wc.Client.Discovery())
	if err != nil || !served {
		return nil, err
	}
	return crrwebhook.Registrations(crrwebhook.Dependencies{
		Pods:        wc.InformerFactory.Core().V1().Pods().Lister(),
		Nodes:       wc.InformerFactory.Core().V1().Nodes().Lister(),
		LivePods:    wc.Client.CoreV1(),
		LiveNodes:   wc.Client.CoreV1(),
		FeatureGate: wc.FeatureGate,
	}), nil
}
