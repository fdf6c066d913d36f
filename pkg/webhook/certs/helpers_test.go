package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

const day = 24 * time.Hour

// testContext returns a context whose logger writes to t and keeps what it logs.
func testContext(t *testing.T) (context.Context, ktesting.Buffer) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	return klog.NewContext(t.Context(), logger), logger.GetSink().(ktesting.Underlier).GetBuffer()
}

// run runs p until the returned stop is called or the test ends, and checks that Run
// returns nil soon after its context ends.
func run(ctx context.Context, t *testing.T, p Provider) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("Run did not return after its context ended")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// eventually polls cond until it holds, failing the test after a generous deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitReady(t *testing.T, p Provider) {
	t.Helper()
	eventually(t, "a serving certificate", func() bool { return p.Check(nil) == nil })
}

// expectChanged waits for p to signal Changed.
func expectChanged(t *testing.T, p Provider) {
	t.Helper()
	select {
	case <-p.Changed():
	case <-time.After(10 * time.Second):
		t.Fatal("Changed was not signalled")
	}
}

// drainChanged forgets a pending Changed signal.
func drainChanged(p Provider) {
	select {
	case <-p.Changed():
	default:
	}
}

// leaf returns p's serving certificate, or nil before it has one.
func leaf(p Provider) *x509.Certificate {
	c, err := p.GetCertificate(nil)
	if err != nil {
		return nil
	}
	return c.Leaf
}

// serial returns the serial number of p's serving certificate, or "" before it has one.
func serial(p Provider) string {
	if l := leaf(p); l != nil {
		return l.SerialNumber.String()
	}
	return ""
}

// bundleCAs parses p's CA bundle.
func bundleCAs(t *testing.T, p Provider) []*x509.Certificate {
	t.Helper()
	cas, err := cert.ParseCertsPEM(p.CABundle())
	if err != nil {
		t.Fatalf("CA bundle: %v", err)
	}
	return cas
}

// verifyHosts checks that p's serving certificate verifies against p's CA bundle, at now,
// for every host, as the API server would check it.
func verifyHosts(t *testing.T, p Provider, now time.Time, hosts ...string) {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(p.CABundle()) {
		t.Fatalf("CA bundle holds no certificate: %q", p.CABundle())
	}
	for _, host := range hosts {
		if _, err := leaf(p).Verify(x509.VerifyOptions{Roots: roots, DNSName: host, CurrentTime: now}); err != nil {
			t.Errorf("serving certificate does not verify for %s: %v", host, err)
		}
	}
}

// handshake connects to a TLS server using p.GetCertificate, trusting p.CABundle and
// expecting serverName, and returns the certificate the server presented.
func handshake(t *testing.T, p Provider, serverName string) *x509.Certificate {
	t.Helper()
	listener, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{GetCertificate: p.GetCertificate})
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	served := make(chan struct{})
	go func() {
		defer close(served)
		conn, err := listener.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		_ = conn.(*tls.Conn).Handshake() // the client reports what went wrong
	}()
	defer func() { <-served }()

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(p.CABundle())
	conn, err := tls.Dial("tcp", listener.Addr().String(), &tls.Config{RootCAs: roots, ServerName: serverName})
	if err != nil {
		t.Fatalf("TLS handshake for %s: %v", serverName, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

// stepWhenWaiting moves clk by d once something waits on it, so that the provider's
// timer fires rather than being set after the step.
func stepWhenWaiting(t *testing.T, clk *testingclock.FakeClock, d time.Duration) {
	t.Helper()
	eventually(t, "the provider to wait on its clock", clk.HasWaiters)
	clk.Step(d)
}

// observerClock tells the time of another clock but has timers that never fire: its
// provider acts only on what it observes in the Secret, like a replica whose own timer
// has not fired yet.
type observerClock struct {
	*testingclock.FakeClock
	timers *testingclock.FakeClock
}

func newObserverClock(of *testingclock.FakeClock) observerClock {
	return observerClock{FakeClock: of, timers: testingclock.NewFakeClock(of.Now())}
}

func (c observerClock) NewTimer(d time.Duration) clock.Timer {
	return c.timers.NewTimer(d)
}
