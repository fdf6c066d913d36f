// Package nodeimage runs bosun's NodeImages (apps.kruise.io/v1alpha1) as an operator runs
// them: the real bosun-controller-manager binary with --controllers=nodeimage-controller and
// the admission webhooks it registers itself, a real etcd and kube-apiserver serving
// bosun's CRDs, and — for the tests that need a node agent — the real bosun-daemon talking
// CRI v1 to the fake runtime of pkg/daemon/cri/crifake over a unix socket.
//
// No kubelet runs: the tests create Nodes themselves and write their Ready condition as a
// kubelet would. Nodes are cluster scoped and every manager watches all of them, so each
// test names its Nodes after its namespace and deletes them, and their NodeImages, when it
// ends.
package nodeimage

import (
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{BosunCRDs: true})
}
