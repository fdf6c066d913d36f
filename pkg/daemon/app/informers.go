package app

import (
	"context"
	"fmt"
	"time"

	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	toolkitinformers "github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/serving"
)

// Labels that scope ContainerRecreateRequests to a node's agent.
const (
	crrNodeNameLabel = "crr.apps.kruise.io/node-name"
	crrActiveLabel   = "crr.apps.kruise.io/active"
)

// scopedInformers are the node agent's informer factories. Each factory's LIST and WATCH
// requests carry a selector that limits them to this node, so an agent on every node never
// opens a cluster-wide watch. Factories create informers only when asked for one, so a
// factory nobody uses costs nothing.
type scopedInformers struct {
	// node lists and watches this node only (field selector metadata.name).
	node informers.SharedInformerFactory
	// pods lists and watches the pods bound to this node (field selector spec.nodeName).
	pods informers.SharedInformerFactory
	// nodeImage lists and watches this node's NodeImage (field selector metadata.name).
	nodeImage bosuninformers.SharedInformerFactory
	// crr lists and watches the active ContainerRecreateRequests of this node, in all
	// namespaces (label selector).
	crr bosuninformers.SharedInformerFactory
}

// Selectors used by the scoped factories.
func nodeNameSelector(nodeName string) string {
	return fields.OneTermEqualSelector("metadata.name", nodeName).String()
}

func podsOnNodeSelector(nodeName string) string {
	return fields.OneTermEqualSelector("spec.nodeName", nodeName).String()
}

func activeCRRSelector(nodeName string) string {
	return labels.SelectorFromSet(labels.Set{crrNodeNameLabel: nodeName, crrActiveLabel: "true"}).String()
}

func newScopedInformers(kubeClient kubernetes.Interface, bosunClient bosunclientset.Interface, nodeName string, minResync time.Duration) *scopedInformers {
	byField := func(selector string) func(*metav1.ListOptions) {
		return func(o *metav1.ListOptions) { o.FieldSelector = selector }
	}
	byLabel := func(selector string) func(*metav1.ListOptions) {
		return func(o *metav1.ListOptions) { o.LabelSelector = selector }
	}
	bosunFactory := func(tweak func(*metav1.ListOptions)) bosuninformers.SharedInformerFactory {
		return bosuninformers.NewSharedInformerFactoryWithOptions(bosunClient, toolkitinformers.ResyncPeriod(minResync),
			bosuninformers.WithTransform(toolkitinformers.StripManagedFields), bosuninformers.WithTweakListOptions(tweak))
	}
	return &scopedInformers{
		node:      toolkitinformers.NewSharedInformerFactory(kubeClient, minResync, informers.WithTweakListOptions(byField(nodeNameSelector(nodeName)))),
		pods:      toolkitinformers.NewSharedInformerFactory(kubeClient, minResync, informers.WithTweakListOptions(byField(podsOnNodeSelector(nodeName)))),
		nodeImage: bosunFactory(byField(nodeNameSelector(nodeName))),
		crr:       bosunFactory(byLabel(activeCRRSelector(nodeName))),
	}
}

// requestCoreInformers asks for the informers the agent needs before any agent controller is
// wired: its Node, its NodeImage and its active CRRs.
func (s *scopedInformers) requestCoreInformers() {
	s.node.Core().V1().Nodes().Informer()
	s.nodeImage.Apps().V1beta1().NodeImages().Informer()
	s.crr.Apps().V1beta1().ContainerRecreateRequests().Informer()
}

// watchSync makes the informer-sync readiness check cover every factory.
func (s *scopedInformers) watchSync(check *serving.InformerSync) {
	check.WatchTypedFactory(s.node)
	check.WatchTypedFactory(s.pods)
	check.WatchTypedFactory(s.nodeImage)
	check.WatchTypedFactory(s.crr)
}

func (s *scopedInformers) start(ctx context.Context) {
	s.node.Start(ctx.Done())
	s.pods.Start(ctx.Done())
	s.nodeImage.Start(ctx.Done())
	s.crr.Start(ctx.Done())
}

// waitForSync blocks until every started informer synced or ctx ends.
func (s *scopedInformers) waitForSync(ctx context.Context) error {
	for _, f := range []serving.TypedFactory{s.node, s.pods, s.nodeImage, s.crr} {
		for informerType, synced := range f.WaitForCacheSync(ctx.Done()) {
			if !synced {
				return fmt.Errorf("informer for %v did not sync: %w", informerType, ctx.Err())
			}
		}
	}
	return nil
}

// shutdown waits for the informers' goroutines; ctx must already be cancelled.
func (s *scopedInformers) shutdown() {
	s.node.Shutdown()
	s.pods.Shutdown()
	s.nodeImage.Shutdown()
	s.crr.Shutdown()
}
