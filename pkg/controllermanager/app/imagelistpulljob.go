package app

import (
	"context"
	"fmt"

	"github.com/bosun-dev/bosun/pkg/controller/imagelistpulljob"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/webhook"
	imagelistpulljobwebhook "github.com/bosun-dev/bosun/pkg/webhook/imagelistpulljob"
)

// imageListPullJobResources are the apps.kruise.io/v1beta1 resources the controller works
// on: the list jobs and their children.
var imageListPullJobResources = []string{"imagelistpulljobs", "imagepulljobs"}

// newImageListPullJobController builds the controller on the shared informers, when the API
// server serves v1beta1 ImageListPullJobs and ImagePullJobs. Like the ImagePullJob
// controller it is built whatever ImagePullJobGate says: with the gate off admission
// refuses new list jobs and children, and the existing ones still complete and expire.
func newImageListPullJobController(ctx context.Context, cc *registry.ControllerContext) (registry.Controller, error) {
	client, err := cc.Client()
	if err != nil {
		return nil, fmt.Errorf("building the %s client: %w", imagelistpulljob.ControllerName, err)
	}
	if err := requireServed(client.Discovery(), appsHub, imageListPullJobResources...); err != nil {
		return nil, err
	}
	bosunClient, err := cc.BosunClient()
	if err != nil {
		return nil, fmt.Errorf("building the %s client for apps.kruise.io: %w", imagelistpulljob.ControllerName, err)
	}
	c, err := imagelistpulljob.NewController(ctx,
		cc.BosunInformerFactory.Apps().V1beta1().ImageListPullJobs(),
		cc.BosunInformerFactory.Apps().V1beta1().ImagePullJobs(),
		bosunClient,
		cc.EventRecorder(imagelistpulljob.ControllerName),
	)
	if err != nil {
		return nil, fmt.Errorf("building the %s: %w", imagelistpulljob.ControllerName, err)
	}
	return withWorkers{run: c.Run, workers: int(cc.Config.ImageListPullJob.ConcurrentSyncs)}, nil
}

// imageListPullJobWebhooks returns the ImageListPullJob's defaulting and validating
// webhooks, or none when the API server does not serve v1beta1 ImageListPullJobs.
func imageListPullJobWebhooks(wc *registry.WebhookContext) ([]webhook.Registration, error) {
	if served, err := servesResource(wc.Client.Discovery(), appsHub.String(), "imagelistpulljobs"); err != nil || !served {
		return nil, err
	}
	return imagelistpulljobwebhook.Registrations(wc.FeatureGate), nil
}
