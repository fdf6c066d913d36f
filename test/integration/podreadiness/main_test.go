// Package podreadiness runs pod-readiness-controller and its mutation of the mutating pod
// webhook — the real bosun-controller-manager binary, --controllers=pod-readiness-controller
// with its webhook server — against a real etcd and kube-apiserver: a pod created with an
// apps.kruise.io controller gets the readiness gate KruisePodReady from the webhook and
// then the condition KruisePodReady=True from the controller; a pod of another controller
// gets neither.
//
// No kubelet runs: the pods stay Pending and unscheduled, which the controller does not
// care about.
package podreadiness

import (
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{BosunCRDs: true, AuditPolicy: framework.MetadataAuditPolicy})
}
