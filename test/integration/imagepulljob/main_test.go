// Package imagepulljob runs bosun's ImagePullJob (apps.kruise.io/v1alpha1) as an operator
// runs it: the real bosun-controller-manager binary with the imagepulljob and nodeimage
// controllers and the admission webhooks it registers itself, against a real etcd and
// kube-apiserver serving bosun's CRDs. One test per acceptance scenario of the job: fan-out
// under parallelism with completion and time to live, selectors, the deadline, pull
// secrets, and a tag shared by two jobs.
//
// No kubelet or node agent runs. The tests create Nodes and report them Ready, the
// manager's NodeImage controller creates their NodeImages, and a fake agent inside the test
// plays every node's bosun-daemon by writing NodeImage tag statuses (Pulling, then
// Succeeded when the test lets the pulls finish). That the real agent passes a job's copied
// credentials to the runtime's PullImage is the end-to-end test's concern. Every test uses
// its own namespace, Nodes and manager, and removes them when it ends.
package imagepulljob

import (
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{BosunCRDs: true})
}
