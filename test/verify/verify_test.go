// Package verify checks that the repository's verify scripts catch what they exist to
// catch: each one is run on a scratch copy of the tree with its input changed and must
// fail. (`make verify` runs them on the real tree, where they must pass.)
package verify

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestVerifyScriptsFailOnStaleInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("copies the repository and runs code generation")
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}

	// failure is a verify script that must fail, and what its output must point at.
	type failure struct{ script, wantInOutput string }
	cases := []struct {
		name   string
		change func(t *testing.T, tree string)
		fails  []failure
	}{{
		name:   "a new API field without regenerated code and CRDs",
		change: addStatusField,
		fails: []failure{
			// The apply configurations gain a WithObservedNodes builder.
			{"hack/verify-codegen.sh", "client-go is stale"},
			{"hack/verify-crds.sh", "config/crd/bases is stale"},
		},
	}, {
		name: "a hand-edited generated file",
		change: func(t *testing.T, tree string) {
			appendTo(t, filepath.Join(tree, "staging/src/github.com/bosun-dev/api/apps/v1alpha1/zz_generated.deepcopy.go"), "\n// edited by hand\n")
		},
		fails: []failure{{"hack/verify-codegen.sh", "api is stale"}},
	}, {
		name: "a file removed from vendor/",
		change: func(t *testing.T, tree string) {
			if err := os.Remove(filepath.Join(tree, "vendor/k8s.io/klog/v2/klog.go")); err != nil {
				t.Fatal(err)
			}
		},
		fails: []failure{{"hack/verify-vendor.sh", "vendor is stale"}},
	}, {
		name: "a requirement nothing uses",
		change: func(t *testing.T, tree string) {
			appendTo(t, filepath.Join(tree, "go.mod"), "\nrequire github.com/google/btree v1.1.3\n")
		},
		fails: []failure{{"hack/verify-vendor.sh", "go.mod is stale"}},
	}, {
		name: "the in-cluster base edited without regenerating the chart",
		change: func(t *testing.T, tree string) {
			path := filepath.Join(tree, "config/default/manager.yaml")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			edited := strings.Replace(string(data), "  replicas: 2\n", "  replicas: 3\n", 1)
			if edited == string(data) {
				t.Fatal("config/default/manager.yaml has no `replicas: 2` to edit")
			}
			if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		fails: []failure{{"hack/verify-chart.sh", "config/helm/bosun is stale"}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tree := copyTree(t, root)
			tc.change(t, tree)
			for _, f := range tc.fails {
				cmd := exec.Command("bash", f.script)
				cmd.Dir = tree
				// Reuse the real checkout's built tools rather than building them again.
				cmd.Env = append(os.Environ(), "BOSUN_CACHE_DIR="+filepath.Join(root, "_output"))
				out, err := cmd.CombinedOutput()
				if err == nil {
					t.Errorf("%s passed on a stale tree:\n%s", f.script, out)
				} else if !strings.Contains(string(out), f.wantInOutput) {
					t.Errorf("%s failed without saying %q:\n%s", f.script, f.wantInOutput, out)
				}
			}
		})
	}
}

// addStatusField adds a field to the Advanced DaemonSet status, as a developer would when
// extending the API.
func addStatusField(t *testing.T, tree string) {
	t.Helper()
	path := filepath.Join(tree, "staging/src/github.com/bosun-dev/api/apps/v1alpha1/daemonset_types.go")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	anchor := []byte("type DaemonSetStatus struct {\n")
	if !bytes.Contains(data, anchor) {
		t.Fatalf("%s has no DaemonSetStatus struct to extend", path)
	}
	data = bytes.Replace(data, anchor, append(anchor, []byte("\t// ObservedNodes is a field added by the test.\n\tObservedNodes int32 `json:\"observedNodes,omitempty\"`\n")...), 1)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// copyTree copies the files git knows of (tracked, and new ones that are not ignored)
// into a fresh git repository, which is what the verify scripts expect to run in.
func copyTree(t *testing.T, root string) string {
	t.Helper()
	tree := t.TempDir()
	script := `git ls-files -z --cached --others --exclude-standard | tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$1"
cd "$1" && git init -q && git add -A`
	cmd := exec.Command("bash", "-c", script, "copy", tree)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("copying the repository: %v\n%s", err, out)
	}
	return tree
}
