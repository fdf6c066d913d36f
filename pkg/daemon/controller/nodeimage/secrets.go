package nodeimage

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/daemon/cri"
)

// secretCache reads pull secrets by GET, never by watch: an agent on every node watching
// secrets would load the API server for a handful of reads. A secret read is reused for
// secretCacheTTL, so that credential changes arrive within that time.
type secretCache struct {
	client    kubernetes.Interface
	namespace string
	clock     clock.Clock

	mu      sync.Mutex
	entries map[string]cachedSecret
}

type cachedSecret struct {
	secret    *corev1.Secret
	fetchedAt time.Time
}

func newSecretCache(client kubernetes.Interface, namespace string, clk clock.Clock) *secretCache {
	return &secretCache{client: client, namespace: namespace, clock: clk, entries: map[string]cachedSecret{}}
}

// credentials returns the registry credentials of refs, in order. Only secrets of the
// secrets namespace are read; others, and missing or malformed secrets, contribute none.
// A failed read is an error.
func (s *secretCache) credentials(ctx context.Context, refs []appsv1beta1.ReferenceObject) ([]cri.RegistryCredential, error) {
	logger := klog.FromContext(ctx)
	var credentials []cri.RegistryCredential
	for _, ref := range refs {
		if ref.Namespace != "" && ref.Namespace != s.namespace {
			logger.V(2).Info("Not reading a pull secret outside the secrets namespace", "secret", klog.KRef(ref.Namespace, ref.Name), "secretsNamespace", s.namespace)
			continue
		}
		secret, err := s.get(ctx, ref.Name)
		if err != nil {
			return nil, err
		}
		if secret == nil {
			logger.V(2).Info("Pull secret not found", "secret", klog.KRef(s.namespace, ref.Name))
			continue
		}
		found, err := cri.CredentialsFromSecret(secret)
		if err != nil {
			// Retrying cannot fix the data; the pull goes on with the other credentials.
			logger.Info("Ignoring a pull secret that does not parse", "secret", klog.KObj(secret), "err", err)
			continue
		}
		credentials = append(credentials, found...)
	}
	return credentials, nil
}

// get returns the secret name of the secrets namespace, nil when it does not exist.
// Missing secrets are not cached: they are usually being created.
func (s *secretCache) get(ctx context.Context, name string) (*corev1.Secret, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if entry, ok := s.entries[name]; ok && s.clock.Since(entry.fetchedAt) < secretCacheTTL {
		return entry.secret, nil
	}
	secret, err := s.client.CoreV1().Secrets(s.namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		delete(s.entries, name)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading pull secret %s/%s: %w", s.namespace, name, err)
	}
	s.entries[name] = cachedSecret{secret: secret, fetchedAt: s.clock.Now()}
	return secret, nil
}
