package app

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

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
// The CloneSet controller has not landed: OpenKruise's CRD, installed by a cluster that
// runs kruise-manager or is moving from it, serves CloneSets that kruise-manager manages
// and admits by its own rules, which bosun's would only contradict. bosun's CRD is
// installed only on purpose, before its controller ships.
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
