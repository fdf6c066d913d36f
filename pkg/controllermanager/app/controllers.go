package app

import (
	"context"
	"slices"

	"github.com/bosun-dev/bosun/pkg/controller/advanceddaemonset"
	"github.com/bosun-dev/bosun/pkg/controller/cloneset"
	"github.com/bosun-dev/bosun/pkg/controller/containerlaunchpriority"
	"github.com/bosun-dev/bosun/pkg/controller/containerrecreaterequest"
	"github.com/bosun-dev/bosun/pkg/controller/deployment"
	"github.com/bosun-dev/bosun/pkg/controller/garbagecollector"
	"github.com/bosun-dev/bosun/pkg/controller/imagelistpulljob"
	"github.com/bosun-dev/bosun/pkg/controller/imagepulljob"
	"github.com/bosun-dev/bosun/pkg/controller/nodeimage"
	"github.com/bosun-dev/bosun/pkg/controller/podreadiness"
	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget"
	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/budget"
	"github.com/bosun-dev/bosun/pkg/controller/replicaset"
	"github.com/bosun-dev/bosun/pkg/controller/storageversionmigrator"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	daemonsetwebhook "github.com/bosun-dev/bosun/pkg/webhook/daemonset"
	podwebhook "github.com/bosun-dev/bosun/pkg/webhook/pod"
)

// NewControllerRegistry returns a registry holding every built-in controller.
func NewControllerRegistry() *registry.Registry {
	r := registry.New()
	for _, d := range builtinControllers() {
		r.MustRegister(d)
	}
	return r
}

// builtinControllers lists the controllers bosun-controller-manager runs. Adding a controller
// is one entry: its package's ControllerName, the short alias users pass to --controllers,
// the constructor in this package's <alias>.go, and the admission webhooks of its resources
// if it has any.
func builtinControllers() []registry.Descriptor {
	// kube-controller-manager's controllers keep its client limits (--kube-api-qps and
	// --kube-api-burst), so that swapping one manager for the other changes nothing.
	upstream := []registry.Descriptor{
		{Name: replicaset.ControllerName, Aliases: []string{"replicaset"}, ClientName: replicaset.ControllerName, Constructor: newReplicaSetController},
		{Name: deployment.ControllerName, Aliases: []string{"deployment"}, ClientName: deployment.ControllerName, Constructor: newDeploymentController},
		{Name: garbagecollector.ControllerName, Aliases: []string{"garbagecollector"}, ClientName: "generic-garbage-collector", Constructor: newGarbageCollector},
	}
	// The PodUnavailableBudget controller, its webhooks and the CloneSet controller's
	// in-process budget check share one budget cache (see podunavailablebudget.go and
	// cloneset.go).
	budgets := budget.NewCache()
	// The controllers whose pods need a change at creation share the one mutating pod
	// webhook, each adding its mutations to it (see podreadiness.go).
	podMutations := podwebhook.NewMutatingWebhook()
	// kruise-manager's controllers have limits of their own (--kruise-controllers-kube-api-*).
	openKruise := []registry.Descriptor{
		{Name: advanceddaemonset.ControllerName, Aliases: []string{"advanceddaemonset"}, ClientName: advanceddaemonset.ControllerName, Constructor: newAdvancedDaemonSetController, Webhooks: registry.Static(daemonsetwebhook.Registrations)},
		{Name: cloneset.ControllerName, Aliases: []string{"cloneset"}, ClientName: cloneset.ControllerName, Constructor: newCloneSetController(budgets), Webhooks: cloneSetWebhooks},
		{Name: podreadiness.ControllerName, Aliases: []string{"podreadiness"}, ClientName: podreadiness.ControllerName, Constructor: newPodReadinessController, Webhooks: podReadinessWebhooks(podMutations)},
		{Name: podunavailablebudget.ControllerName, Aliases: []string{"podunavailablebudget"}, ClientName: podunavailablebudget.ControllerName, Constructor: newPodUnavailableBudgetController(budgets), Webhooks: podUnavailableBudgetWebhooks(budgets, podMutations)},
		{Name: containerrecreaterequest.ControllerName, Aliases: []string{"containerrecreaterequest"}, ClientName: containerrecreaterequest.ControllerName, Constructor: newContainerRecreateRequestController, Webhooks: containerRecreateRequestWebhooks},
		{Name: nodeimage.ControllerName, Aliases: []string{"nodeimage"}, ClientName: nodeimage.ControllerName, Constructor: newNodeImageController, Webhooks: nodeImageWebhooks},
		{Name: imagepulljob.ControllerName, Aliases: []string{"imagepulljob"}, ClientName: imagepulljob.ControllerName, Constructor: newImagePullJobController, Webhooks: imagePullJobWebhooks},
		{Name: imagelistpulljob.ControllerName, Aliases: []string{"imagelistpulljob"}, ClientName: imagelistpulljob.ControllerName, Constructor: newImageListPullJobController, Webhooks: imageListPullJobWebhooks},
		{Name: containerlaunchpriority.ControllerName, Aliases: []string{"containerlaunchpriority"}, ClientName: containerlaunchpriority.ControllerName, Constructor: newContainerLaunchPriorityController, Webhooks: containerLaunchPriorityWebhooks(podMutations)},
	}
	for i := range openKruise {
		openKruise[i].KruiseClientLimits = true
	}
	// bosun's own upkeep keeps the base limits: the migrator's writes are a background
	// rewrite of every stored object, which should not go faster than that.
	upkeep := []registry.Descriptor{
		{Name: storageversionmigrator.ControllerName, Aliases: []string{"storageversionmigrator"}, ClientName: storageversionmigrator.ControllerName, Constructor: newStorageVersionMigrator},
	}
	return slices.Concat(upstream, openKruise, upkeep)
}

// withWorkers adapts a controller whose Run takes its number of workers (the
// --concurrent-*-syncs flags) to registry.Controller.
type withWorkers struct {
	run     func(ctx context.Context, workers int)
	workers int
}

// Run implements registry.Controller.
func (w withWorkers) Run(ctx context.Context) { w.run(ctx, w.workers) }
