package app

import (
	"context"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/bosun-dev/bosun/pkg/clientbuilder"
	"github.com/bosun-dev/bosun/pkg/features"
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
