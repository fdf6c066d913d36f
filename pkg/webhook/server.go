package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/klog/v2"
)

const (
	// DefaultRequestTimeout bounds a handler call when ServerOptions.RequestTimeout is zero.
	DefaultRequestTimeout = 10 * time.Second

	// shutdownTimeout bounds the wait for requests in flight when Run's context ends. The API
	// server calls with a timeout of its own and does not resend a call whose connection
	// broke (only answers of 429, or 5xx with Retry-After), so there is no point in waiting
	// long for a handler that is stuck.
	shutdownTimeout = 5 * time.Second

	// readHeaderTimeout closes connections that do not send a request: the API server
	// sends its headers at once.
	readHeaderTimeout = 10 * time.Second

	// readyCheckName is the name of the server's readiness check.
	readyCheckName = "webhook-server"
)

// ServerOptions configure a Server.
type ServerOptions struct {
	// BindAddress is the address to listen on; empty means every address of the host.
	BindAddress string
	// Port is the TCP port to listen on; 0 picks a free one (see Addr).
	Port int
	// RequestTimeout bounds each call of a handler; DefaultRequestTimeout when zero. A
	// handler that misses it is answered for with a denial (504). Keep it below the
	// registrations' TimeoutSeconds: once the API server has given up on a call, it applies
	// the failure policy instead of reading the answer.
	RequestTimeout time.Duration
	// GetCertificate returns the serving certificate. It is called on every TLS handshake,
	// so that a rotated certificate is served without a restart.
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// AdmissionReady is closed once the registered webhooks can answer, typically when the
	// informers they read have synced; nil means at once. Until then the server listens and
	// serves the handlers added with Handle, but answers every webhook's path with 503 (the
	// API server applies the webhook's failure policy, as when nobody listens), and the
	// readiness check fails.
	AdmissionReady <-chan struct{}
}

// serverState is where a Server is in its life: it runs once.
type serverState int

const (
	// stateNew accepts registrations.
	stateNew serverState = iota
	// stateStarting is after Run was called and before the listener is up.
	stateStarting
	// stateListening serves.
	stateListening
	// stateStopping is after Run's context ended, while requests in flight finish.
	stateStopping
	// stateStopped is after Run returned.
	stateStopped
)

// Server is the admission webhook server: one TLS listener serving every registered
// webhook at its path, and the few handlers the API server calls that are not admission
// webhooks (CRD conversion) at theirs. Webhooks and handlers are added before Run; the
// server is ready once it listens, has a certificate to serve and its webhooks can answer.
type Server struct {
	opts ServerOptions

	mu            sync.RWMutex
	state         serverState
	registrations []Registration
	endpoints     map[string]*endpoint // by path
	// handlers are the handlers added with Handle, by path.
	handlers map[string]http.Handler
	addr     net.Addr
	// listening is closed when the listener is up.
	listening chan struct{}
}

// NewServer returns a server with no webhooks.
func NewServer(opts ServerOptions) *Server {
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	registerMetrics()
	return &Server{
		opts:      opts,
		endpoints: map[string]*endpoint{},
		handlers:  map[string]http.Handler{},
		listening: make(chan struct{}),
	}
}

// Register adds a webhook. It fails when the registration is invalid, when its name or path
// is already registered (the API server would send two webhooks' requests to one handler),
// and once Run has been called.
func (s *Server) Register(r Registration) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("registering webhook: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateNew {
		return fmt.Errorf("registering webhook %q: the server has already been started", r.Name)
	}
	for _, existing := range s.registrations {
		if existing.Name == r.Name {
			return fmt.Errorf("registering webhook %q: a webhook of that name is already registered", r.Name)
		}
	}
	paths := append([]string{r.Path}, r.LegacyPaths...)
	for i, path := range paths {
		if e := s.endpoints[path]; e != nil {
			return fmt.Errorf("registering webhook %q: path %s is already served by webhook %q", r.Name, path, e.name)
		}
		if s.handlers[path] != nil {
			return fmt.Errorf("registering webhook %q: path %s is already served by another handler", r.Name, path)
		}
		if slices.Contains(paths[:i], path) {
			return fmt.Errorf("registering webhook %q: path %s is listed twice", r.Name, path)
		}
	}
	s.registrations = append(s.registrations, r.deepCopy())
	for _, path := range paths {
		s.endpoints[path] = &endpoint{name: r.Name, handler: r.Handler, timeout: s.opts.RequestTimeout}
	}
	return nil
}

// Handle serves handler at path, which must start with /. It is for what the API server
// calls on this listener that is not an admission webhook (CRD conversion): such a handler
// appears in no webhook configuration, and it answers as soon as Run listens, without
// waiting for AdmissionReady, so it must not depend on the webhooks' informers. It gets the
// raw request; bounding the body and the time spent is its own business. Handle fails when
// path is already served, and once Run has been called.
func (s *Server) Handle(path string, handler http.Handler) error {
	if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, "?#") {
		return fmt.Errorf("serving a handler: path %q must start with / and hold no query or fragment", path)
	}
	if handler == nil {
		return fmt.Errorf("serving a handler at %s: no handler", path)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateNew {
		return fmt.Errorf("serving a handler at %s: the server has already been started", path)
	}
	if e := s.endpoints[path]; e != nil {
		return fmt.Errorf("serving a handler at %s: the path is already served by webhook %q", path, e.name)
	}
	if s.handlers[path] != nil {
		return fmt.Errorf("serving a handler at %s: the path is already served by another handler", path)
	}
	s.handlers[path] = handler
	return nil
}

// Registrations returns copies of the registrations, in the order they were made.
func (s *Server) Registrations() []Registration {
	s.mu.RLock()
	defer s.mu.RUnlock()
	registrations := make([]Registration, 0, len(s.registrations))
	for _, r := range s.registrations {
		registrations = append(registrations, r.deepCopy())
	}
	return registrations
}

// Handler returns the handler Run serves: each webhook and each handler added with Handle
// at its path, 404 elsewhere.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(s.serveHTTP)
}

// serveHTTP routes on the exact path: the API server calls the path of the webhook
// configuration as it is, and paths need no cleaning or pattern syntax.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	e := s.endpoints[r.URL.Path]
	h := s.handlers[r.URL.Path]
	s.mu.RUnlock()
	switch {
	case h != nil:
		h.ServeHTTP(w, r)
	case e == nil:
		http.NotFound(w, r)
	case !s.admissionReady():
		e.serveNotReady(w, r)
	default:
		e.ServeHTTP(w, r)
	}
}

// admissionReady reports whether the webhooks can answer (ServerOptions.AdmissionReady).
func (s *Server) admissionReady() bool {
	if s.opts.AdmissionReady == nil {
		return true
	}
	select {
	case <-s.opts.AdmissionReady:
		return true
	default:
		return false
	}
}

// Run listens on the configured address and serves TLS (1.2 or later) until ctx ends, then
// shuts down, giving requests in flight up to 5 seconds to finish. It returns an error when it
// cannot listen or serving fails, nil after a shutdown. A server runs once.
func (s *Server) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	if s.opts.GetCertificate == nil {
		return errors.New("running the webhook server: no GetCertificate to take the serving certificate from")
	}
	if err := s.setState(stateNew, stateStarting); err != nil {
		return fmt.Errorf("running the webhook server: %w", err)
	}
	defer s.stopped()

	address := net.JoinHostPort(s.opts.BindAddress, strconv.Itoa(s.opts.Port))
	var lc net.ListenConfig
	listener, err := lc.Listen(ctx, "tcp", address)
	if err != nil {
		return fmt.Errorf("listening for admission requests on %s: %w", address, err)
	}
	server := &http.Server{
		Handler: s.Handler(),
		TLSConfig: &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: s.getCertificate(logger),
		},
		ReadHeaderTimeout: readHeaderTimeout,
		ErrorLog:          log.New(httpErrorLogWriter{logger}, "", 0),
		// Requests log through ctx's logger, but are not cancelled with it: Shutdown lets
		// them finish.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}

	s.mu.Lock()
	s.addr = listener.Addr()
	s.state = stateListening
	names := make([]string, 0, len(s.registrations))
	for _, r := range s.registrations {
		names = append(names, r.Name)
	}
	paths := slices.AppendSeq(make([]string, 0, len(s.handlers)), maps.Keys(s.handlers))
	slices.Sort(paths)
	close(s.listening)
	s.mu.Unlock()

	logger.Info("Serving admission webhooks", "address", listener.Addr().String(), "webhooks", names, "handlers", paths)
	served := make(chan error, 1)
	go func() { served <- server.ServeTLS(listener, "", "") }()

	select {
	case err := <-served:
		return fmt.Errorf("serving admission requests on %s: %w", listener.Addr(), err)
	case <-ctx.Done():
	}

	logger.Info("Shutting down the webhook server", "address", listener.Addr().String())
	_ = s.setState(stateListening, stateStopping)
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := server.Shutdown(shutdownCtx); err != nil {
		// Stuck requests are cut off; the API server applies its failure policy to them.
		logger.Error(err, "Requests still running after the shutdown grace period, closing their connections", "gracePeriod", shutdownTimeout)
		_ = server.Close()
	}
	<-served
	return nil
}

// Started returns a channel closed once Run listens; Addr has the address from then on.
func (s *Server) Started() <-chan struct{} {
	return s.listening
}

// Addr is the address the server listens on, nil before it does. With Port 0 it is the only
// way to learn the port.
func (s *Server) Addr() net.Addr {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.addr
}

// ReadyCheck is the readiness check "webhook-server": it passes while the server listens,
// has a certificate to serve and its webhooks can answer (AdmissionReady), so that the
// Service sends the API server's calls only to replicas that can answer them. The handlers
// added with Handle share the listener and the certificate, so it covers them too; they
// answer before AdmissionReady, but are not counted ready until then.
func (s *Server) ReadyCheck() healthz.HealthChecker {
	return healthz.NamedCheck(readyCheckName, func(*http.Request) error {
		switch s.currentState() {
		case stateNew, stateStarting:
			return errors.New("not listening yet")
		case stateStopping:
			return errors.New("shutting down")
		case stateStopped:
			return errors.New("stopped")
		}
		// Asked as a handshake without SNI would: a certificate provider that picks by
		// server name has nothing to go by here.
		cert, err := s.opts.GetCertificate(&tls.ClientHelloInfo{})
		if err != nil {
			return fmt.Errorf("no serving certificate: %w", err)
		}
		if cert == nil || len(cert.Certificate) == 0 {
			return errors.New("no serving certificate yet")
		}
		if cert.Leaf != nil && time.Now().After(cert.Leaf.NotAfter) {
			return fmt.Errorf("the serving certificate expired at %s", cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
		}
		if !s.admissionReady() {
			return errors.New("admission webhooks waiting for their informers to sync")
		}
		return nil
	})
}

func (s *Server) currentState() serverState {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.state
}

// setState moves the server from one state to the next, failing when it is elsewhere.
func (s *Server) setState(from, to serverState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != from {
		return errors.New("the server has already been run")
	}
	s.state = to
	return nil
}

// stopped records that Run has returned.
func (s *Server) stopped() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state = stateStopped
}

// getCertificate wraps the certificate source so that its failures reach the log at error
// level: net/http reports failed handshakes only among the routine ones of port scans and
// TCP probes.
func (s *Server) getCertificate(logger klog.Logger) func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		cert, err := s.opts.GetCertificate(hello)
		if err != nil {
			logger.Error(err, "No serving certificate for a TLS handshake", "serverName", hello.ServerName)
		}
		return cert, err
	}
}

// httpErrorLogWriter takes the messages net/http logs on its own. Failed TLS handshakes are
// routine (TCP probes, port scans, clients that do not trust the certificate yet), so they
// go to a high verbosity, as the API server's do; anything else is an error.
type httpErrorLogWriter struct {
	logger klog.Logger
}

func (w httpErrorLogWriter) Write(p []byte) (int, error) {
	message := strings.TrimSpace(string(p))
	if strings.HasPrefix(message, "http: TLS handshake error") {
		w.logger.V(4).Info("TLS handshake failed", "message", message)
	} else {
		w.logger.Error(nil, "HTTP server error", "message", message)
	}
	return len(p), nil
}
