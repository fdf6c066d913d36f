// Package cloneset runs apps.kruise.io CloneSets on the real kube-apiserver with the real
// bosun-controller-manager binary: its admission in both versions (defaults, every refusal
// and its code, the live check of podsToDelete, the InPlaceOnly update rule, stale carrier
// annotations and reserved annotations) and its controller, one subtest of TestController
// per acceptance scenario that needs no node. The API server converts CloneSets between
// versions through the framework's conversion server, which serves the manager's /convert
// handler. There is no scheduler and no kubelet: a stand-in (framework.Kubelet, see kubelet_test.go) binds the
// pods and reports their status. The audit log shows the order of the controller's
// requests, and when the namespace of a test has settled. TestCloneSetSurvivesManagerKills
// kills the manager and kube-apiserver under a CloneSet, on servers of its own.
package cloneset

import (
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{BosunCRDs: true, AuditPolicy: framework.MetadataAuditPolicy})
}
