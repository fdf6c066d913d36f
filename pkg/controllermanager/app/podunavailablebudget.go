package app

import (
	"context"
	"fmt"

	kruiseappsinformers "github.com/bosun-dev/client-go/informers/externalversions/apps/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/featuregate"

	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget"
	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/budget"
	"github.com/bosun-dev/bosun/pkg/controller/workload"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/webhook"
	podwebhook "github.com/bosun-dev/bosun/pkg/webhook/pod"
	pubwebhook "github.com/bosun-dev/bosun/pkg/webhook/podunavailablebudget"
)

// newPodUnavailableBudgetController returns the constructor of the PodUnavailableBudget
// controller, which builds it on the shared informers and on budgets. Its registration
// passes the same budget.Cache to podUnavailableBudgetWebhooks: the webhook spends a budget
// and the controller recomputes it, and the process-wide lock and write-through copy in the
// cache keep the two from overwriting each other's writes with stale copies.
func newPodUnavailableBudgetController(budgets *budget.Cache) registry.Constructor {
	return func(ctx context.Context, cc *registry.ControllerContext) (registry.Controller, error) {
		return buildPodUnavailableBudgetController(ctx, cc, budgets)
	}
}

func buildPodUnavailableBudgetController(ctx context.Context, cc *registry.ControllerContext, budgets *budget.Cache) (registry.Controller, error) {
	client, err := cc.Client()
	if err != nil {
		return nil, fmt.Errorf("building the %s client: %w", podunavailablebudget.ControllerName, err)
	}
	if err := requireServed(client.Discovery(), policyHub, "podunavailablebudgets"); err != nil {
		return nil, err
	}
	bosunClient, err := cc.BosunClient()
	if err != nil {
		return nil, fmt.Errorf("building the %s client for policy.kruise.io: %w", podunavailablebudget.ControllerName, err)
	}
	config, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("building the %s client configuration: %w", podunavailablebudget.ControllerName, err)
	}
	daemonSets, err := informerIfServed(client.Discovery(), appsHub, "daemonsets", cc.BosunInformerFactory.Apps().V1beta1().DaemonSets)
	if err != nil {
		return nil, err
	}
	finder, finderSynced, err := newWorkloadFinder(config, client.Discovery(), cc.RESTMapper, cc.InformerFactory, daemonSets, cc.FeatureGate)
	if err != nil {
		return nil, fmt.Errorf("building the %s: %w", podunavailablebudget.ControllerName, err)
	}
	c, err := podunavailablebudget.NewController(ctx,
		cc.BosunInformerFactory.Policy().V1beta1().PodUnavailableBudgets(),
		cc.InformerFactory.Core().V1().Pods(),
		cc.InformerFactory.Apps().V1().Deployments(),
		cc.InformerFactory.Apps().V1().ReplicaSets(),
		cc.InformerFactory.Apps().V1().StatefulSets(),
		daemonSets,
		finder,
		client,
		bosunClient,
		budgets,
		cc.EventRecorder(podunavailablebudget.ControllerName),
		options.WithFeatureGate(cc.FeatureGate),
		options.WithResyncPeriod(cc.Config.PodUnavailableBudget.ResyncPeriod),
	)
	if err != nil {
		return nil, fmt.Errorf("building the %s: %w", podunavailablebudget.ControllerName, err)
	}
	// The controller waits for the informers it watches; the finder reads further ones, and
	// a budget computed before they synced would miss owners and expect too few pods.
	run := func(ctx context.Context, workers int) {
		if !cache.WaitForNamedCacheSync(podunavailablebudget.ControllerName, ctx.Done(), finderSynced...) {
			return
		}
		c.Run(ctx, workers)
	}
	return withWorkers{run: run, workers: int(cc.Config.PodUnavailableBudget.ConcurrentSyncs)}, nil
}

// podUnavailableBudgetWebhooks returns the function that builds the budget's validating
// webhook and the two pod webhooks on budgets, and adds the budget's tagging to the
// mutating pod webhook podMutations.
func podUnavailableBudgetWebhooks(budgets *budget.Cache, podMutations *podwebhook.MutatingWebhook) registry.WebhooksFunc {
	return func(wc *registry.WebhookContext) ([]webhook.Registration, error) {
		return buildPodUnavailableBudgetWebhooks(wc, budgets, podMutations)
	}
}

// buildPodUnavailableBudgetWebhooks returns the budget's validating webhook and the two
// pod webhooks, all on v1beta1 budgets. Without v1beta1 budgets served (no bosun CRDs, or
// the CRDs of a release that served only v1alpha1) there is nothing they could read:
// serving the pod webhooks then would only make every pod deletion wait for informers that
// never sync.
func buildPodUnavailableBudgetWebhooks(wc *registry.WebhookContext, budgets *budget.Cache, podMutations *podwebhook.MutatingWebhook) ([]webhook.Registration, error) {
	served, err := servesResource(wc.Client.Discovery(), policyHub.String(), "podunavailablebudgets")
	if err != nil {
		return nil, fmt.Errorf("looking up %s podunavailablebudgets in discovery: %w", policyHub, err)
	}
	if !served {
		return nil, nil
	}
	config, err := wc.ClientBuilder.Config(wc.ClientName)
	if err != nil {
		return nil, err
	}
	daemonSets, err := informerIfServed(wc.Client.Discovery(), appsHub, "daemonsets", wc.BosunInformerFactory.Apps().V1beta1().DaemonSets)
	if err != nil {
		return nil, err
	}
	// The server waits for every informer of the webhook context before it answers.
	finder, _, err := newWorkloadFinder(config, wc.Client.Discovery(), wc.RESTMapper, wc.InformerFactory, daemonSets, wc.FeatureGate)
	if err != nil {
		return nil, err
	}
	budgetInformer := wc.BosunInformerFactory.Policy().V1beta1().PodUnavailableBudgets()
	regs := pubwebhook.Registrations(budgetInformer.Lister(), wc.FeatureGate)
	regs = append(regs, podwebhook.Registrations(podwebhook.Dependencies{
		Pods:        wc.InformerFactory.Core().V1().Pods().Lister(),
		LivePods:    wc.Client.CoreV1(),
		Budgets:     budgetInformer.Lister(),
		Finder:      finder,
		Client:      wc.BosunClient,
		Cache:       budgets,
		Recorder:    wc.EventRecorder(podunavailablebudget.ControllerName),
		FeatureGate: wc.FeatureGate,
		Mutating:    podMutations,
	})...)
	return regs, nil
}

// newWorkloadFinder builds the owner lookup on factory's informers, with the scale and
// metadata clients it needs for kinds it has no informer for. It also returns whether
// those informers have synced.
func newWorkloadFinder(config *rest.Config, disco discovery.DiscoveryInterface, mapper meta.RESTMapper,
	factory informers.SharedInformerFactory, daemonSets kruiseappsinformers.DaemonSetInformer,
	gates featuregate.FeatureGate) (*workload.Finder, []cache.InformerSynced, error) {
	metadataClient, err := metadata.NewForConfig(config)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the metadata client: %w", err)
	}
	scales, err := scale.NewForConfig(config, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(disco))
	if err != nil {
		return nil, nil, fmt.Errorf("creating the scale client: %w", err)
	}
	replicaSets, deployments := factory.Apps().V1().ReplicaSets(), factory.Apps().V1().Deployments()
	statefulSets, controllers := factory.Apps().V1().StatefulSets(), factory.Core().V1().ReplicationControllers()
	listers := workload.Listers{
		ReplicaSets:            replicaSets.Lister(),
		Deployments:            deployments.Lister(),
		StatefulSets:           statefulSets.Lister(),
		ReplicationControllers: controllers.Lister(),
	}
	synced := []cache.InformerSynced{replicaSets.Informer().HasSynced, deployments.Informer().HasSynced,
		statefulSets.Informer().HasSynced, controllers.Informer().HasSynced}
	if daemonSets != nil {
		listers.DaemonSets = daemonSets.Lister()
		synced = append(synced, daemonSets.Informer().HasSynced)
	}
	finder := workload.NewFinder(listers, scales, metadataClient, mapper,
		workload.WithOwnerChain(gates.Enabled(features.PodUnavailableBudgetOwnerChain)),
		workload.WithDaemonSetReplicas(gates.Enabled(features.PodUnavailableBudgetDaemonSetReplicas)),
	)
	return finder, synced, nil
}
