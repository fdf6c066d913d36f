package clientbuilder

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

const (
	// tokenLifetime is requested for every token: an hour, the API server's usual minimum
	// for non-extended tokens.
	tokenLifetime = time.Hour
	// renewFraction of a token's lifetime passes before it is replaced, leaving a fifth of the
	// lifetime to recover from a failed renewal.
	renewFraction = 0.8
	// tokenRequestTimeout bounds the requests made on behalf of a controller's first request.
	tokenRequestTimeout = 30 * time.Second
)

// NewServiceAccountBuilder returns a Builder whose clients authenticate as the ServiceAccount
// <namespace>/<client name>, with bound tokens from the TokenRequest API that are renewed
// before they expire. root (the manager's own client) creates missing ServiceAccounts and
// requests the tokens; base supplies the server address, TLS and limits but none of its
// credentials.
func NewServiceAccountBuilder(base *rest.Config, root corev1client.CoreV1Interface, namespace string) Builder {
	return &serviceAccountBuilder{
		base:      rest.AnonymousClientConfig(base),
		root:      root,
		namespace: namespace,
		clock:     clock.RealClock{},
		sources:   map[string]*tokenSource{},
	}
}

type serviceAccountBuilder struct {
	base      *rest.Config
	root      corev1client.CoreV1Interface
	namespace string
	clock     clock.PassiveClock

	mu      sync.Mutex
	sources map[string]*tokenSource
}

func (b *serviceAccountBuilder) Config(name string) (*rest.Config, error) {
	config := namedCopy(b.base, name)
	source := b.sourceFor(name)
	config.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return &bearerRoundTripper{source: source, next: next}
	})
	return config, nil
}

func (b *serviceAccountBuilder) Client(name string) (kubernetes.Interface, error) {
	return clientFor(b, name)
}

// sourceFor returns the one token source of a ServiceAccount, so that all clients of one
// name share a token.
func (b *serviceAccountBuilder) sourceFor(name string) *tokenSource {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.sources[name]
	if !ok {
		s = &tokenSource{root: b.root, namespace: b.namespace, name: name, clock: b.clock}
		b.sources[name] = s
	}
	return s
}

// tokenSource keeps a valid token for one ServiceAccount.
type tokenSource struct {
	root      corev1client.CoreV1Interface
	namespace string
	name      string
	clock     clock.PassiveClock

	mu      sync.Mutex
	token   string
	renewAt time.Time
}

// Token returns the cached token, requesting a new one when none is cached or the cached one
// is due for renewal.
func (s *tokenSource) Token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token != "" && s.clock.Now().Before(s.renewAt) {
		return s.token, nil
	}
	ctx, cancel := context.WithTimeout(ctx, tokenRequestTimeout)
	defer cancel()
	status, err := s.requestToken(ctx)
	if apierrors.IsNotFound(err) {
		// The ServiceAccount does not exist (yet, or any more): create it and ask again.
		if err := s.ensureServiceAccount(ctx); err != nil {
			return "", err
		}
		status, err = s.requestToken(ctx)
	}
	if err != nil {
		return "", fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", s.namespace, s.name, err)
	}
	issued := s.clock.Now()
	lifetime := status.ExpirationTimestamp.Sub(issued)
	s.token = status.Token
	s.renewAt = issued.Add(time.Duration(float64(lifetime) * renewFraction))
	klog.FromContext(ctx).V(4).Info("Obtained ServiceAccount token", "serviceAccount", klog.KRef(s.namespace, s.name), "renewAt", s.renewAt)
	return s.token, nil
}

// Invalidate drops the cached token so that the next request obtains a new one.
func (s *tokenSource) Invalidate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = ""
}

func (s *tokenSource) requestToken(ctx context.Context) (*authenticationv1.TokenRequestStatus, error) {
	seconds := int64(tokenLifetime / time.Second)
	request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}
	result, err := s.root.ServiceAccounts(s.namespace).CreateToken(ctx, s.name, request, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	return &result.Status, nil
}

func (s *tokenSource) ensureServiceAccount(ctx context.Context) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: s.name}}
	_, err := s.root.ServiceAccounts(s.namespace).Create(ctx, sa, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ServiceAccount %s/%s: %w", s.namespace, s.name, err)
	}
	return nil
}

// bearerRoundTripper adds the ServiceAccount's token to every request.
type bearerRoundTripper struct {
	source *tokenSource
	next   http.RoundTripper
}

func (rt *bearerRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	token, err := rt.source.Token(req.Context())
	if err != nil {
		return nil, err
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := rt.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		// The token was revoked (for example its ServiceAccount was recreated): the next
		// request must not reuse it.
		rt.source.Invalidate()
	}
	return resp, err
}

// WrappedRoundTripper lets client-go's transport debugging see the wrapped transport.
func (rt *bearerRoundTripper) WrappedRoundTripper() http.RoundTripper { return rt.next }
