package framework

import (
	"os/exec"
	"testing"
)

// Kubectl runs the real kubectl (see ToolPath) as the admin user, in the test's namespace,
// and returns its combined output; the error is kubectl's exit, if it failed.
func (e *Env) Kubectl(t testing.TB, args ...string) (string, error) {
	t.Helper()
	path, err := ToolPath("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	all := append([]string{"--kubeconfig=" + e.CP.KubeconfigPath(), "--namespace=" + e.Namespace}, args...)
	out, err := exec.CommandContext(e.Ctx, path, all...).CombinedOutput()
	return string(out), err
}
