package registry

import (
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/component-base/featuregate"

	"github.com/bosun-dev/bosun/pkg/clientbuilder"
	"github.com/bosun-dev/bosun/pkg/webhook"
	"github.com/bosun-dev/bosun/pkg/webhook/noderestriction"
)

// WebhooksFunc returns the admission webhooks of a controller's resources. It runs once per
// process, on every replica, before the webhook server starts; it may add informers to the
// context's factories and must not start them.
type WebhooksFunc func(wc *WebhookContext) ([]webhook.Registration, error)

// Static adapts a list of webhooks that read nothing from the cluster to a WebhooksFunc.
func Static(registrations func() []webhook.Registration) WebhooksFunc {
	return func(*WebhookContext) ([]webhook.Registration, error) { return registrations(), nil }
}

// WebhookContext is what webhooks that read the cluster are built from. Unlike a
// ControllerContext it lives as long as the process: every replica serves webhooks, leader
// or not, so its informers cannot belong to a leadership term.
type WebhookContext struct {
	// ClientName is the name every client below reports in its User-Agent.
	ClientName string
	// ClientBuilder builds further clients, for example a metadata or scale client.
	ClientBuilder clientbuilder.Builder
	// Client and BosunClient write what the webhooks write (a budget's status, say).
	Client      kubernetes.Interface
	BosunClient bosunclientset.Interface

	// InformerFactory and BosunInformerFactory are the webhooks' own shared factories. The
	// manager starts them after every WebhooksFunc ran, and the server answers no request
	// before they have synced: a webhook deciding from an empty cache would wave through
	// what it exists to stop.
	InformerFactory      informers.SharedInformerFactory
	BosunInformerFactory bosuninformers.SharedInformerFactory

	// RESTMapper maps kinds to resources from discovery; its cache is reset periodically.
	RESTMapper *restmapper.DeferredDiscoveryRESTMapper
	// EventRecorder returns recorders that write through the manager's event broadcaster.
	EventRecorder EventRecorderFactory
	// FeatureGate is the parsed --feature-gates.
	FeatureGate featuregate.FeatureGate
	// NodeAgents are the identities of bosun-daemon, which the node restriction webhooks
	// keep to their node (--daemon-service-accounts).
	NodeAgents noderestriction.Identities
}
