package cloneset

import (
	"testing"

	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/featuregate"

	"github.com/bosun-dev/bosun/pkg/webhook"
	"github.com/bosun-dev/bosun/pkg/webhook/webhooktest"
)

// FuzzCloneSetWebhooks sends AdmissionReview bodies to the CloneSet's webhooks through the
// webhook server (see webhooktest.AdmissionFuzzer for what it checks). The pods that
// podsToDelete may name are looked up in a fake cluster holding the sample pod.
func FuzzCloneSetWebhooks(f *testing.F) {
	pods := fake.NewClientset(webhooktest.SamplePod()).CoreV1()
	fuzzer := webhooktest.NewAdmissionFuzzer(f, func(gates featuregate.FeatureGate) []webhook.Registration {
		return Registrations(pods, gates)
	})
	fuzzer.Seed(f, webhooktest.SampleObjectsByKind(f))
	f.Fuzz(fuzzer.Fuzz)
}
