// Package toolkit tests the shared controller toolkit (pkg/controller/...) against a real
// kube-apiserver, for the behaviour that only the API server can show and fakes cannot:
// how strategic merge and JSON merge patches combine ownerReferences, which preconditions
// (metadata.uid, resourceVersion) and validations reject an adoption, which status codes
// and causes come back, that events really reach the API, and what a real informer
// indexes. No controller runs; the tests drive the toolkit directly and check the
// resulting API state.
package toolkit

import (
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{BosunCRDs: true})
}
