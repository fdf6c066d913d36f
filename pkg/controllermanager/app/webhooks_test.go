package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	bosunfake "github.com/bosun-dev/client-go/clientset/versioned/fake"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	certutil "k8s.io/client-go/util/cert"

	"github.com/bosun-dev/bosun/pkg/clientbuilder"
	"github.com/bosun-dev/bosun/pkg/controllermanager/options"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/serving"
	"github.com/bosun-dev/bosun/pkg/webhook"
	"github.com/bosun-dev/bosun/pkg/webhook/noderestriction"
)

// The webhooks' clients, and those built later from their context, run at the
// OpenKruise-compatible controllers' limits, not the base ones.
func TestWebhookContextClientLimits(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := clientbuilder.NewSimpleBuilder(&rest.Config{Host: "https://127.0.0.1:1", QPS: 20, Burst: 30})
	wc, err := newWebhookContext(ctx, base, nil, clientbuilder.Limits{QPS: 50, Burst: 100}, nil, features.NewFeatureGate(), noderestriction.Identities{})
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

	dir, certPEM := selfSignedCertDir(t)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	port := freeLoopbackPort(t)

	unreachable, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	wc := &registry.WebhookContext{
		InformerFactory:      informers.NewSharedInformerFactory(unreachable, 0),
		BosunInformerFactory: bosuninformers.NewSharedInformerFactory(bosunfake.NewSimpleClientset(), 0),
		EventRecorder:        fakeRecorders(record.NewFakeRecorder(10)),
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
	if err := startWebhooks(ctx, o, fake.NewClientset(), newCRDClient(), wc, regs, readyz, func(err error) { t.Errorf("webhooks failed: %v", err) }); err != nil {
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

// selfSignedCertDir writes a self-signed certificate for localhost and 127.0.0.1 and its key
// into a new directory as --webhook-cert-dir holds them (tls.crt, tls.key, and the
// certificate again as ca.crt), and returns the directory and the certificate.
func selfSignedCertDir(t *testing.T) (dir string, certPEM []byte) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": certPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir, certPEM
}

// freeLoopbackPort returns a TCP port that was free on 127.0.0.1 a moment ago.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	return taken.Addr().(*net.TCPAddr).Port
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// newCRDClient returns a fake dynamic client that holds crds and lists CRDs.
func newCRDClient(crds ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{crdResource: "CustomResourceDefinitionList"}, crds...)
}

// fakeRecorders returns an EventRecorderFactory whose recorders all are recorder.
func fakeRecorders(recorder *record.FakeRecorder) registry.EventRecorderFactory {
	return func(string) record.EventRecorderLogger { return recorder }
}

// conversionCRD is a CRD named name whose conversion webhook is clientConfig, labelled as
// bosun's if managed.
func conversionCRD(name string, managed bool, clientConfig map[string]any) *unstructured.Unstructured {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"conversion": map[string]any{
				"strategy": "Webhook",
				"webhook":  map[string]any{"clientConfig": clientConfig, "conversionReviewVersions": []any{"v1"}},
			},
		},
	}}
	if managed {
		crd.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "bosun"})
	}
	return crd
}

// Every replica points bosun's CRDs at its /convert with the CA of --webhook-cert-dir, and
// /readyz names a CRD it must leave alone.
func TestStartWebhooksConfiguresTheConversionWebhook(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	dir, certPEM := selfSignedCertDir(t)
	port := freeLoopbackPort(t)
	url := "https://127.0.0.1:" + strconv.Itoa(port) + "/convert"

	crds := newCRDClient(
		conversionCRD("daemonsets.apps.kruise.io", true, map[string]any{"url": url}),
		conversionCRD("podunavailablebudgets.policy.kruise.io", false,
			map[string]any{"service": map[string]any{"namespace": "kruise-system", "name": "kruise-webhook-service", "path": "/convert"}}),
	)
	recorder := record.NewFakeRecorder(10)
	wc := &registry.WebhookContext{
		InformerFactory:      informers.NewSharedInformerFactory(fake.NewClientset(), 0),
		BosunInformerFactory: bosuninformers.NewSharedInformerFactory(bosunfake.NewSimpleClientset(), 0),
		EventRecorder:        fakeRecorders(recorder),
	}
	o := &options.WebhookOptions{Port: port, BindAddress: "127.0.0.1", CertDir: dir}
	readyz := serving.NewCheckSet("/readyz")
	if err := startWebhooks(ctx, o, fake.NewClientset(), crds, wc, nil, readyz, func(err error) { t.Errorf("webhooks failed: %v", err) }); err != nil {
		t.Fatal(err)
	}

	want := map[string]any{"url": url, "caBundle": base64.StdEncoding.EncodeToString(certPEM)}
	eventually(t, fmt.Sprintf("%v", want), func() (bool, string) {
		obj, err := crds.Tracker().Get(crdResource, "", "daemonsets.apps.kruise.io")
		if err != nil {
			t.Fatal(err)
		}
		got, _, _ := unstructured.NestedMap(obj.(*unstructured.Unstructured).Object, "spec", "conversion", "webhook", "clientConfig")
		return reflect.DeepEqual(got, want), fmt.Sprintf("clientConfig %v", got)
	})

	// The writer syncs each CRD on its own key, so the unmanaged one may be looked at after
	// the managed one was written.
	eventually(t, "the unmanaged CRD named", func() (bool, string) {
		w := httptest.NewRecorder()
		readyz.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz/webhook-configuration", nil))
		body := w.Body.String()
		named := w.Code != http.StatusOK && strings.Contains(body, "podunavailablebudgets.policy.kruise.io is not labelled") &&
			strings.Contains(body, "service kruise-system/kruise-webhook-service")
		return named, fmt.Sprintf("/readyz/webhook-configuration answered %d %q", w.Code, body)
	})
	select {
	case e := <-recorder.Events:
		if !strings.Contains(e, "ConversionNotManaged") {
			t.Errorf("event %q, want ConversionNotManaged", e)
		}
	case <-time.After(30 * time.Second):
		t.Error("no event on the unmanaged CRD")
	}
}

// eventually calls check every 20 ms until it reports done, and fails the test after 30
// seconds with what check last observed and what was wanted.
func eventually(t *testing.T, want string, check func() (done bool, observed string)) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		done, observed := check()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after 30 seconds, want %s", observed, want)
		}
	}
}
