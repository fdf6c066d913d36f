package app

import (
	"context"
	"fmt"
	"time"

	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	kruiseappsinformers "github.com/bosun-dev/client-go/informers/externalversions/apps/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/cloneset"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget"
	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/budget"
	"github.com/bosun-dev/bosun/pkg/controller/storageversionmigrator"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/webhook"
	clonesetwebhook "github.com/bosun-dev/bosun/pkg/webhook/cloneset"
	podwebhook "github.com/bosun-dev/bosun/pkg/webhook/pod"
)

const (
	// cloneSetCRD is the name of the CloneSet's CRD, bosun's or OpenKruise's.
	cloneSetCRD = "clonesets.apps.kruise.io"
	// crdLookupTimeout bounds the read of a CRD while the webhooks are built.
	crdLookupTimeout = 30 * time.Second
)

var customResourceDefinitions = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// newCloneSetController returns the constructor of the CloneSet controller. budgets is the
// process's budget cache, the one the pod webhook spends PodUnavailableBudgets through
// (podUnavailableBudgetWebhooks): with gate PodUnavailableBudgetUpdateGate the controller
// makes the webhook's decision in process before it updates a pod, and must share the
// webhook's lock and write-through copy of each budget.
func newCloneSetController(budgets *budget.Cache) registry.Constructor {
	return func(ctx context.Context, cc *registry.ControllerContext) (registry.Controller, error) {
		return buildCloneSetController(ctx, cc, budgets)
	}
}

// buildCloneSetController builds the CloneSet controller on the shared informers, when the
// API server serves v1beta1 CloneSets: bosun's v1beta1 CloneSets, the built-in revisions,
// pods, claims and nodes, for the budget check v1beta1 PodUnavailableBudgets, and, for
// image pre-download, v1beta1 ImagePullJobs when those are served.
func buildCloneSetController(ctx context.Context, cc *registry.ControllerContext, budgets *budget.Cache) (registry.Controller, error) {
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
	opts := []options.Option{
		options.WithFeatureGate(cc.FeatureGate),
		cloneset.WithScalingExcludePreparingDelete(cc.Config.CloneSet.ScalingExcludePreparingDelete),
		cloneset.WithScalingSurplusIgnoreMaxUnavailable(cc.Config.CloneSet.ScalingSurplusIgnoreMaxUnavailable),
		cloneset.WithProgressDeadlineRestartsOnProgress(cc.Config.CloneSet.ProgressDeadlineRestartsOnProgress),
	}
	budgetCheck, budgetsSynced, err := cloneSetBudgetCheck(cc, client.Discovery(), bosunClient, budgets)
	if err != nil {
		return nil, err
	}
	if budgetCheck != nil {
		opts = append(opts, cloneset.WithPodUnavailableBudget(budgetCheck))
	}
	var imagePullJobs kruiseappsinformers.ImagePullJobInformer
	if cc.FeatureGate.Enabled(features.PreDownloadImageForInPlaceUpdate) {
		// The ImagePullJob informer is only started when the gate asks for it: without the
		// gate the controller never reads ImagePullJobs, and the watch would be wasted.
		imagePullJobs, err = informerIfServed(client.Discovery(), appsHub, "imagepulljobs", cc.BosunInformerFactory.Apps().V1beta1().ImagePullJobs)
		if err != nil {
			return nil, err
		}
		if imagePullJobs == nil {
			klog.FromContext(ctx).Info("Image pre-download for CloneSet in-place updates is off: the API server does not serve imagepulljobs in the hub version",
				"controller", cloneset.ControllerName, "featureGate", features.PreDownloadImageForInPlaceUpdate, "groupVersion", appsHub)
		}
	}
	c, err := cloneset.NewController(ctx,
		cc.BosunInformerFactory.Apps().V1beta1().CloneSets(),
		cc.InformerFactory.Apps().V1().ControllerRevisions(),
		cc.InformerFactory.Core().V1().Pods(),
		cc.InformerFactory.Core().V1().PersistentVolumeClaims(),
		cc.InformerFactory.Core().V1().Nodes(),
		imagePullJobs,
		client,
		bosunClient,
		cc.EventRecorder(cloneset.ControllerName),
		opts...,
	)
	if err != nil {
		return nil, fmt.Errorf("building the %s: %w", cloneset.ControllerName, err)
	}
	run := c.Run
	if budgetsSynced != nil {
		// A budget missing from an unsynced cache would admit every update.
		run = func(ctx context.Context, workers int) {
			if !cache.WaitForNamedCacheSync(cloneset.ControllerName, ctx.Done(), budgetsSynced) {
				return
			}
			c.Run(ctx, workers)
		}
	}
	return withWorkers{run: run, workers: int(cc.Config.CloneSet.ConcurrentSyncs)}, nil
}

// cloneSetBudgetCheck returns, with gate PodUnavailableBudgetUpdateGate and v1beta1
// PodUnavailableBudgets served, the pod webhook's decision for the CloneSet controller to
// ask in process, with whether its budget informer has synced; nil otherwise. It reads the
// budgets from the shared informer (the PodUnavailableBudget controller's), writes them
// with the CloneSet controller's own client, spends them through budgets, and records its
// refusals on pods as the webhook does.
func cloneSetBudgetCheck(cc *registry.ControllerContext, disco discovery.DiscoveryInterface, bosunClient bosunclientset.Interface,
	budgets *budget.Cache) (cloneset.BudgetCheck, cache.InformerSynced, error) {
	if !cc.FeatureGate.Enabled(features.PodUnavailableBudgetUpdateGate) {
		return nil, nil, nil
	}
	budgetInformer, err := informerIfServed(disco, policyHub, "podunavailablebudgets", cc.BosunInformerFactory.Policy().V1beta1().PodUnavailableBudgets)
	if err != nil {
		return nil, nil, err
	}
	if budgetInformer == nil {
		return nil, nil, nil
	}
	check := podwebhook.NewInProcess(podwebhook.Dependencies{
		Budgets:     budgetInformer.Lister(),
		Client:      bosunClient,
		Cache:       budgets,
		Recorder:    cc.EventRecorder(podunavailablebudget.ControllerName),
		FeatureGate: cc.FeatureGate,
	})
	return check, budgetInformer.Informer().HasSynced, nil
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
