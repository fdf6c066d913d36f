package app

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/bosun-dev/bosun/pkg/controller/cloneset"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/storageversionmigrator"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/webhook"
	clonesetwebhook "github.com/bosun-dev/bosun/pkg/webhook/cloneset"
)

const (
	// cloneSetCRD is the name of the CloneSet's CRD, bosun's or OpenKruise's.
	cloneSetCRD = "clonesets.apps.kruise.io"
	// crdLookupTimeout bounds the read of a CRD while the webhooks are built.
	crdLookupTimeout = 30 * time.Second
)

var customResourceDefinitions = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// newCloneSetController builds the CloneSet controller on the shared informers, when the
// API server serves v1beta1 CloneSets: bosun's v1beta1 CloneSets, the built-in revisions,
// pods, claims and nodes.
func newCloneSetController(ctx context.Context, cc *registry.ControllerContext) (registry.Controller, error) {
	client, err := cc.Client()
	if err != nil {
		return nil, fmt.Errorf("building the %s client: %w", cloneset.ControllerName, err)
	}
	// Without the CRD the CloneSet informer would never sync, and /readyz would fail for
	// good: a cluster without a CloneSet CRD simply has no CloneSets to run.
	if err := requireServed(client.Discovery(), appsHub, "clonesets"); err != nil {
		return nil, err
	}
	bosunClient, err := cc.BosunClient()
	if err != nil {
		return nil, fmt.Errorf("building the %s client for apps.kruise.io: %w", cloneset.ControllerName, err)
	}
	c, err := cloneset.NewController(ctx,
		cc.BosunInformerFactory.Apps().V1beta1().CloneSets(),
		cc.InformerFactory.Apps().V1().ControllerRevisions(),
		cc.InformerFactory.Core().V1().Pods(),
		cc.InformerFactory.Core().V1().PersistentVolumeClaims(),
		cc.InformerFactory.Core().V1().Nodes(),
		client,
		bosunClient,
		cc.EventRecorder(cloneset.ControllerName),
		options.WithFeatureGate(cc.FeatureGate),
		cloneset.WithScalingExcludePreparingDelete(cc.Config.CloneSet.ScalingExcludePreparingDelete),
	)
	if err != nil {
		return nil, fmt.Errorf("building the %s: %w", cloneset.ControllerName, err)
	}
	return withWorkers{run: c.Run, workers: int(cc.Config.CloneSet.ConcurrentSyncs)}, nil
}

// cloneSetWebhooks returns the CloneSet's defaulting and validating webhooks while the API
// server serves v1beta1 CloneSets through bosun's own CRD (labelled
// app.kubernetes.io/managed-by=bosun), and none otherwise.
func cloneSetWebhooks(wc *registry.WebhookContext) ([]webhook.Registration, error) {
	return cloneSetWebhooksWith(wc, func() (metadata.Interface, error) {
		config, err := wc.ClientBuilder.Config(wc.ClientName)
		if err != nil {
			return nil, err
		}
		crds, err := metadata.NewForConfig(config)
		if err != nil {
			return nil, fmt.Errorf("creating a metadata client for CRDs: %w", err)
		}
		return crds, nil
	})
}

// cloneSetWebhooksWith is cloneSetWebhooks reading the CRD through the client crds
// returns, which it asks for only when the resource is served.
//
// bosun's CloneSet CRD is not shipped yet: OpenKruise's CRD, installed by a cluster that
// runs kruise-manager or is moving from it, serves CloneSets that kruise-manager admits by
// its own rules, which bosun's would only contradict. bosun's CRD is installed only on
// purpose.
func cloneSetWebhooksWith(wc *registry.WebhookContext, crds func() (metadata.Interface, error)) ([]webhook.Registration, error) {
	served, err := servesResource(wc.Client.Discovery(), appsHub.String(), "clonesets")
	if err != nil {
		return nil, fmt.Errorf("looking up %s CloneSets in discovery: %w", appsHub, err)
	}
	if !served {
		return nil, nil
	}
	client, err := crds()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), crdLookupTimeout)
	defer cancel()
	crd, err := client.Resource(customResourceDefinitions).Get(ctx, cloneSetCRD, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// Served a moment ago, deleted since.
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading CustomResourceDefinition %s: %w", cloneSetCRD, err)
	}
	if crd.Labels[storageversionmigrator.ManagedByLabel] != storageversionmigrator.ManagedByValue {
		return nil, nil
	}
	return clonesetwebhook.Registrations(wc.Client.CoreV1(), wc.FeatureGate), nil
}
