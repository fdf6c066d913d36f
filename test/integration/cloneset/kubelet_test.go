package cloneset

import (
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// newKubelet returns the framework's stand-in for the scheduler and the kubelets
// (framework.Kubelet) for the test's namespace, not started yet: it binds each pod to a node
// of its own, "node-<pod>", unless told another.
func (e *testEnv) newKubelet() *framework.Kubelet {
	return framework.NewKubelet(e.Env, framework.KubeletOptions{})
}

// startKubelet starts a stand-in with no pod singled out.
func (e *testEnv) startKubelet(t *testing.T) *framework.Kubelet {
	t.Helper()
	k := e.newKubelet()
	k.Start(t)
	return k
}
