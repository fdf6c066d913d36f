package nodeimage

import (
	"testing"

	"github.com/bosun-dev/bosun/pkg/webhook/webhooktest"
)

// FuzzNodeImageWebhooks sends AdmissionReview bodies to the NodeImage's webhooks through the
// webhook server (see webhooktest.AdmissionFuzzer for what it checks).
func FuzzNodeImageWebhooks(f *testing.F) {
	fuzzer := webhooktest.NewAdmissionFuzzer(f, Registrations)
	fuzzer.Seed(f, webhooktest.SampleObjectsByKind(f))
	f.Fuzz(fuzzer.Fuzz)
}
