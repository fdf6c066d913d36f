// Package deployment runs bosun's Deployment controller, with bosun's ReplicaSet controller
// alongside, as the real bosun-controller-manager binary against a real etcd and
// kube-apiserver, and checks its acceptance scenarios: rollouts and their surge and
// availability limits, Recreate, pause and resume, proportional scaling, hash collisions, adoption and
// orphaning, cleanup, status and conditions, and the real kubectl's rollout commands.
//
// There is no kubelet: the tests play its part by marking pods Running and Ready
// (framework.StartPodReadier, framework.SetPodRunning), and keep deleted pods
// terminating with a test finalizer when a scenario needs terminating pods.
package deployment

import (
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{})
}
