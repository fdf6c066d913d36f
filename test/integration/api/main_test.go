// Package api tests bosun's API against a real kube-apiserver: the CRDs install and their
// schemas accept OpenKruise objects and reject bad ones, and the generated client library
// (clientset, listers, informers, apply configurations) works on every kind, including from
// a module outside this repository.
package api

import (
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{BosunCRDs: true})
}
