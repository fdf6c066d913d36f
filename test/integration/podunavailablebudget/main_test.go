// Package podunavailablebudget runs bosun's PodUnavailableBudget (policy.kruise.io/v1alpha1)
// protection as an operator runs it: the real bosun-controller-manager binary with
// --controllers=podunavailablebudget-controller, the admission webhooks it registers itself
// (PUB validation, pod tagging, pod DELETE/UPDATE and eviction checks), a real etcd and
// kube-apiserver serving bosun's CRDs, and the real kubectl. One test per acceptance scenario
// of the budget, one per behaviour bosun adds to OpenKruise's (reconciling budgets that
// matched no pod when created, DaemonSet-sized budgets, owner chains, retryable eviction
// denials, protecting NotReady pods), `kubectl drain` against a budget, an eviction storm
// through two manager replicas behind a load balancer, and the garbage collector deleting a
// Deployment's pods under a budget.
//
// No kubelet, scheduler, ReplicaSet controller or garbage collector runs unless a test
// starts one: the tests create pods themselves (owned by a ReplicaSet no controller acts on, so that the budget has
// a replica count and nothing replaces a deleted pod behind the test's back), bind them to
// Nodes they create, and write pod status as a kubelet would. Every test uses its own
// namespace and its own manager.
//
// Two scenarios wait for the 10 s and 20 s expiries of the budget's records; the whole
// package takes about a minute and a half on an idle 2-core machine.
package podunavailablebudget

import (
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{BosunCRDs: true, AuditPolicy: framework.MetadataAuditPolicy})
}
