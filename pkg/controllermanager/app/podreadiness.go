package app

import (
	"context"
	"fmt"

	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/podreadiness"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/webhook"
	podwebhook "github.com/bosun-dev/bosun/pkg/webhook/pod"
)

// podReadinessWorkers is the controller's number of workers, OpenKruise's: each sync is
// at most one small status write, so a few keep up with any rate of pod creation the
// client's limits allow.
const podReadinessWorkers = 3

// newPodReadinessController builds the controller on the shared pod informer. It needs no
// custom resource, so it runs in every cluster.
func newPodReadinessController(ctx context.Context, cc *registry.ControllerContext) (registry.Controller, error) {
	client, err := cc.Client()
	if err != nil {
		return nil, fmt.Errorf("building the %s client: %w", podreadiness.ControllerName, err)
	}
	c, err := podreadiness.NewController(ctx, cc.InformerFactory.Core().V1().Pods(), client,
		options.WithFeatureGate(cc.FeatureGate))
	if err != nil {
		return nil, fmt.Errorf("building the %s: %w", podreadiness.ControllerName, err)
	}
	return withWorkers{run: c.Run, workers: podReadinessWorkers}, nil
}

// podReadinessWebhooks returns the function that adds the KruisePodReady readiness gate to
// the mutating pod webhook podMutations. The gate comes with the controller that sets its
// condition, and only with it: a pod gated on a condition that nobody sets never becomes
// Ready. The mutation reads nothing from the cluster.
func podReadinessWebhooks(podMutations *podwebhook.MutatingWebhook) registry.WebhooksFunc {
	return func(wc *registry.WebhookContext) ([]webhook.Registration, error) {
		return podMutations.Add(podwebhook.KruisePodReadyGate(wc.FeatureGate)), nil
	}
}
