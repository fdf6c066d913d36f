package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
)

var allow = HandlerFunc(func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return Allowed()
})

func TestRegister(t *testing.T) {
	s := NewServer(ServerOptions{})
	first := newRegistration("first.bosun.test", allow)
	first.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
	if err := s.Register(first); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if err := s.Register(newRegistration("second.bosun.test", allow)); err != nil {
		t.Fatalf("Register: %v", err)
	}

	sameName := newRegistration("first.bosun.test", allow)
	sameName.Path = "/elsewhere"
	samePath := newRegistration("third.bosun.test", allow)
	samePath.Path = "/second.bosun.test"
	invalid := newRegistration("third.bosun.test", nil)
	for _, tt := range []struct {
		name string
		r    Registration
		want string
	}{
		{"same name", sameName, `registering webhook "first.bosun.test": a webhook of that name is already registered`},
		{"same path", samePath, `registering webhook "third.bosun.test": path /second.bosun.test is already served by webhook "second.bosun.test"`},
		{"invalid", invalid, `registering webhook: webhook "third.bosun.test": no handler`},
	} {
		if err := s.Register(tt.r); err == nil || err.Error() != tt.want {
			t.Errorf("%s: Register error %v, want %q", tt.name, err, tt.want)
		}
	}

	// Neither the caller's copy nor the one returned reaches the server's.
	first.NamespaceSelector.MatchLabels["a"] = "changed"
	first.Rules[0].Operations[0] = admissionregistrationv1.Delete
	got := s.Registrations()
	got[1].Rules = nil
	got = s.Registrations()
	var names []string
	for _, r := range got {
		names = append(names, r.Name)
	}
	if diff := cmp.Diff([]string{"first.bosun.test", "second.bosun.test"}, names); diff != "" {
		t.Errorf("registrations (-want +got):\n%s", diff)
	}
	if got[0].NamespaceSelector.MatchLabels["a"] != "b" || got[0].Rules[0].Operations[0] != admissionregistrationv1.Create {
		t.Errorf("a change to the caller's registration reached the server's: %+v", got[0])
	}
	if len(got[1].Rules) != 1 {
		t.Errorf("a change to a returned registration reached the server's")
	}
}

// newCertificate is a self-signed serving certificate for 127.0.0.1 and a pool trusting it.
func newCertificate(t *testing.T) (*tls.Certificate, *x509.CertPool) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return &cert, pool
}

// certificateSource serves the certificate last stored, or fails when there is none.
type certificateSource struct {
	cert atomic.Pointer[tls.Certificate]
}

func (c *certificateSource) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if cert := c.cert.Load(); cert != nil {
		return cert, nil
	}
	return nil, errors.New("not issued yet")
}

// runServer runs s until the returned function is called, which returns Run's error.
func runServer(t *testing.T, s *Server) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(testContext(t))
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case <-s.Started():
	case err := <-done:
		cancel()
		t.Fatalf("Run: %v", err)
	}
	var stopped bool
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func postTLS(t *testing.T, client *http.Client, url string, body []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP status %d: %s", resp.StatusCode, data)
	}
	if resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
		t.Errorf("TLS state %+v, want TLS 1.2 or later", resp.TLS)
	}
	return parseResponse(t, data, "uid-tls")
}

func TestRunServesTLS(t *testing.T) {
	cert, pool := newCertificate(t)
	var certs certificateSource
	s := newTestServer(t, ServerOptions{BindAddress: "127.0.0.1", GetCertificate: certs.GetCertificate}, "tls.bosun.test", allow)
	ready := s.ReadyCheck()
	if ready.Name() != "webhook-server" {
		t.Errorf("ready check name %q", ready.Name())
	}
	if err := ready.Check(nil); err == nil || err.Error() != "not listening yet" {
		t.Errorf("ready check before Run: %v, want not listening yet", err)
	}

	stop := runServer(t, s)
	if err := ready.Check(nil); err == nil || err.Error() != "no serving certificate: not issued yet" {
		t.Errorf("ready check without a certificate: %v", err)
	}
	certs.cert.Store(cert)
	if err := ready.Check(nil); err != nil {
		t.Errorf("ready check while serving: %v", err)
	}
	if err := s.Register(newRegistration("late.bosun.test", allow)); err == nil {
		t.Error("Register succeeded on a running server")
	}
	if err := s.Run(testContext(t)); err == nil {
		t.Error("a second Run succeeded")
	}

	client := &http.Client{
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		Timeout:   time.Minute,
	}
	defer client.CloseIdleConnections()
	url := "https://" + s.Addr().String() + "/tls.bosun.test"
	if resp := postTLS(t, client, url, reviewBody(t, newRequest("uid-tls", nil))); !resp.Allowed {
		t.Errorf("request denied: %+v", resp.Result)
	}

	// Below TLS 1.2, there is no handshake.
	old := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}
	if conn, err := tls.Dial("tcp", s.Addr().String(), old); err == nil {
		_ = conn.Close()
		t.Error("TLS 1.1 handshake succeeded")
	}

	if err := stop(); err != nil {
		t.Errorf("Run after the context ended: %v", err)
	}
	if err := ready.Check(nil); err == nil || err.Error() != "stopped" {
		t.Errorf("ready check after Run: %v, want stopped", err)
	}
}

// TestRunServesRotatedCertificate checks that each handshake asks for the certificate.
func TestRunServesRotatedCertificate(t *testing.T) {
	first, firstPool := newCertificate(t)
	second, secondPool := newCertificate(t)
	var certs certificateSource
	certs.cert.Store(first)
	s := newTestServer(t, ServerOptions{BindAddress: "127.0.0.1", GetCertificate: certs.GetCertificate}, "rotate.bosun.test", allow)
	runServer(t, s)
	newClient := func(pool *x509.CertPool) *http.Client {
		return &http.Client{
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true},
			Timeout:   time.Minute,
		}
	}
	url := "https://" + s.Addr().String() + "/rotate.bosun.test"
	body := reviewBody(t, newRequest("uid-tls", nil))

	postTLS(t, newClient(firstPool), url, body)
	certs.cert.Store(second)
	postTLS(t, newClient(secondPool), url, body)
	if _, err := newClient(firstPool).Post(url, "application/json", bytes.NewReader(body)); err == nil {
		t.Error("the old certificate is still served")
	}
}

func TestReadyCheckExpiredCertificate(t *testing.T) {
	cert, _ := newCertificate(t)
	expired := *cert
	expired.Leaf = &x509.Certificate{NotAfter: time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)}
	s := NewServer(ServerOptions{
		BindAddress:    "127.0.0.1",
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &expired, nil },
	})
	runServer(t, s)

	if err := s.ReadyCheck().Check(nil); err == nil || err.Error() != "the serving certificate expired at 2020-01-02T03:04:05Z" {
		t.Errorf("ready check: %v", err)
	}
}

// TestRunShutsDownGracefully ends Run's context while a request is in flight: the request
// is answered, and Run returns once it is.
func TestRunShutsDownGracefully(t *testing.T) {
	cert, pool := newCertificate(t)
	entered := make(chan struct{})
	release := make(chan struct{})
	s := newTestServer(t, ServerOptions{
		BindAddress:    "127.0.0.1",
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cert, nil },
	}, "graceful.bosun.test", HandlerFunc(
		func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			close(entered)
			<-release
			return Allowed()
		}))
	stop := runServer(t, s)
	address := s.Addr().String()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: time.Minute}
	defer client.CloseIdleConnections()
	type answer struct {
		status int
		body   []byte
		err    error
	}
	answered := make(chan answer, 1)
	body := reviewBody(t, newRequest("uid-tls", nil))
	go func() {
		resp, err := client.Post("https://"+address+"/graceful.bosun.test", "application/json", bytes.NewReader(body))
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer func() { _ = resp.Body.Close() }()
		data, err := io.ReadAll(resp.Body)
		answered <- answer{status: resp.StatusCode, body: data, err: err}
	}()
	<-entered

	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	// The listener closes as the shutdown begins.
	for deadline := time.Now().Add(time.Minute); ; {
		conn, err := net.Dial("tcp", address)
		if err != nil {
			break
		}
		_ = conn.Close()
		if time.Now().After(deadline) {
			t.Fatal("still listening a minute after the context ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.ReadyCheck().Check(nil); err == nil || err.Error() != "shutting down" {
		t.Errorf("ready check during the shutdown: %v, want shutting down", err)
	}
	close(release)

	got := <-answered
	if got.err != nil || got.status != http.StatusOK {
		t.Fatalf("request in flight: HTTP status %d, error %v", got.status, got.err)
	}
	if resp := parseResponse(t, got.body, "uid-tls"); !resp.Allowed {
		t.Errorf("request in flight denied: %+v", resp.Result)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Run: %v", err)
	}
}

func TestRunFailures(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	port := taken.Addr().(*net.TCPAddr).Port
	getCertificate := func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return nil, errors.New("none") }

	s := NewServer(ServerOptions{BindAddress: "127.0.0.1", Port: port, GetCertificate: getCertificate})
	err = s.Run(testContext(t))
	if want := "listening for admission requests on 127.0.0.1:" + strconv.Itoa(port); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Run on a taken port: %v, want %s...", err, want)
	}
	select {
	case <-s.Started():
		t.Error("Started closed though Run could not listen")
	default:
	}
	if err := s.ReadyCheck().Check(nil); err == nil {
		t.Error("ready check passes though Run could not listen")
	}

	s = NewServer(ServerOptions{BindAddress: "127.0.0.1"})
	if err := s.Run(testContext(t)); err == nil {
		t.Error("Run without GetCertificate succeeded")
	}
}

func TestHandle(t *testing.T) {
	answer := func(text string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, text) })
	}
	s := newTestServer(t, ServerOptions{}, "admission.bosun.test", allow)
	if err := s.Handle("/convert", answer("converted")); err != nil {
		t.Fatalf("Handle: %v", err)
	}
	atHandlerPath := newRegistration("convert.bosun.test", allow)
	atHandlerPath.Path = "/convert"
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"path of a webhook", s.Handle("/admission.bosun.test", answer("x")), `serving a handler at /admission.bosun.test: the path is already served by webhook "admission.bosun.test"`},
		{"path of a handler", s.Handle("/convert", answer("x")), "serving a handler at /convert: the path is already served by another handler"},
		{"relative path", s.Handle("convert", answer("x")), `serving a handler: path "convert" must start with / and hold no query or fragment`},
		{"query", s.Handle("/convert?x=1", answer("x")), `serving a handler: path "/convert?x=1" must start with / and hold no query or fragment`},
		{"no handler", s.Handle("/other", nil), "serving a handler at /other: no handler"},
		{"webhook at a handler's path", s.Register(atHandlerPath), `registering webhook "convert.bosun.test": path /convert is already served by another handler`},
	} {
		if tt.err == nil || tt.err.Error() != tt.want {
			t.Errorf("%s: error %v, want %q", tt.name, tt.err, tt.want)
		}
	}
	// Not a webhook: it is in no configuration.
	if regs := s.Registrations(); len(regs) != 1 || regs[0].Name != "admission.bosun.test" {
		t.Errorf("registrations %+v, want the admission webhook only", regs)
	}

	w := post(testContext(t), s.Handler(), "/convert", []byte("{}"))
	if w.Code != http.StatusOK || w.Body.String() != "converted" {
		t.Errorf("/convert answered %d %q", w.Code, w.Body)
	}

	cert, _ := newCertificate(t)
	s = NewServer(ServerOptions{BindAddress: "127.0.0.1", GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cert, nil }})
	runServer(t, s)
	if err := s.Handle("/late", answer("x")); err == nil || err.Error() != "serving a handler at /late: the server has already been started" {
		t.Errorf("Handle on a running server: %v", err)
	}
}

// TestAdmissionReady: until AdmissionReady is closed, the webhooks' paths answer 503 without
// calling the webhooks, handlers added with Handle answer, and the server is not ready.
func TestAdmissionReady(t *testing.T) {
	const name = "notready.bosun.test"
	cert, _ := newCertificate(t)
	ready := make(chan struct{})
	var calls atomic.Int32
	s := newTestServer(t, ServerOptions{
		BindAddress:    "127.0.0.1",
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cert, nil },
		AdmissionReady: ready,
	}, name, HandlerFunc(func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		calls.Add(1)
		return Allowed()
	}))
	if err := s.Handle("/convert", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "converted")
	})); err != nil {
		t.Fatal(err)
	}
	runServer(t, s)
	refusals := func() float64 {
		values, err := testutil.GetCounterValuesFromGatherer(legacyregistry.DefaultGatherer, "bosun_webhook_requests_total",
			map[string]string{"webhook": name, "operation": "unknown"}, "allowed")
		if err != nil {
			t.Fatal(err)
		}
		return values["error"]
	}
	before := refusals()

	w := post(testContext(t), s.Handler(), "/"+name, reviewBody(t, newRequest("uid-1", nil)))
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "admission webhook notready.bosun.test is not ready: its informers have not synced yet") {
		t.Errorf("webhook before AdmissionReady: %d %q, want 503", w.Code, w.Body)
	}
	if calls.Load() != 0 {
		t.Error("the webhook was called before AdmissionReady")
	}
	if w := post(testContext(t), s.Handler(), "/convert", nil); w.Code != http.StatusOK || w.Body.String() != "converted" {
		t.Errorf("handler before AdmissionReady: %d %q", w.Code, w.Body)
	}
	if err := s.ReadyCheck().Check(nil); err == nil || err.Error() != "admission webhooks waiting for their informers to sync" {
		t.Errorf("ready check before AdmissionReady: %v", err)
	}
	if got := refusals() - before; got != 1 {
		t.Errorf("the refused request counted %v times as allowed=\"error\", want 1", got)
	}

	close(ready)
	if resp := readResponse(t, post(testContext(t), s.Handler(), "/"+name, reviewBody(t, newRequest("uid-2", nil))), "uid-2"); !resp.Allowed {
		t.Errorf("webhook after AdmissionReady denied: %+v", resp.Result)
	}
	if calls.Load() != 1 {
		t.Errorf("the webhook was called %d times after AdmissionReady, want 1", calls.Load())
	}
	if err := s.ReadyCheck().Check(nil); err != nil {
		t.Errorf("ready check after AdmissionReady: %v", err)
	}
}
