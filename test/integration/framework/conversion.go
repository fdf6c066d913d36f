package framework

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/webhook/conversion"
)

// conversionServer serves bosun's /convert handler from the test process, so that the
// CRDs whose versions differ (conversion strategy Webhook) can be read and written in
// either version while no bosun-controller-manager with webhooks runs: most suites run
// the manager with --webhook-port=0, and the ones that serve webhooks start and stop
// managers many times against one control plane. It is the same handler the manager
// serves, called by the real API server.
type conversionServer struct {
	server   *httptest.Server
	caBundle string // base64 of the PEM certificate, as a CRD's clientConfig wants it
}

func startConversionServer() (*conversionServer, error) {
	handler, err := conversion.NewHandler()
	if err != nil {
		return nil, fmt.Errorf("building the conversion handler: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(conversion.Path, handler)
	server := httptest.NewUnstartedServer(mux)
	server.EnableHTTP2 = true
	server.StartTLS() // httptest's certificate is valid for 127.0.0.1 and is its own CA
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
	return &conversionServer{server: server, caBundle: base64.StdEncoding.EncodeToString(caPEM)}, nil
}

func (s *conversionServer) url() string { return s.server.URL + conversion.Path }

func (s *conversionServer) close() { s.server.Close() }

// conversionState is the control plane's conversion server, started on first use.
type conversionState struct {
	mu     sync.Mutex
	server *conversionServer
}

// ServeConversion points every CRD with conversion strategy Webhook at a conversion
// server in the test process (starting it on first use; Stop stops it), replacing its
// clientConfig and nothing else. StartControlPlane does it once the CRDs it installs are
// in; a bosun-controller-manager with webhooks points them at itself while it runs
// (its writer corrects the address), and the framework points them back here when such a
// manager stops, so that the next test still reads both versions.
func (cp *ControlPlane) ServeConversion(ctx context.Context) error {
	client, err := dynamic.NewForConfig(cp.Config())
	if err != nil {
		return fmt.Errorf("building a dynamic client: %w", err)
	}
	crds, err := client.Resource(crdResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing CRDs: %w", err)
	}
	for i := range crds.Items {
		crd := &crds.Items[i]
		if strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy"); strategy != "Webhook" {
			continue
		}
		server, err := cp.conversionServer()
		if err != nil {
			return err
		}
		if err := pointConversionAt(ctx, client, crd.GetName(), server); err != nil {
			return err
		}
		klog.FromContext(ctx).V(2).Info("CRD converts through the test's conversion server", "crd", crd.GetName(), "url", server.url())
	}
	return nil
}

func (cp *ControlPlane) conversionServer() (*conversionServer, error) {
	cp.conversion.mu.Lock()
	defer cp.conversion.mu.Unlock()
	if cp.conversion.server == nil {
		server, err := startConversionServer()
		if err != nil {
			return nil, err
		}
		cp.conversion.server = server
	}
	return cp.conversion.server, nil
}

func (cp *ControlPlane) stopConversion() {
	cp.conversion.mu.Lock()
	defer cp.conversion.mu.Unlock()
	if cp.conversion.server != nil {
		cp.conversion.server.close()
		cp.conversion.server = nil
	}
}

// pointConversionAt replaces the clientConfig of one CRD's conversion webhook.
func pointConversionAt(ctx context.Context, client dynamic.Interface, name string, server *conversionServer) error {
	crds := client.Resource(crdResource)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		clientConfig := map[string]any{"url": server.url(), "caBundle": server.caBundle}
		if err := unstructured.SetNestedMap(crd.Object, clientConfig, "spec", "conversion", "webhook", "clientConfig"); err != nil {
			return fmt.Errorf("setting the conversion clientConfig of CRD %s: %w", name, err)
		}
		if _, err := crds.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating the conversion clientConfig of CRD %s: %w", name, err)
		}
		return nil
	})
}
