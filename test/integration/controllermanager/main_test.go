// Package controllermanager runs the bosun-controller-manager binary as a process against a
// real kube-apiserver, as an operator would: flag errors, leader election on the Lease,
// health and metrics endpoints, standby and takeover, and shutdown.
package controllermanager

import (
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{AuditPolicy: framework.MetadataAuditPolicy})
}
