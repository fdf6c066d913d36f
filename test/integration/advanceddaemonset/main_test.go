// Package advanceddaemonset runs bosun's Advanced DaemonSet controller (apps.kruise.io
// DaemonSet, which it works on in v1beta1; the tests write it mostly in v1alpha1, as users
// of OpenKruise's YAML do, and in v1beta1) and its admission webhooks — the real
// bosun-controller-manager binary, --controllers=advanced-daemonset-controller with its
// webhook server — against a real etcd
// and kube-apiserver that serve bosun's CRDs. One test per acceptance scenario of the
// controller, plus the behaviour bosun adds to OpenKruise's: the strict maxUnavailable
// feature gate, the Progressing condition and 422 answers to invalid creates.
//
// No kubelet and no scheduler run: the tests create Node objects themselves, find a pod's
// node through its required node-affinity term (metadata.name In [<node>]), and write pod
// status (Running, Ready, container image IDs) as a kubelet would. They read the API
// server's audit log to see what the controller sent and when.
package advanceddaemonset

import (
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{BosunCRDs: true, AuditPolicy: framework.MetadataAuditPolicy})
}
