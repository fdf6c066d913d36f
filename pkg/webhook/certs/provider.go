package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/utils/clock"
)

// HealthCheckName is the name of every Provider's health check.
const HealthCheckName = "webhook-certificate"

// Provider supplies the webhook server's serving certificate and the CA bundle that
// verifies it, keeping both current while Run runs.
//
// As a healthz.HealthChecker it is named HealthCheckName and fails until a certificate is
// loaded and once the loaded one has expired: a readiness check, not a liveness one.
type Provider interface {
	healthz.HealthChecker

	// GetCertificate returns the current serving certificate; it is meant for
	// tls.Config.GetCertificate and fails until the first certificate is loaded.
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// CABundle returns the PEM CA bundle that verifies the serving certificate, a copy
	// the caller may keep. It is nil before the first certificate, and always nil for a
	// directory without ca.crt.
	CABundle() []byte
	// Changed receives a value, without blocking the provider, whenever the certificate
	// or the CA bundle changed. It holds at most one pending value, so several changes
	// before a read are one, and it has one reader: the configuration writer.
	Changed() <-chan struct{}
	// Run keeps the certificate current until ctx ends, then returns nil. It returns an
	// error only for a provider that cannot work at all (bad settings, or for a directory,
	// no valid pair at start). It is called once.
	Run(ctx context.Context) error
}

const (
	// DefaultCAValidity is how long a CA generated in Secret mode is valid.
	DefaultCAValidity = 365 * 24 * time.Hour
	// DefaultServingValidity is how long a serving certificate issued in Secret mode is
	// valid, at most.
	DefaultServingValidity = 90 * 24 * time.Hour
)

// Option changes a Secret provider's settings.
type Option func(*options)

type options struct {
	clock           clock.Clock
	caValidity      time.Duration
	servingValidity time.Duration
}

// WithClock makes the provider read the time from c, for tests.
func WithClock(c clock.Clock) Option {
	return func(o *options) { o.clock = c }
}

// WithValidity sets how long new CAs and serving certificates are valid. Both must be at
// least an hour, or Run fails.
func WithValidity(ca, serving time.Duration) Option {
	return func(o *options) {
		o.caValidity = ca
		o.servingValidity = serving
	}
}

// served is what a provider serves at one moment. It is replaced whole, never modified,
// so that a handshake and a health check always see a certificate and its own bundle.
type served struct {
	cert     *tls.Certificate // Leaf is set
	caBundle []byte
}

// state is what both providers share: the served certificate, the Changed channel and
// the health check. Only the provider's Run goroutine calls set.
type state struct {
	clock   clock.PassiveClock
	current atomic.Pointer[served]
	changed chan struct{}
}

func newState(c clock.PassiveClock) state {
	return state{clock: c, changed: make(chan struct{}, 1)}
}

// set serves cert and caBundle from the next handshake on and reports whether they differ
// from what was served, signalling Changed if they do.
func (s *state) set(cert *tls.Certificate, caBundle []byte) bool {
	if old := s.current.Load(); old != nil &&
		slices.EqualFunc(old.cert.Certificate, cert.Certificate, bytes.Equal) &&
		bytes.Equal(old.caBundle, caBundle) {
		return false
	}
	s.current.Store(&served{cert: cert, caBundle: caBundle})
	select {
	case s.changed <- struct{}{}:
	default: // a change is already pending; the reader will see this one too
	}
	return true
}

func (s *state) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	current := s.current.Load()
	if current == nil {
		return nil, errors.New("no webhook serving certificate loaded yet")
	}
	return current.cert, nil
}

func (s *state) CABundle() []byte {
	current := s.current.Load()
	if current == nil {
		return nil
	}
	return bytes.Clone(current.caBundle)
}

func (s *state) Changed() <-chan struct{} {
	return s.changed
}

func (s *state) Name() string {
	return HealthCheckName
}

func (s *state) Check(*http.Request) error {
	current := s.current.Load()
	if current == nil {
		return errors.New("no webhook serving certificate loaded yet")
	}
	if notAfter := current.cert.Leaf.NotAfter; s.clock.Now().After(notAfter) {
		return fmt.Errorf("webhook serving certificate expired at %s", notAfter.UTC().Format(time.RFC3339))
	}
	return nil
}
