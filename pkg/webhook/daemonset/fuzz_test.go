package daemonset

import (
	"testing"

	"k8s.io/component-base/featuregate"

	"github.com/bosun-dev/bosun/pkg/webhook"
	"github.com/bosun-dev/bosun/pkg/webhook/webhooktest"
)

// FuzzDaemonSetWebhooks sends AdmissionReview bodies to the DaemonSet's webhooks through
// the webhook server (see webhooktest.AdmissionFuzzer for what it checks).
func FuzzDaemonSetWebhooks(f *testing.F) {
	fuzzer := webhooktest.NewAdmissionFuzzer(f, func(featuregate.FeatureGate) []webhook.Registration { return Registrations() })
	fuzzer.Seed(f, webhooktest.SampleObjectsByKind(f))
	f.Fuzz(fuzzer.Fuzz)
}
