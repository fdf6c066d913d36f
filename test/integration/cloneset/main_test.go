// Package cloneset runs apps.kruise.io CloneSets on the real kube-apiserver with the real
// bosun-controller-manager binary: its admission in both versions (defaults, every refusal
// and its code, the live check of podsToDelete, the InPlaceOnly update rule, stale carrier
// annotations and reserved annotations) and its controller. The API server converts
// CloneSets between versions through the framework's conversion server, which serves the
// manager's /convert handler.
package cloneset

import (
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{BosunCRDs: true})
}
