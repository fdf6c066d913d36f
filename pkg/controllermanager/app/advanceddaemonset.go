package app

import (
	"context"
	"fmt"

	kruiseappsinformers "github.com/bosun-dev/client-go/informers/externalversions/apps/v1beta1"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/advanceddaemonset"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/features"
)

// newAdvancedDaemonSetController builds the Advanced DaemonSet controller on the shared
// informers, when the API server serves v1beta1 DaemonSets: bosun's v1beta1 ones for
// DaemonSets (and ImagePullJobs, for image pre-download, when those are served in v1beta1
// too), the built-in ones for revisions, pods and nodes.
func newAdvancedDaemonSetController(ctx context.Context, cc *registry.ControllerContext) (registry.Controller, error) {
	client, err := cc.Client()
	if err != nil {
		return nil, fmt.Errorf("building the %s client: %w", advanceddaemonset.ControllerName, err)
	}
	// Without the CRD the DaemonSet informer would never sync, and /readyz would fail for
	// good: a cluster without bosun's CRDs simply has no Advanced DaemonSets to run.
	if err := requireServed(client.Discovery(), appsHub, "daemonsets"); err != nil {
		return nil, err
	}
	bosunClient, err := cc.BosunClient()
	if err != nil {
		return nil, fmt.Errorf("building the %s client for apps.kruise.io: %w", advanceddaemonset.ControllerName, err)
	}
	var imagePullJobs kruiseappsinformers.ImagePullJobInformer
	if cc.FeatureGate.Enabled(features.PreDownloadImageForDaemonSetUpdate) {
		// The ImagePullJob informer is only started when the gate asks for it: without the
		// gate the controller never reads ImagePullJobs, and the watch would be wasted.
		imagePullJobs, err = informerIfServed(client.Discovery(), appsHub, "imagepulljobs", cc.BosunInformerFactory.Apps().V1beta1().ImagePullJobs)
		if err != nil {
			return nil, err
		}
		if imagePullJobs == nil {
			klog.FromContext(ctx).Info("Image pre-download for DaemonSet updates is off: the API server does not serve imagepulljobs in the hub version",
				"controller", advanceddaemonset.ControllerName, "featureGate", features.PreDownloadImageForDaemonSetUpdate, "groupVersion", appsHub)
		}
	}
	c, err := advanceddaemonset.NewController(ctx,
		cc.BosunInformerFactory.Apps().V1beta1().DaemonSets(),
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
