package clientbuilder

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
)

// WithLimitsPerResource returns a Builder whose clients have a token bucket at limits for
// each resource they send requests about, instead of one for all of them: a client that
// creates pods and their claims may create a burst of each. This is how kruise-manager's
// clients are limited (controller-runtime gives every kind a REST client of its own, whose
// bucket its status and other subresources share), so the OpenKruise-compatible
// controllers get it, and the same flag values mean the same budget in both managers.
func WithLimitsPerResource(b Builder, limits Limits) Builder {
	return &perResourceBuilder{inner: WithLimits(b, limits), limits: limits}
}

type perResourceBuilder struct {
	inner  Builder
	limits Limits
}

func (b *perResourceBuilder) Config(name string) (*rest.Config, error) {
	config, err := b.inner.Config(name)
	if err != nil {
		return nil, err
	}
	// The client's own limiter lets everything through; the transport below waits instead,
	// on the bucket of the request's resource.
	config.RateLimiter = unlimited{qps: b.limits.QPS}
	buckets := newResourceBuckets(b.limits)
	config.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return &limitedTransport{next: next, buckets: buckets, client: name}
	})
	return config, nil
}

func (b *perResourceBuilder) Client(name string) (kubernetes.Interface, error) {
	return clientFor(b, name)
}

// resourceBuckets holds one token bucket per resource, made on the resource's first request.
type resourceBuckets struct {
	limits Limits
	mu     sync.Mutex
	byKey  map[string]flowcontrol.RateLimiter
}

func newResourceBuckets(limits Limits) *resourceBuckets {
	return &resourceBuckets{limits: limits, byKey: map[string]flowcontrol.RateLimiter{}}
}

func (r *resourceBuckets) bucket(resource string) flowcontrol.RateLimiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	bucket, ok := r.byKey[resource]
	if !ok {
		bucket = flowcontrol.NewTokenBucketRateLimiter(r.limits.QPS, r.limits.Burst)
		r.byKey[resource] = bucket
	}
	return bucket
}

// slowWait is how long a request may wait for its bucket before the wait is logged, as
// client-go logs its own client-side throttling.
const slowWait = time.Second

// limitedTransport makes each request wait for a token of its resource's bucket.
type limitedTransport struct {
	next    http.RoundTripper
	buckets *resourceBuckets
	client  string
}

func (t *limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resource := resourceOf(req.URL.Path)
	start := time.Now()
	if err := t.buckets.bucket(resource).Wait(req.Context()); err != nil {
		return nil, fmt.Errorf("waiting for the client-side rate limit of %s: %w", resource, err)
	}
	if waited := time.Since(start); waited > slowWait {
		klog.FromContext(req.Context()).V(3).Info("Waited for client-side throttling", "client", t.client,
			"resource", resource, "waited", waited, "verb", req.Method, "url", req.URL.Path)
	}
	return t.next.RoundTrip(req)
}

// resourceOf names the resource a request path is about, "group/resource" ("/resource" for
// the core group), without the object's name or a subresource; discovery and other
// non-resource paths share the key "".
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var group string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:] // api/v1
	case len(parts) >= 4 && parts[0] == "apis":
		group, parts = parts[1], parts[3:] // apis/<group>/<version>
	default:
		return ""
	}
	// namespaces/<namespace>/<resource>/... is a namespaced resource, but
	// namespaces/<name>/status and /finalize are the Namespace's own subresources.
	if parts[0] == "namespaces" && len(parts) >= 3 && !(group == "" && isNamespaceSubresource(parts[2])) {
		return group + "/" + parts[2]
	}
	return group + "/" + parts[0]
}

// isNamespaceSubresource reports whether name is a subresource of a Namespace rather than a
// resource in it.
func isNamespaceSubresource(name string) bool {
	return name == "status" || name == "finalize"
}

// unlimited is the limiter of a client whose transport does the limiting. It reports the
// per-resource QPS, for whoever asks a client for its limiter.
type unlimited struct{ qps float32 }

func (unlimited) TryAccept() bool                { return true }
func (unlimited) Accept()                        {}
func (unlimited) Stop()                          {}
func (u unlimited) QPS() float32                 { return u.qps }
func (unlimited) Wait(ctx context.Context) error { return nil }
