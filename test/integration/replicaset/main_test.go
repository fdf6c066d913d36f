// Package replicaset runs bosun's ReplicaSet controller (the real bosun-controller-manager
// binary, --controllers=replicaset) against a real etcd and kube-apiserver, one test per
// acceptance scenario of the ReplicaSet controller. The tests play
// the kubelet's part (pod status) and the quota controller's part (ResourceQuota status)
// themselves, and read the API server's audit log to count the requests the controller
// sent.
package replicaset

import (
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{AuditPolicy: framework.MetadataAuditPolicy})
}
