package imagelistpulljob

import (
	"testing"

	"github.com/bosun-dev/bosun/pkg/webhook/webhooktest"
)

// FuzzImageListPullJobWebhooks sends AdmissionReview bodies to the ImageListPullJob's webhooks through the
// webhook server (see webhooktest.AdmissionFuzzer for what it checks).
func FuzzImageListPullJobWebhooks(f *testing.F) {
	fuzzer := webhooktest.NewAdmissionFuzzer(f, Registrations)
	fuzzer.Seed(f, webhooktest.SampleObjectsByKind(f))
	f.Fuzz(fuzzer.Fuzz)
}
