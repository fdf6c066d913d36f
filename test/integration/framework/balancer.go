package framework

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	// BalancerReadyInterval is how often a Balancer asks whether each backend is ready.
	BalancerReadyInterval = 100 * time.Millisecond
	// balancerReadyTimeout bounds one readiness check.
	balancerReadyTimeout = time.Second
	// balancerDialTimeout bounds a connection to a backend. Backends are on this host: a
	// dead one refuses at once.
	balancerDialTimeout = 5 * time.Second
	// balancerMaxBody bounds the request bodies an HTTP balancer buffers; admission and
	// conversion reviews are far smaller.
	balancerMaxBody = 16 << 20
)

// BalancerOptions configure a Balancer.
type BalancerOptions struct {
	// Backends are the host:port addresses the balancer spreads over, round-robin.
	Backends []string
	// Ready reports whether backend i may be sent new connections (or, with HTTP, requests),
	// as a readiness probe tells a Service; nil means every backend always may. The balancer
	// asks every BalancerReadyInterval, and also stops sending to a backend it could not
	// reach until Ready next says yes. When no backend is ready it still tries them all:
	// a refusal is no worse than what the client would get anyway.
	Ready func(ctx context.Context, backend int) bool
	// HTTP, when set, makes the balancer terminate TLS and pass on each HTTP request rather
	// than each TCP connection (see Balancer).
	HTTP *BalancerHTTP
}

// BalancerHTTP is what a balancer that terminates TLS needs.
type BalancerHTTP struct {
	// Certificate is the certificate it serves to its clients.
	Certificate tls.Certificate
	// BackendTLS configures its connections to the backends: the CA they are verified
	// against and the name they must be valid for.
	BackendTLS *tls.Config
}

// BalancerStats are what a Balancer counted.
type BalancerStats struct {
	// Served is, per backend, how many connections (or, with HTTP, answered requests) it
	// was given.
	Served []int64
	// Refused counts the connections to a backend that could not be made, each one followed
	// by a try on the next backend.
	Refused int64
	// Broken counts, with HTTP, the requests whose backend connection broke after the
	// request had gone out and before the whole answer came back, each then sent to the
	// next backend: the calls a TCP balancer cannot save when a backend dies under them.
	Broken int64
	// Unserved counts the connections (or requests) that no backend took.
	Unserved int64
}

// Balancer spreads what it accepts over backends, as a Service or load balancer in front of
// the replicas of a webhook server does. It works at one of two layers:
//
//   - TCP (the default): each connection goes whole to one backend, bytes untouched, so that
//     TLS passes through to the backends, which must then serve a certificate valid for the
//     balancer's address. A connection the backend drops, for example because it died,
//     is dropped on the client too, with whatever request was in flight on it.
//   - HTTP (BalancerOptions.HTTP): it terminates TLS and sends each request to a backend on
//     connections of its own. A request whose backend could not be reached, or whose
//     connection broke before the whole answer came back, is sent again to the next backend,
//     as HAProxy's or Envoy's retries on connection failures do; an answer, whatever its
//     status, is passed back as it is.
//
// An API server calls a webhook at a loopback address over one HTTP/2 connection, which a
// TCP balancer cannot spread over two backends; at any other address it speaks HTTP/1.1 and
// opens a connection per concurrent call. So listen on NonLoopbackIPv4.
type Balancer struct {
	opts     BalancerOptions
	listener net.Listener
	next     atomic.Uint64
	ready    []atomic.Bool

	served   []atomic.Int64
	refused  atomic.Int64
	broken   atomic.Int64
	unserved atomic.Int64

	// TCP: the open connections, closed when the balancer stops.
	mu     sync.Mutex
	open   map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup

	// HTTP.
	server    *http.Server
	transport *http.Transport
}

// StartBalancer starts a balancer on listener that stops, listener closed, when the test
// ends. With BalancerOptions.Ready it returns once every backend has been asked once.
func StartBalancer(t testing.TB, listener net.Listener, opts BalancerOptions) *Balancer {
	t.Helper()
	if len(opts.Backends) == 0 {
		t.Fatal("a balancer needs backends")
	}
	b := &Balancer{
		opts:     opts,
		listener: listener,
		ready:    make([]atomic.Bool, len(opts.Backends)),
		served:   make([]atomic.Int64, len(opts.Backends)),
		open:     map[net.Conn]struct{}{},
	}
	ctx, cancel := context.WithCancel(context.Background())
	if opts.Ready == nil {
		for i := range b.ready {
			b.ready[i].Store(true)
		}
	} else {
		b.checkReady(ctx)
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			ticker := time.NewTicker(BalancerReadyInterval)
			defer ticker.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-ticker.C:
					b.checkReady(ctx)
				}
			}
		}()
	}
	if opts.HTTP != nil {
		b.startHTTP()
	} else {
		b.startTCP()
	}
	t.Cleanup(func() {
		cancel()
		listener.Close()
		if b.server != nil {
			b.server.Close()
			b.transport.CloseIdleConnections()
		}
		b.mu.Lock()
		b.closed = true
		for conn := range b.open {
			conn.Close()
		}
		b.mu.Unlock()
		b.wg.Wait()
	})
	return b
}

// Stats returns what the balancer has counted so far.
func (b *Balancer) Stats() BalancerStats {
	s := BalancerStats{
		Served:   make([]int64, len(b.served)),
		Refused:  b.refused.Load(),
		Broken:   b.broken.Load(),
		Unserved: b.unserved.Load(),
	}
	for i := range b.served {
		s.Served[i] = b.served[i].Load()
	}
	return s
}

// Ready reports whether the balancer last found backend i ready.
func (b *Balancer) Ready(i int) bool { return b.ready[i].Load() }

func (b *Balancer) checkReady(ctx context.Context) {
	for i := range b.opts.Backends {
		checkCtx, cancel := context.WithTimeout(ctx, balancerReadyTimeout)
		b.ready[i].Store(b.opts.Ready(checkCtx, i))
		cancel()
	}
}

// markDown stops sending to backend i until its next readiness check says otherwise;
// without readiness checks nothing would bring it back, so it is left in the rotation.
func (b *Balancer) markDown(i int) {
	if b.opts.Ready != nil {
		b.ready[i].Store(false)
	}
}

// order returns the backends in the order to try them for one connection or request: the
// ready ones round-robin, then the others.
func (b *Balancer) order() []int {
	n := len(b.opts.Backends)
	start := int(b.next.Add(1)-1) % n
	out := make([]int, 0, n)
	for _, wantReady := range []bool{true, false} {
		for k := range n {
			i := (start + k) % n
			if b.ready[i].Load() == wantReady {
				out = append(out, i)
			}
		}
	}
	return out
}

// ---- TCP ----

func (b *Balancer) startTCP() {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			conn, err := b.listener.Accept()
			if err != nil {
				return // closed
			}
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				b.proxy(conn)
			}()
		}
	}()
}

// track remembers conn so that the cleanup closes it; false if the balancer is closing.
func (b *Balancer) track(conn net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		conn.Close()
		return false
	}
	b.open[conn] = struct{}{}
	return true
}

func (b *Balancer) untrack(conns ...net.Conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, conn := range conns {
		conn.Close()
		delete(b.open, conn)
	}
}

// proxy connects client to the first backend that accepts a connection and copies bytes
// both ways until either side closes.
func (b *Balancer) proxy(client net.Conn) {
	if !b.track(client) {
		return
	}
	var server net.Conn
	for _, i := range b.order() {
		conn, err := net.DialTimeout("tcp", b.opts.Backends[i], balancerDialTimeout)
		if err != nil {
			b.refused.Add(1)
			b.markDown(i)
			continue
		}
		b.served[i].Add(1)
		server = conn
		break
	}
	if server == nil {
		b.unserved.Add(1)
		b.untrack(client)
		return
	}
	if !b.track(server) {
		b.untrack(client)
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(server, client); done <- struct{}{} }()
	go func() { _, _ = io.Copy(client, server); done <- struct{}{} }()
	<-done
	b.untrack(client, server)
	<-done
}

// ---- HTTP ----

func (b *Balancer) startHTTP() {
	b.transport = &http.Transport{
		DialContext:         (&net.Dialer{Timeout: balancerDialTimeout}).DialContext,
		TLSClientConfig:     b.opts.HTTP.BackendTLS.Clone(),
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     time.Minute,
	}
	cert := b.opts.HTTP.Certificate
	b.server = &http.Server{
		Handler: http.HandlerFunc(b.serveHTTP),
		// What an API server speaks to a webhook outside loopback.
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}},
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){},
		ReadHeaderTimeout: 10 * time.Second,
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		_ = b.server.ServeTLS(b.listener, "", "")
	}()
}

// serveHTTP sends the request to one backend after another until one answers.
func (b *Balancer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, balancerMaxBody))
	if err != nil {
		http.Error(w, fmt.Sprintf("reading the request: %v", err), http.StatusBadRequest)
		return
	}
	for _, i := range b.order() {
		resp, answer, err := b.forward(r, b.opts.Backends[i], body)
		if err != nil {
			if r.Context().Err() != nil {
				return // the client has gone: nobody to answer
			}
			if isDialError(err) {
				b.refused.Add(1)
			} else {
				b.broken.Add(1)
			}
			b.markDown(i)
			continue
		}
		b.served[i].Add(1)
		copyHeader(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(answer)
		return
	}
	b.unserved.Add(1)
	http.Error(w, "no backend answered", http.StatusBadGateway)
}

// forward sends the request to backend and returns its answer, read whole: an answer cut
// off is a failure to answer.
func (b *Balancer) forward(r *http.Request, backend string, body []byte) (*http.Response, []byte, error) {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, "https://"+backend+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	copyHeader(out.Header, r.Header)
	resp, err := b.transport.RoundTrip(out)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	return resp, answer, nil
}

// hopByHop are the headers that describe one connection, not the message.
var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Te": true, "Trailer": true,
	"Transfer-Encoding": true, "Upgrade": true, "Content-Length": true,
}

func copyHeader(dst, src http.Header) {
	for key, values := range src {
		if !hopByHop[http.CanonicalHeaderKey(key)] {
			dst[key] = append(dst[key][:0:0], values...)
		}
	}
}

// isDialError reports whether err is a failure to connect, as opposed to one on a
// connection that was made.
func isDialError(err error) bool {
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}

// ListenNonLoopback listens on a free port of NonLoopbackIPv4, where a balancer in front of
// several webhook servers gets a connection per concurrent call, and returns the listener
// and its host.
func ListenNonLoopback(t testing.TB) (net.Listener, string) {
	t.Helper()
	host := NonLoopbackIPv4(t)
	listener, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("listening on %s: %v", host, err)
	}
	return listener, host
}

// NonLoopbackIPv4 returns an IPv4 address of this host that is neither a loopback nor a
// link-local address: one at which an API server calls a webhook over HTTP/1.1, a
// connection per concurrent call, so that a Balancer can spread the calls.
func NonLoopbackIPv4(t testing.TB) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range addrs {
		if ipNet, ok := addr.(*net.IPNet); ok && ipNet.IP.To4() != nil && !ipNet.IP.IsLoopback() && !ipNet.IP.IsLinkLocalUnicast() {
			return ipNet.IP.String()
		}
	}
	t.Fatalf("this host has no non-loopback IPv4 address (%v): the API server would call the webhooks over one HTTP/2 connection, which no TCP balancer can spread over two backends", addrs)
	return ""
}
