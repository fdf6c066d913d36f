// Package cloneset runs the admission of apps.kruise.io CloneSets — the real
// bosun-controller-manager binary serving its webhooks, the real kube-apiserver calling
// them — in both versions: defaults, every refusal and its code, the live check of
// podsToDelete, the InPlaceOnly update rule, stale carrier annotations and reserved
// annotations. The CloneSet controller has not landed yet, so no test expects pods.
//
// The CloneSet CRD is not shipped before its controller: the tests install the one
// hack/update-crds.sh renders for them (test/integration/testdata/unshipped-crds) beside
// bosun's shipped CRDs. The API server converts CloneSets between versions through the
// framework's conversion server, which serves the manager's /convert handler.
package cloneset

import (
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// unshippedCRDs holds the CRDs of kinds whose controller has not landed yet.
const unshippedCRDs = "../testdata/unshipped-crds"

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{BosunCRDs: true, CRDDirs: []string{unshippedCRDs}})
}
