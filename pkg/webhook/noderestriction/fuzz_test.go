package noderestriction

import (
	"slices"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/component-base/featuregate"

	"github.com/bosun-dev/bosun/pkg/webhook"
	"github.com/bosun-dev/bosun/pkg/webhook/webhooktest"
)

// FuzzNodeRestrictionWebhooks sends AdmissionReview bodies to the node restriction
// webhooks through the webhook server (see webhooktest.AdmissionFuzzer for what it checks).
// Besides the shared seeds, written by a user no webhook restricts, it is seeded with the
// writes of node agents of every kind of identity, on their node and on another, so that
// the fuzzer starts from requests the webhooks judge.
func FuzzNodeRestrictionWebhooks(f *testing.F) {
	fuzzer := webhooktest.NewAdmissionFuzzer(f, func(featuregate.FeatureGate) []webhook.Registration {
		return slices.Concat(NodeImageRegistrations(ids), ContainerRecreateRequestRegistrations(ids))
	})
	fuzzer.Seed(f, webhooktest.SampleObjectsByKind(f))
	for i, user := range []authenticationv1.UserInfo{agentA, agentNoName, podSAOnA, unboundSA} {
		for _, req := range []*admissionv1.AdmissionRequest{
			nodeImageRequest(user, admissionv1.Update, "status", "node-a"),
			nodeImageRequest(user, admissionv1.Update, "status", "node-b"),
			nodeImageRequest(user, admissionv1.Delete, "", "node-a"),
		} {
			f.Add(i%2 == 1, NodeImagePath, reviewOf(f, req))
		}
		for _, req := range []*admissionv1.AdmissionRequest{
			crrRequest(user, admissionv1.Update, "status", "node-a", "node-a"),
			crrRequest(user, admissionv1.Update, "status", "node-b", "node-a"),
			crrRequest(user, admissionv1.Create, "", "", "node-a"),
		} {
			f.Add(i%2 == 0, ContainerRecreateRequestPath, reviewOf(f, req))
		}
	}
	f.Fuzz(fuzzer.Fuzz)
}

// reviewOf is the AdmissionReview body of req, under the UID the seeds share.
func reviewOf(f *testing.F, req *admissionv1.AdmissionRequest) []byte {
	req.UID = "seed"
	return webhooktest.ReviewBody(f, req)
}
