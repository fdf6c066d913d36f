package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	bosunfake "github.com/bosun-dev/client-go/clientset/versioned/fake"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"

	"github.com/bosun-dev/bosun/pkg/clientbuilder"
	"github.com/bosun-dev/bosun/pkg/controllermanager/options"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/serving"
	"github.com/bosun-dev/bosun/pkg/webhook"
)

// The webhooks' clients, and those built later from their context, run at the
// OpenKruise-compatible controllers' limits, not the base ones.
func TestWebhookContextClientLimits(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := clientbuilder.NewSimpleBuilder(&rest.Config{Host: "https://127.0.0.1:1", QPS: 20, Burst: 30})
	wc, err := newWebhookContext(ctx, base, clientbuilder.Limits{QPS: 50, Burst: 100}, nil, features.NewFeatureGate())
	if err != nil {
		t.Fatal(err)
	}
	if qps := wc.Client.CoreV1().RESTClient().GetRateLimiter().QPS(); qps != 50 {
		t.Errorf("typed client QPS %v, want 50", qps)
	}
	if qps := wc.BosunClient.PolicyV1alpha1().RESTClient().GetRateLimiter().QPS(); qps != 50 {
		t.Errorf("bosun client QPS %v, want 50", qps)
	}
	config, err := wc.ClientBuilder.Config(wc.ClientName)
	if err != nil {
		t.Fatal(err)
	}
	if config.QPS != 50 || config.Burst != 100 {
		t.Errorf("further clients' limits %v/%d, want 50/100", config.QPS, config.Burst)
	}
}

// The webhook server answers CRD conversions as soon as it listens, while the admission
// webhooks wait for informers that may never sync (here: their API server is unreachable),
// and the server is not ready until they do.
func TestConversionIsServedBeforeTheWebhookInformersSync(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": certPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := taken.Addr().(*net.TCPAddr).Port
	_ = taken.Close()

	unreachable, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	wc := &registry.WebhookContext{
		InformerFactory:      informers.NewSharedInformerFactory(unreachable, 0),
		BosunInformerFactory: bosuninformers.NewSharedInformerFactory(bosunfake.NewSimpleClientset(), 0),
	}
	wc.InformerFactory.Core().V1().Pods().Informer()
	regs := []webhook.Registration{{
		Name: "vtest.bosun.test", Path: "/validate-test", Type: webhook.Validating,
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
		}},
		Handler: webhook.HandlerFunc(func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return webhook.Allowed()
		}),
	}}
	o := &options.WebhookOptions{Port: port, BindAddress: "127.0.0.1", CertDir: dir}
	readyz := serving.NewCheckSet("/readyz")
	if err := startWebhooks(ctx, o, fake.NewClientset(), wc, regs, readyz, func(err error) { t.Errorf("webhooks failed: %v", err) }); err != nil {
		t.Fatal(err)
	}

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	base := "https://127.0.0.1:" + strconv.Itoa(port)
	review := []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"c-1",
		"desiredAPIVersion":"apps.kruise.io/v1beta1","objects":[{"apiVersion":"apps.kruise.io/v1alpha1","kind":"NodeImage",
		"metadata":{"name":"node-1"},"spec":{}}]}}`)
	var answer struct {
		Response struct {
			UID              string            `json:"uid"`
			ConvertedObjects []json.RawMessage `json:"convertedObjects"`
			Result           struct{ Status string }
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := client.Post(base+"/convert", "application/json", bytes.NewReader(review))
		if err == nil {
			data, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("/convert: HTTP status %d: %s", resp.StatusCode, data)
			}
			if err := json.Unmarshal(data, &answer); err != nil {
				t.Fatalf("/convert answered %s: %v", data, err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/convert did not answer within 30 seconds: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if answer.Response.UID != "c-1" || answer.Response.Result.Status != "Success" || len(answer.Response.ConvertedObjects) != 1 ||
		!bytes.Contains(answer.Response.ConvertedObjects[0], []byte(`"apiVersion":"apps.kruise.io/v1beta1"`)) {
		t.Errorf("/convert answered %+v", answer.Response)
	}

	resp, err := client.Post(base+"/validate-test", "application/json", bytes.NewReader([]byte(`{}`)))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("the admission webhook answered HTTP %d before its informers synced, want 503", resp.StatusCode)
	}
	w := httptest.NewRecorder()
	readyz.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz/webhook-server", nil))
	if w.Code == http.StatusOK {
		t.Errorf("webhook-server is ready before the admission webhooks' informers synced: %s", w.Body)
	}
}
