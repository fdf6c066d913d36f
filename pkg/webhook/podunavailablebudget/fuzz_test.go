package podunavailablebudget

import (
	"testing"

	policylisters "github.com/bosun-dev/client-go/listers/policy/v1beta1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/featuregate"

	"github.com/bosun-dev/bosun/pkg/webhook"
	"github.com/bosun-dev/bosun/pkg/webhook/webhooktest"
)

// FuzzPodUnavailableBudgetWebhooks sends AdmissionReview bodies to the budget's webhooks
// through the webhook server (see webhooktest.AdmissionFuzzer for what it checks), over a
// cache holding the sample budget for new ones to conflict with.
func FuzzPodUnavailableBudgetWebhooks(f *testing.F) {
	budgets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := budgets.Add(webhooktest.SampleBudget()); err != nil {
		f.Fatal(err)
	}
	fuzzer := webhooktest.NewAdmissionFuzzer(f, func(gates featuregate.FeatureGate) []webhook.Registration {
		return Registrations(policylisters.NewPodUnavailableBudgetLister(budgets), gates)
	})
	fuzzer.Seed(f, webhooktest.SampleObjectsByKind(f))
	f.Fuzz(fuzzer.Fuzz)
}
