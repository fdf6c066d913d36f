package framework

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/bosun-dev/bosun/pkg/webhook/configuration"
)

// WebhookCallTimeout bounds how long WaitForWebhooksCalled waits for the API server to call
// one webhook.
const WebhookCallTimeout = 2 * time.Minute

// WebhookProbe names one admission webhook of bosun-controller-manager and how to make the
// API server call it.
type WebhookProbe struct {
	// Webhook is the webhook's name in bosun's configurations, for example "mnodeimage.kb.io".
	Webhook string
	// Send makes one request that the API server routes to Webhook, usually a dry-run
	// creation (the webhooks declare no side effects, so dry runs reach them). Its answer
	// does not matter, only that the webhook was asked.
	Send func(ctx context.Context)
}

// StartBosunControllerManagerWithWebhooks runs bosun-controller-manager with opts and its
// admission webhooks (opts.Webhooks is forced on) until the test ends, and returns once the
// API server calls every probed webhook (see WaitForWebhooksCalled). ctx bounds the wait.
func StartBosunControllerManagerWithWebhooks(ctx context.Context, t testing.TB, cp *ControlPlane, opts ControllerManagerOptions, probes ...WebhookProbe) *ControllerManager {
	t.Helper()
	opts.Webhooks = true
	cm := StartBosunControllerManager(t, cp, opts)
	WaitForWebhooksCalled(ctx, t, cp, probes, cm)
	return cm
}

// WaitForWebhooksCalled waits, probe by probe, until one of managers has counted a call of
// the probe's webhook, sending the probe's request before each look; it fails the test when
// a webhook is not called within WebhookCallTimeout. A manager reports ready once it has
// written its webhook configurations, but the API server picks them up through an informer
// of its own a moment later: a test that checked a denial before that would see the request
// pass. Managers count every call, whatever their answer, so the wait does not depend on the
// behaviour under test.
func WaitForWebhooksCalled(ctx context.Context, t testing.TB, cp *ControlPlane, probes []WebhookProbe, managers ...*ControllerManager) {
	t.Helper()
	token := cp.Config().BearerToken
	for _, probe := range probes {
		err := WaitFor(ctx, WebhookCallTimeout, "the API server to call webhook "+probe.Webhook, func(ctx context.Context) (bool, error) {
			probe.Send(ctx)
			for _, cm := range managers {
				metrics, err := cm.Metrics(token)
				if err != nil {
					return false, err
				}
				if WebhookRequests(metrics, probe.Webhook) > 0 {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// WebhookRequests sums bosun_webhook_requests_total of one webhook over all its series (every
// operation and answer) in a /metrics exposition of bosun-controller-manager.
func WebhookRequests(metrics, webhook string) float64 {
	total := 0.0
	for _, line := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(line, "bosun_webhook_requests_total{") || !strings.Contains(line, `webhook="`+webhook+`"`) {
			continue
		}
		fields := strings.Fields(line)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			total += v
		}
	}
	return total
}

// DryRunCreate is the CreateOptions of a probe's request: validated and admitted, never
// stored.
var DryRunCreate = metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

// DeleteWebhookConfigurations deletes the mutating and validating webhook configurations
// bosun-controller-manager writes (those already gone are not an error). Tests call it when
// their manager has stopped: the configurations would otherwise send later requests to a
// webhook nobody serves, and those that fail closed would refuse them.
func DeleteWebhookConfigurations(ctx context.Context, client kubernetes.Interface) error {
	admission := client.AdmissionregistrationV1()
	if err := admission.MutatingWebhookConfigurations().Delete(ctx, configuration.MutatingName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s: %w", configuration.MutatingName, err)
	}
	if err := admission.ValidatingWebhookConfigurations().Delete(ctx, configuration.ValidatingName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s: %w", configuration.ValidatingName, err)
	}
	return nil
}
