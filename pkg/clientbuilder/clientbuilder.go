// Package clientbuilder hands every controller its own API client. Each client is built from a
// fresh copy of the base configuration, so it gets its own client-side token bucket
// (--kube-api-qps/--kube-api-burst) and a User-Agent ending in "/<client name>": a controller
// that hits its limit slows only itself, and the API server's audit log names the controller.
// The OpenKruise-compatible controllers' clients have a bucket per resource instead
// (WithLimitsPerResource), as kruise-manager's have one per kind.
//
// With --use-service-account-credentials the clients authenticate as the ServiceAccount
// kube-system/<client name> instead of the manager's own identity (see NewServiceAccountBuilder).
package clientbuilder

import (
	"fmt"

	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Builder builds clients and client configurations for named clients.
type Builder interface {
	// Config returns a new configuration for the named client. The caller owns it: changing
	// QPS or content type affects no other client.
	Config(name string) (*rest.Config, error)
	// Client returns a new clientset for the named client.
	Client(name string) (kubernetes.Interface, error)
}

// NewSimpleBuilder returns a Builder whose clients use base's credentials.
func NewSimpleBuilder(base *rest.Config) Builder {
	return &simpleBuilder{base: base}
}

type simpleBuilder struct {
	base *rest.Config
}

func (b *simpleBuilder) Config(name string) (*rest.Config, error) {
	return namedCopy(b.base, name), nil
}

func (b *simpleBuilder) Client(name string) (kubernetes.Interface, error) {
	return clientFor(b, name)
}

// Limits is a client's token bucket: QPS requests per second on average, at most Burst at
// once.
type Limits struct {
	QPS   float32
	Burst int
}

// WithLimits returns a Builder that builds b's clients with limits instead of the base
// configuration's QPS and burst. Each client still gets a token bucket of its own.
func WithLimits(b Builder, limits Limits) Builder {
	return &limitedBuilder{inner: b, limits: limits}
}

type limitedBuilder struct {
	inner  Builder
	limits Limits
}

func (b *limitedBuilder) Config(name string) (*rest.Config, error) {
	config, err := b.inner.Config(name)
	if err != nil {
		return nil, err
	}
	config.QPS, config.Burst = b.limits.QPS, b.limits.Burst
	return config, nil
}

func (b *limitedBuilder) Client(name string) (kubernetes.Interface, error) {
	return clientFor(b, name)
}

// namedCopy copies config for the named client.
func namedCopy(config *rest.Config, name string) *rest.Config {
	c := rest.CopyConfig(config)
	// A rate limiter in the base would be shared by every copy; dropping it makes each client
	// build its own token bucket from QPS and Burst.
	c.RateLimiter = nil
	return rest.AddUserAgent(c, name)
}

func clientFor(b Builder, name string) (kubernetes.Interface, error) {
	config, err := b.Config(name)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("creating client %q: %w", name, err)
	}
	return client, nil
}

// BosunClient builds a clientset for bosun's API types for the named client. It speaks JSON
// whatever the base content type, because custom resources are not served as protobuf.
func BosunClient(b Builder, name string) (bosunclientset.Interface, error) {
	config, err := b.Config(name)
	if err != nil {
		return nil, err
	}
	config.ContentType = runtime.ContentTypeJSON
	config.AcceptContentTypes = runtime.ContentTypeJSON
	client, err := bosunclientset.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("creating bosun client %q: %w", name, err)
	}
	return client, nil
}
