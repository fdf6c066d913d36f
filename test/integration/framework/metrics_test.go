package framework_test

import (
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// MetricValue must not confuse a series with another whose name or labels start the same
// way, since callers wait on exact values such as a queue depth of 0.
func TestMetricValue(t *testing.T) {
	const metrics = `# HELP workqueue_depth [ALPHA] Current depth of workqueue
# TYPE workqueue_depth gauge
workqueue_depth{name="deployment"} 0
workqueue_depth{name="deployment_extra"} 7
workqueue_depth_other{name="deployment"} 9
workqueue_adds_total{name="replicaset"} 1.5e+06
`
	for _, tc := range []struct {
		series, want string
		found        bool
	}{
		{series: `workqueue_depth{name="deployment"}`, want: "0", found: true},
		{series: `workqueue_depth{name="deployment_extra"}`, want: "7", found: true},
		{series: `workqueue_adds_total{name="replicaset"}`, want: "1.5e+06", found: true},
		{series: `workqueue_depth{name="replicaset"}`, found: false},
		{series: `workqueue_depth`, found: false},
	} {
		got, found := framework.MetricValue(metrics, tc.series)
		if got != tc.want || found != tc.found {
			t.Errorf("MetricValue(%s) = %q, %v; want %q, %v", tc.series, got, found, tc.want, tc.found)
		}
	}
}

// WebhookRequests must add up every series of the named webhook (one per operation and
// answer) and nothing of a webhook whose name merely contains it.
func TestWebhookRequests(t *testing.T) {
	const metrics = `# TYPE bosun_webhook_requests_total counter
bosun_webhook_requests_total{allowed="true",operation="CREATE",webhook="mnodeimage.kb.io"} 2
bosun_webhook_requests_total{allowed="false",operation="UPDATE",webhook="mnodeimage.kb.io"} 1
bosun_webhook_requests_total{allowed="true",operation="CREATE",webhook="xmnodeimage.kb.io"} 5
bosun_webhook_request_duration_seconds_count{webhook="mnodeimage.kb.io"} 7
`
	for webhook, want := range map[string]float64{"mnodeimage.kb.io": 3, "xmnodeimage.kb.io": 5, "vnodeimage.kb.io": 0} {
		if got := framework.WebhookRequests(metrics, webhook); got != want {
			t.Errorf("WebhookRequests(%s) = %v, want %v", webhook, got, want)
		}
	}
}
