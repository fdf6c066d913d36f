// Package handover checks the handover an operator does between upstream
// kube-controller-manager and bosun-controller-manager on one cluster: one manager's
// ReplicaSet and Deployment controllers are stopped, the other's started, both real
// binaries against a real etcd and kube-apiserver.
//
// A handover of settled workloads must cause no churn: the incoming manager adopts every
// ReplicaSet and pod as it is, writes nothing (checked in the audit log by its User-Agent
// and by unchanged resourceVersions) and keeps every revision. A handover in the middle of
// a rolling update must finish the rollout with the ReplicaSet the first manager created,
// without a third one and without breaking the rolling-update limits.
//
// There is no kubelet: the tests mark pods Running and Ready (framework.StartPodReadier).
// bosun has no garbage collector of its own yet, so whenever bosun runs the workload
// controllers, upstream runs its garbage collector beside it, as in a real cluster.
package handover

import (
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestMain(m *testing.M) {
	// The audit log tells which manager made which request.
	framework.Main(m, framework.Options{AuditPolicy: framework.MetadataAuditPolicy})
}
