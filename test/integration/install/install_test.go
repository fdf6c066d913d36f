// Package install tests the in-cluster install: the kustomize base config/default and the Helm
// chart config/helm/bosun generated from it render the same objects, the chart's values land
// where they should, and a real kube-apiserver accepts every object of both.
package install

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// object is one rendered manifest.
type object map[string]any

func (o object) key() string {
	meta, _ := o["metadata"].(map[string]any)
	namespace, _ := meta["namespace"].(string) // none for cluster-scoped kinds
	return fmt.Sprintf("%s %s/%s", o["kind"], namespace, meta["name"])
}

func (o object) path(keys ...any) any {
	var v any = map[string]any(o)
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// decode splits a multi-document YAML stream into objects by key.
func decode(t *testing.T, data []byte) map[string]object {
	t.Helper()
	objects := map[string]object{}
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		if len(bytes.TrimSpace(bytes.TrimPrefix(doc, []byte("---")))) == 0 {
			continue
		}
		var o object
		if err := yaml.Unmarshal(doc, &o); err != nil {
			t.Fatalf("decoding a rendered document: %v\n%s", err, doc)
		}
		if o == nil {
			continue // a document of comments only
		}
		if _, dup := objects[o.key()]; dup {
			t.Fatalf("%s rendered twice", o.key())
		}
		objects[o.key()] = o
	}
	return objects
}

func tool(t *testing.T, name string) string {
	t.Helper()
	framework.RequireIntegration(t)
	path, err := framework.ToolPath(name)
	if err != nil {
		t.Fatalf("%v (`make test-servers` builds it)", err)
	}
	return path
}

func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tool(t, name), args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out
}

func kustomizeBase(t *testing.T) []byte { return run(t, "kubectl", "kustomize", "config/default") }

func helmTemplate(t *testing.T, sets ...string) []byte {
	args := []string{"template", "bosun", "config/helm/bosun"}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	return run(t, "helm", args...)
}

func TestChartRendersTheBase(t *testing.T) {
	base := decode(t, kustomizeBase(t))
	chart := decode(t, helmTemplate(t))
	if diff := cmp.Diff(base, chart); diff != "" {
		t.Errorf("helm template with the default values differs from kubectl kustomize config/default (-base +chart):\n%s", diff)
	}
	// The pieces the install is made of, so that an empty render cannot pass.
	for _, key := range []string{
		"Namespace /bosun-system",
		"Deployment bosun-system/bosun-controller-manager",
		"Service bosun-system/bosun-webhook",
		"PodDisruptionBudget bosun-system/bosun-controller-manager",
		"DaemonSet bosun-system/bosun-daemon",
		"ClusterRoleBinding /bosun:controller-manager",
		"CustomResourceDefinition /clonesets.apps.kruise.io",
	} {
		if _, ok := base[key]; !ok {
			t.Errorf("the base renders no %s", key)
		}
	}
}

func TestChartValues(t *testing.T) {
	chart := decode(t, helmTemplate(t,
		"installation.namespace=kruise-compat",
		"installation.createNamespace=false",
		"featureGates=CloneSetShortHash=true",
		"manager.replicas=3",
		"manager.image.repository=registry.local/bosun-controller-manager",
		"manager.image.tag=v9",
		"manager.controllers=*\\,-cloneset",
		"manager.webhook.port=9443",
		"manager.log.level=4",
		"manager.nodeSelector.node-role\\.kubernetes\\.io/control-plane=",
		"manager.resources=null",
		"daemon.tolerations=null",
		"daemon.nodeSelector.pool=edge",
		"daemon.socketLocation=/var/run",
		"crds.managed=false",
	))
	for key, o := range chart {
		switch {
		case o["kind"] == "CustomResourceDefinition":
			t.Errorf("%s rendered with crds.managed=false", key)
		case key == "Namespace /kruise-compat" || key == "Namespace /bosun-system":
			t.Errorf("%s rendered with installation.createNamespace=false", key)
		case strings.Contains(key, "bosun-system"):
			t.Errorf("%s still in bosun-system", key)
		}
	}
	manager, ok := chart["Deployment kruise-compat/bosun-controller-manager"]
	if !ok {
		t.Fatalf("no manager Deployment in kruise-compat; rendered %v", keys(chart))
	}
	container := manager.path("spec", "template", "spec", "containers", 0).(map[string]any)
	wantArgs := []any{
		"--controllers=*,-cloneset",
		"--leader-elect-resource-namespace=kruise-compat",
		"--webhook-port=9443",
		"--webhook-service=kruise-compat/bosun-webhook",
		"--webhook-secret=kruise-compat/bosun-webhook-certs",
		"--daemon-service-accounts=kruise-compat/bosun-daemon",
		"--v=4",
		"--feature-gates=CloneSetShortHash=true",
	}
	if diff := cmp.Diff(wantArgs, container["args"]); diff != "" {
		t.Errorf("manager args (-want +got):\n%s", diff)
	}
	checks := map[string][2]any{
		"replicas":      {manager.path("spec", "replicas"), float64(3)},
		"image":         {container["image"], "registry.local/bosun-controller-manager:v9"},
		"webhook port":  {manager.path("spec", "template", "spec", "containers", 0, "ports", 0, "containerPort"), float64(9443)},
		"node selector": {manager.path("spec", "template", "spec", "nodeSelector"), map[string]any{"node-role.kubernetes.io/control-plane": ""}},
		"no resources":  {container["resources"], nil},
	}
	daemon := chart["DaemonSet kruise-compat/bosun-daemon"]
	checks["daemon node selector"] = [2]any{daemon.path("spec", "template", "spec", "nodeSelector"), map[string]any{"pool": "edge"}}
	checks["daemon tolerations"] = [2]any{daemon.path("spec", "template", "spec", "tolerations"), nil}
	checks["daemon socket location"] = [2]any{daemon.path("spec", "template", "spec", "volumes", 0, "hostPath", "path"), "/var/run"}
	checks["daemon feature gates"] = [2]any{daemon.path("spec", "template", "spec", "containers", 0, "args", 3), nil}
	checks["manager identity"] = [2]any{chart["ClusterRoleBinding /bosun:controller-manager"].path("subjects", 0, "namespace"), "kruise-compat"}
	checks["daemon identity"] = [2]any{chart["RoleBinding kruise-daemon-config/bosun:daemon:pull-secrets"].path("subjects", 0, "namespace"), "kruise-compat"}
	for name, c := range checks {
		if diff := cmp.Diff(c[1], c[0]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

// TestAPIServerAcceptsTheInstall applies both renders to a real kube-apiserver, as an operator
// would (server-side, the CRDs being too large for client-side apply), and applies the chart's
// again over the base's: the same objects, so nothing may change.
func TestAPIServerAcceptsTheInstall(t *testing.T) {
	cp := framework.StartTestControlPlane(t, framework.Options{})
	dir := t.TempDir()
	apply := func(name string, manifests []byte) string {
		file := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(file, manifests, 0o644); err != nil {
			t.Fatal(err)
		}
		return string(run(t, "kubectl", "--kubeconfig", cp.KubeconfigPath(), "apply", "--server-side", "--field-manager=bosun-install-test", "-f", file))
	}
	applied := apply("base", kustomizeBase(t))
	for _, want := range []string{"deployment.apps/bosun-controller-manager serverside-applied", "daemonset.apps/bosun-daemon serverside-applied", "poddisruptionbudget.policy/bosun-controller-manager serverside-applied"} {
		if !strings.Contains(applied, want) {
			t.Errorf("kubectl apply of the base did not report %q:\n%s", want, applied)
		}
	}
	// Everything the chart renders is already there, field for field: the generations of the
	// workloads stay 1.
	apply("chart", helmTemplate(t))
	client := cp.Clientset(t)
	ctx := context.Background()
	deployment, err := client.AppsV1().Deployments("bosun-system").Get(ctx, "bosun-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	daemonSet, err := client.AppsV1().DaemonSets("bosun-system").Get(ctx, "bosun-daemon", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if deployment.Generation != 1 || daemonSet.Generation != 1 {
		t.Errorf("applying the chart over the base changed the workloads: Deployment generation %d, DaemonSet generation %d, want 1 and 1", deployment.Generation, daemonSet.Generation)
	}
}

func keys(objects map[string]object) []string {
	out := make([]string, 0, len(objects))
	for k := range objects {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
