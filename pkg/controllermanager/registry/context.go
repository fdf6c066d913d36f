package registry

import (
	"time"

	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"

	"github.com/bosun-dev/bosun/pkg/clientbuilder"
	"github.com/bosun-dev/bosun/pkg/controllermanager/config"
)

// EventRecorderFactory returns an event recorder that reports events from component.
type EventRecorderFactory func(component string) record.EventRecorderLogger

// ControllerContext is what a constructor gets to build its controller. The manager creates
// one per leadership term and hands each constructor a copy with ClientName set to that
// controller's client name.
type ControllerContext struct {
	// ClientName is the controller's client name (Descriptor.ClientName).
	ClientName string
	// ClientBuilder builds further named clients, for example a metadata client.
	ClientBuilder clientbuilder.Builder

	// InformerFactory is the shared factory for built-in types. Add informers and indexers in
	// the constructor; the manager starts the factory after every constructor ran.
	InformerFactory informers.SharedInformerFactory
	// MetadataInformerFactory is the shared metadata-only factory. Its informers are left out
	// of /readyz's informer-sync check: the garbage collector watches arbitrary resources
	// through it, and a broken custom resource may never sync.
	MetadataInformerFactory metadatainformer.SharedInformerFactory
	// BosunInformerFactory is the shared factory for bosun's own API types (apps.kruise.io,
	// policy.kruise.io). Its client speaks JSON, as custom resources require.
	BosunInformerFactory bosuninformers.SharedInformerFactory

	// RESTMapper maps kinds to resources from discovery; its cache is reset every 30 s.
	RESTMapper *restmapper.DeferredDiscoveryRESTMapper
	// EventRecorder returns recorders that write through the manager's event broadcaster.
	EventRecorder EventRecorderFactory
	// FeatureGate is the parsed --feature-gates.
	FeatureGate featuregate.FeatureGate
	// InformersStarted is closed once the shared factories have been started; the garbage
	// collector's monitors wait for it.
	InformersStarted <-chan struct{}
	// ResyncPeriod returns a fresh random resync period in [min, 2×min) on every call, for
	// informers a controller creates outside the shared factories.
	ResyncPeriod func() time.Duration
	// Config is the settled configuration (worker counts and the like).
	Config *config.Configuration
}

// ClientConfig returns a new client configuration for this controller: its own token bucket,
// User-Agent ending in "/<ClientName>".
func (c *ControllerContext) ClientConfig() (*rest.Config, error) {
	return c.ClientBuilder.Config(c.ClientName)
}

// Client returns a new clientset for this controller.
func (c *ControllerContext) Client() (kubernetes.Interface, error) {
	return c.ClientBuilder.Client(c.ClientName)
}

// BosunClient returns a new clientset for bosun's API types for this controller. It uses
// JSON whatever --kube-api-content-type says, because custom resources are not served as
// protobuf.
func (c *ControllerContext) BosunClient() (bosunclientset.Interface, error) {
	return clientbuilder.BosunClient(c.ClientBuilder, c.ClientName)
}
