// Package webhook runs bosun-controller-manager's admission webhook server as an operator
// runs it: the real binary, the webhook configurations it writes itself into a real
// kube-apiserver, and the API server calling it. The tests cover what no single
// resource's webhooks do: bodies the API server would never send, certificates rotated
// under a running server, a replica that does not lead serving admission, admission
// answering right while one of two replicas behind a balancer is SIGKILLed, and what fails
// closed and what fails open once no replica answers.
package webhook

import (
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{BosunCRDs: true})
}
