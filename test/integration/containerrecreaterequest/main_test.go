// Package containerrecreaterequest runs bosun's ContainerRecreateRequest (apps.kruise.io)
// as an operator runs it: the real bosun-controller-manager binary with
// --controllers=containerrecreaterequest and its admission webhook, the real bosun-daemon
// binary as the node agent talking CRI v1 to a fake runtime served by the test process
// (crifake), a real etcd and kube-apiserver serving bosun's CRDs.
//
// The tests write and read requests in v1alpha1, as its users do, while the controllers
// work on v1beta1: they also check the v1beta1 status fields the controllers write, and
// that v1alpha1 reads show them as the annotations of old.
//
// No kubelet or scheduler runs: the tests create Nodes and pods themselves, bind the pods
// and write their status (phase, container statuses with containerd:// IDs) as a kubelet
// would. Every test uses its own namespace, its own manager and, when it needs one, its own
// agent for its own Node.
//
// The manager's response timeout (a request no agent picked up is completed after 60 s) is
// waited for in full by one test, so the package takes a bit more than a minute.
package containerrecreaterequest

import (
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{BosunCRDs: true})
}
