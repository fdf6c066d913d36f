package framework_test

import (
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// The tests of the shared control plane also check the static users and auditing.
func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{
		Users:       []framework.User{{Name: "viewer", Groups: []string{"viewers"}}},
		AuditPolicy: framework.MetadataAuditPolicy,
	})
}
