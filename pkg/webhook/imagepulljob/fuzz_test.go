package imagepulljob

import (
	"testing"

	"github.com/bosun-dev/bosun/pkg/webhook/webhooktest"
)

// FuzzImagePullJobWebhooks sends AdmissionReview bodies to the ImagePullJob's webhooks through the
// webhook server (see webhooktest.AdmissionFuzzer for what it checks).
func FuzzImagePullJobWebhooks(f *testing.F) {
	fuzzer := webhooktest.NewAdmissionFuzzer(f, Registrations)
	fuzzer.Seed(f, webhooktest.SampleObjectsByKind(f))
	f.Fuzz(fuzzer.Fuzz)
}
