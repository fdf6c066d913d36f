package conversion

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	certutil "k8s.io/client-go/util/cert"

	"github.com/bosun-dev/bosun/pkg/webhook"
)

// TestServedByTheWebhookServer serves the handler as the manager does, on the admission
// webhook server's TLS listener beside an admission webhook whose informers have not
// synced: conversions are answered at once, the webhook only once it is ready.
func TestServedByTheWebhookServer(t *testing.T) {
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

	admissionReady := make(chan struct{})
	server := webhook.NewServer(webhook.ServerOptions{
		BindAddress:    "127.0.0.1",
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil },
		AdmissionReady: admissionReady,
	})
	err = server.Register(webhook.Registration{
		Name: "vdaemonset.bosun.test", Path: "/validate-daemonset", Type: webhook.Validating,
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps.kruise.io"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"daemonsets"}},
		}},
		Handler: webhook.HandlerFunc(func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return webhook.Allowed()
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Handle(Path, newTestHandler(t)); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(testContext(t))
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-server.Started():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: time.Minute}
	defer client.CloseIdleConnections()
	base := "https://" + server.Addr().String()
	postTLS := func(path string, body []byte) (int, []byte) {
		t.Helper()
		resp, err := client.Post(base+path, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer func() { _ = resp.Body.Close() }()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
			t.Errorf("TLS state %+v, want TLS 1.2 or later", resp.TLS)
		}
		return resp.StatusCode, data
	}
	admissionBody := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"a-1",
		"kind":{"group":"apps.kruise.io","version":"v1alpha1","kind":"DaemonSet"},
		"resource":{"group":"apps.kruise.io","version":"v1alpha1","resource":"daemonsets"},
		"operation":"CREATE","object":{}}}`)

	// Before the admission webhooks are ready: conversions answer, admission does not.
	f := kindFixtures()[0]
	status, data := postTLS(Path, reviewBody(t, "uid-tls", appsBeta, f.alpha, f.beta))
	if status != http.StatusOK {
		t.Fatalf("HTTP status %d: %s", status, data)
	}
	resp := parseReview(t, data, "uid-tls")
	if resp.Result.Status != "Success" || len(resp.ConvertedObjects) != 2 {
		t.Fatalf("conversion over TLS: result %+v with %d objects", resp.Result, len(resp.ConvertedObjects))
	}
	for i, obj := range resp.ConvertedObjects {
		if got := field(t, obj, "apiVersion"); got != `"`+appsBeta+`"` {
			t.Errorf("object %d converted into %s", i, got)
		}
	}
	if status, data := postTLS("/validate-daemonset", admissionBody); status != http.StatusServiceUnavailable ||
		!strings.Contains(string(data), "not ready") {
		t.Errorf("admission before its informers synced: HTTP status %d: %s, want 503", status, data)
	}
	if err := server.ReadyCheck().Check(nil); err == nil {
		t.Error("the server is ready before its admission webhooks are")
	}

	close(admissionReady)
	if status, data := postTLS("/validate-daemonset", admissionBody); status != http.StatusOK {
		t.Errorf("admission once ready: HTTP status %d: %s", status, data)
	}
	if err := server.ReadyCheck().Check(nil); err != nil {
		t.Errorf("ready check once the admission webhooks are ready: %v", err)
	}
	if status, _ := postTLS(Path, reviewBody(t, "uid-tls", appsAlpha, f.beta)); status != http.StatusOK {
		t.Errorf("conversion once ready: HTTP status %d", status)
	}
	// A conversion review sent to an admission path is not a conversion.
	if status, _ := postTLS("/validate-daemonset", reviewBody(t, "uid-tls", appsAlpha, f.beta)); status != http.StatusBadRequest {
		t.Errorf("a ConversionReview at an admission path: HTTP status %d, want 400", status)
	}
}
