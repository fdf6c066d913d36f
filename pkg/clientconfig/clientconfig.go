// Package clientconfig holds the API client flags both bosun binaries share (--kubeconfig,
// --master, --kube-api-qps, --kube-api-burst, and for the manager --kube-api-content-type) and
// turns them into the base rest.Config that every named client is copied from.
package clientconfig

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Defaults of the client flags. QPS and burst apply to each named client separately.
const (
	DefaultQPS         float32 = 20
	DefaultBurst       int32   = 30
	DefaultContentType         = runtime.ContentTypeProtobuf
)

// Options are the client flags.
type Options struct {
	Kubeconfig  string
	Master      string
	QPS         float32
	Burst       int32
	ContentType string
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{QPS: DefaultQPS, Burst: DefaultBurst, ContentType: DefaultContentType}
}

// AddFlags adds --kubeconfig, --master, --kube-api-qps and --kube-api-burst.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig file with authorization and master location information. "+
		"With neither --kubeconfig nor --master the in-cluster configuration is used.")
	fs.StringVar(&o.Master, "master", o.Master, "The address of the Kubernetes API server (overrides any value in kubeconfig).")
	fs.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "QPS to use while talking with the Kubernetes API server; each controller's client has its own limit.")
	fs.Int32Var(&o.Burst, "kube-api-burst", o.Burst, "Burst to use while talking with the Kubernetes API server; each controller's client has its own limit.")
}

// AddContentTypeFlag adds --kube-api-content-type.
func (o *Options) AddContentTypeFlag(fs *pflag.FlagSet) {
	fs.StringVar(&o.ContentType, "kube-api-content-type", o.ContentType, "Content type of requests sent to the API server for built-in types; "+
		"custom resources always use JSON.")
}

// Validate returns every problem with the flags. It does not read the kubeconfig.
func (o *Options) Validate() []error {
	var errs []error
	if o.QPS <= 0 {
		errs = append(errs, fmt.Errorf("--kube-api-qps must be greater than 0, got %v", o.QPS))
	}
	if o.Burst < 1 {
		errs = append(errs, fmt.Errorf("--kube-api-burst must be at least 1, got %d", o.Burst))
	}
	switch o.ContentType {
	case runtime.ContentTypeProtobuf, runtime.ContentTypeJSON:
	default:
		errs = append(errs, fmt.Errorf("--kube-api-content-type must be %q or %q, got %q", runtime.ContentTypeProtobuf, runtime.ContentTypeJSON, o.ContentType))
	}
	return errs
}

// RESTConfig builds the base configuration: --master overrides the kubeconfig's server; with
// neither flag the in-cluster configuration is used; with none of them available it fails.
// QPS, burst and content type are applied. It reads files but does not contact the server.
func (o *Options) RESTConfig() (*rest.Config, error) {
	if o.Kubeconfig == "" && o.Master == "" {
		config, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("neither --kubeconfig nor --master was given and the in-cluster configuration is unavailable: %w", err)
		}
		return o.apply(config), nil
	}
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: o.Kubeconfig},
		&clientcmd.ConfigOverrides{ClusterInfo: clientcmdapi.Cluster{Server: o.Master}},
	).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading client configuration: %w", err)
	}
	return o.apply(config), nil
}

func (o *Options) apply(config *rest.Config) *rest.Config {
	config.QPS = o.QPS
	config.Burst = int(o.Burst)
	if o.ContentType != "" {
		config.ContentType = o.ContentType
	}
	return config
}
