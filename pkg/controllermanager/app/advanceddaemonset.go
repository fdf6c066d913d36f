package app

import (
	"context"
	"fmt"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	kruiseappsinformers "github.com/bosun-dev/client-go/informers/externalversions/apps/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/advanceddaemonset"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/features"
)

// newAdvancedDaemonSetController builds the Advanced DaemonSet controller on the shared
// informers: bosun's for DaemonSets (and ImagePullJobs, for image pre-download), the
// built-in ones for revisions, pods and nodes.
func newAdvancedDaemonSetController(ctx context.Context, cc *registry.ControllerContext) (registry.Controller, error) {
	client, err := cc.Client()
	if err != nil {
		return nil, fmt.Errorf("building the %s client: %w", advanceddaemonset.ControllerName, err)
	}
	// Without the CRD the DaemonSet informer would never sync, and /readyz would fail for
	// good: a cluster without bosun's CRDs simply has no Advanced DaemonSets to run.
	served, err := servesResource(client.Discovery(), appsv1alpha1.SchemeGroupVersion.String(), "daemonsets")
	if err != nil {
		return nil, fmt.Errorf("looking up apps.kruise.io DaemonSets in discovery: %w", err)
	}
	if !served {
		return nil, registry.NotBuilt("the API server does not serve apps.kruise.io/v1alpha1 daemonsets; install bosun's CRDs (config/crd/bases) and restart")
	}
	bosunClient, err := cc.BosunClient()
	if err != nil {
		return nil, fmt.Errorf("building the %s client for apps.kruise.io: %w", advanceddaemonset.ControllerName, err)
	}
	var imagePullJobs kruiseappsinformers.ImagePullJobInformer
	if cc.FeatureGate.Enabled(features.PreDownloadImageForDaemonSetUpdate) {
		// The ImagePullJob informer is only started when the gate asks for it: without the
		// gate the controller never reads ImagePullJobs, and the watch would be wasted.
		imagePullJobs, err = informerIfServed(client.Discovery(), "imagepulljobs", cc.BosunInformerFactory.Apps().V1alpha1().ImagePullJobs)
		if err != nil {
			return nil, err
		}
		if imagePullJobs == nil {
			klog.FromContext(ctx).Info("Image pre-download for DaemonSet updates is off: the API server does not serve apps.kruise.io/v1alpha1 imagepulljobs",
				"controller", advanceddaemonset.ControllerName, "featureGate", features.PreDownloadImageForDaemonSetUpdate)
		}
	}
	c, err := advanceddaemonset.NewController(ctx,
		cc.BosunInformerFactory.Apps().V1alpha1().DaemonSets(),
		cc.InformerFactory.Apps().V1().ControllerRevisions(),
		cc.InformerFactory.Core().V1().Pods(),
		cc.InformerFactory.Core().V1().Nodes(),
		imagePullJobs,
		client,
		bosunClient,
		cc.EventRecorder(advanceddaemonset.ControllerName),
		options.WithFeatureGate(cc.FeatureGate),
	)
	if err != nil {
		return nil, fmt.Errorf("building the %s: %w", advanceddaemonset.ControllerName, err)
	}
	return withWorkers{run: c.Run, workers: int(cc.Config.AdvancedDaemonSet.ConcurrentSyncs)}, nil
}

// informerIfServed returns the informer newInformer makes when the API server serves the
// apps.kruise.io/v1alpha1 resource, and nil when it does not: an informer of a resource
// that is not served would never sync, and the manager would never become ready. This is
// the one way an optional informer reaches its controller: a NewController argument that
// is nil when the resource is not served.
func informerIfServed[I any](client discovery.DiscoveryInterface, resource string, newInformer func() I) (I, error) {
	var none I
	served, err := servesResource(client, appsv1alpha1.SchemeGroupVersion.String(), resource)
	if err != nil {
		return none, fmt.Errorf("looking up apps.kruise.io %s in discovery: %w", resource, err)
	}
	if !served {
		return none, nil
	}
	return newInformer(), nil
}

// servesResource reports whether the API server serves resource in groupVersion.
func servesResource(client discovery.DiscoveryInterface, groupVersion, resource string) (bool, error) {
	resources, err := client.ServerResourcesForGroupVersion(groupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range resources.APIResources {
		if r.Name == resource {
			return true, nil
		}
	}
	return false, nil
}
