// Package garbagecollector checks the garbage collector ("garbage-collector-controller", alias
// "garbagecollector") against a real etcd and kube-apiserver: one test per acceptance scenario
// of the garbage collector's specification, named after upstream's integration and e2e tests
// where there is one (TestCascadingDeletion, TestOrphaning, TestCrossNamespaceReferences, …).
//
// # Which collector is under test
//
// The collector runs as a real process, started by startCollector:
//
//	BOSUN_GC_UNDER_TEST unset or "bosun"  bosun-controller-manager --controllers=garbagecollector
//	                                      (built from this checkout)
//	BOSUN_GC_UNDER_TEST=upstream          upstream kube-controller-manager --controllers=garbagecollector
//	                                      (from _output/tools/bin, see make test-servers)
//	BOSUN_GC_UNDER_TEST=upstream-strict   upstream, without skipping the checks of bosun's
//	                                      improvements (they are expected to fail)
//
// Upstream's collector is the reference: every test passes against it, except the checks of
// behaviour where bosun deliberately goes beyond upstream, which skip themselves under
// "upstream" with the reason (see skipUnderUpstream). The Deployment test also runs bosun's
// ReplicaSet and Deployment controllers: in the same bosun-controller-manager as the collector
// when bosun's collector is under test, in a bosun-controller-manager of their own beside
// upstream's otherwise.
//
// Each test starts its own collector and stops it when it ends, on the package's shared
// control plane (with an audit log, and the Widget CRD of testdata/crds) and in a namespace
// of its own, unless a scenario needs servers of its own (a broken conversion webhook, the
// watch cache off). The tests see what a user sees: objects through the API, the collector's
// requests in the audit log (by User-Agent), its Events, and its dependency graph through
// GET /debug/controllers/garbage-collector-controller/graph, which both managers serve. Where
// a scenario needs the collector to see a slow or inconsistent API server, the collector talks
// to the API server through a reverse proxy run by the test (apiProxy) that delays or rewrites
// the watch events of one resource.
//
// There is no kubelet and no namespace controller: pods are never scheduled (so the API server
// deletes them at once unless a finalizer holds them), and each test removes what it created
// when it ends, after its collector has stopped, so that later collectors do not work on it.
package garbagecollector

import (
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{
		// The audit log tells which requests the collector sent.
		AuditPolicy: framework.MetadataAuditPolicy,
		CRDDirs:     []string{"testdata/crds"},
	})
}
