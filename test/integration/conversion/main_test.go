// Package conversion runs bosun's two API versions end to end, as an operator upgrading a
// cluster meets them: the real bosun-controller-manager writing the conversion webhook's
// clientConfig and CA into the CRDs (from its Secret, from --webhook-cert-dir and again when
// that CA rotates, in URL and Service mode, never into a CRD that is not bosun's) and the
// real kube-apiserver converting through it; what still works while no conversion webhook
// answers, before and after storage migration; the storage version migrator rewriting
// objects stored in v1alpha1 by an earlier release, checked in etcd itself; and admission
// answering both versions alike.
//
// Most tests share one control plane with bosun's CRDs installed; the ones that start from
// objects stored in v1alpha1 start a control plane of their own.
package conversion

import (
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{BosunCRDs: true})
}
