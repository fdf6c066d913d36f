// Package kubectlplugin tests `kubectl bosun rollout` the way users run it: the real kubectl
// finds the kubectl-bosun binary on the PATH, against a real kube-apiserver, with bosun's
// controllers rolling the workloads out and the tests playing the kubelet's part.
package kubectlplugin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{BosunCRDs: true})
}

// plugin runs kubectl with kubectl-bosun on its PATH, in the test's namespace.
type plugin struct {
	t          *testing.T
	kubectl    string
	kubeconfig string
	namespace  string
	path       string
}

func newPlugin(t *testing.T, e *framework.Env) *plugin {
	t.Helper()
	kubectl, err := framework.ToolPath("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(framework.BuildBosunBinary(t, "kubectl-bosun"), filepath.Join(dir, "kubectl-bosun")); err != nil {
		t.Fatal(err)
	}
	return &plugin{t: t, kubectl: kubectl, kubeconfig: e.CP.KubeconfigPath(), namespace: e.Namespace, path: dir + ":" + os.Getenv("PATH")}
}

// run runs `kubectl bosun rollout <args>` and returns its output and error. kubectl takes no
// flags before a plugin's name: the connection flags follow, and the plugin reads them.
func (p *plugin) run(args ...string) (string, error) {
	cmd := exec.Command(p.kubectl, append(append([]string{"bosun", "rollout"}, args...), "--kubeconfig="+p.kubeconfig, "--namespace="+p.namespace)...)
	cmd.Env = append(os.Environ(), "PATH="+p.path)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// ok runs the command and fails the test unless it succeeds printing every one of wants.
func (p *plugin) ok(args []string, wants ...string) string {
	p.t.Helper()
	out, err := p.run(args...)
	if err != nil {
		p.t.Fatalf("kubectl bosun rollout %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	for _, want := range wants {
		if !strings.Contains(out, want) {
			p.t.Errorf("kubectl bosun rollout %s printed\n%s\nwant it to contain %q", strings.Join(args, " "), out, want)
		}
	}
	return out
}

// fails runs the command and fails the test unless it fails saying want.
func (p *plugin) fails(args []string, want string) {
	p.t.Helper()
	out, err := p.run(args...)
	if err == nil || !strings.Contains(out, want) {
		p.t.Errorf("kubectl bosun rollout %s: error %v, output\n%s\nwant a failure saying %q", strings.Join(args, " "), err, out, want)
	}
}

func webTemplate(labels map[string]string, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
	}
}

func TestCloneSetRollout(t *testing.T) {
	e := framework.NewTestEnv(t, framework.SharedControlPlane(t), framework.EnvOptions{
		RemoveWebhookConfigurations: true,
		Remove:                      []string{"clonesets.apps.kruise.io", "pods", "controllerrevisions.apps"},
	})
	// With its webhooks, which give the CloneSet the update strategy's defaults.
	framework.StartBosunControllerManager(t, e.CP, framework.ControllerManagerOptions{Controllers: "cloneset", Webhooks: true})
	// Binds the pods and reports their containers running the template's images, ready.
	framework.NewKubelet(e, framework.KubeletOptions{}).Start(t)
	p := newPlugin(t, e)
	clonesets := e.Bosun.AppsV1beta1().CloneSets(e.Namespace)

	labels := map[string]string{"app": "web"}
	_, err := clonesets.Create(e.Ctx, &appsv1beta1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1beta1.CloneSetSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: webTemplate(labels, "web:v1"),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.ok([]string{"status", "cloneset/web", "--timeout=2m"}, `cloneset "web" successfully rolled out`)

	setImage := func(image string) {
		t.Helper()
		patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":%q}]}}}}`, image)
		if _, err := clonesets.Patch(e.Ctx, "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	image := func() string {
		t.Helper()
		cs, err := clonesets.Get(e.Ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cs.Spec.Template.Spec.Containers[0].Image
	}

	// A new template rolls out; status follows it to the end.
	setImage("web:v2")
	p.ok([]string{"status", "clone", "web", "--timeout=2m"}, `cloneset "web" successfully rolled out`)
	out := p.ok([]string{"history", "cloneset/web"}, "cloneset.apps.kruise.io/web", "REVISION  CHANGE-CAUSE")
	if !strings.Contains(out, "1         <none>") || !strings.Contains(out, "2         <none>") {
		t.Errorf("history lists revisions 1 and 2:\n%s", out)
	}
	p.ok([]string{"history", "cloneset/web", "--revision=1"}, "cloneset.apps.kruise.io/web with revision #1", "image: web:v1")

	// Undo goes back to the previous template, and that rollout finishes too.
	p.ok([]string{"undo", "cloneset/web"}, "cloneset.apps.kruise.io/web rolled back")
	if got := image(); got != "web:v1" {
		t.Errorf("after undo the template runs %s, want web:v1", got)
	}
	p.ok([]string{"status", "cloneset/web", "--timeout=2m"}, `cloneset "web" successfully rolled out`)
	p.ok([]string{"undo", "cloneset/web", "--to-revision=2"}, "cloneset.apps.kruise.io/web rolled back")
	if got := image(); got != "web:v2" {
		t.Errorf("after undo --to-revision=2 the template runs %s, want web:v2", got)
	}
	p.fails([]string{"undo", "cloneset/web", "--to-revision=99"}, "unable to find specified revision 99 in history")

	// Paused: no pod is updated; status says so and does not end; restart refuses.
	p.ok([]string{"status", "cloneset/web", "--timeout=2m"}, `cloneset "web" successfully rolled out`)
	p.ok([]string{"pause", "cloneset/web"}, "cloneset.apps.kruise.io/web paused")
	p.fails([]string{"pause", "cloneset/web"}, `clonesets.apps.kruise.io "web" is already paused`)
	p.fails([]string{"restart", "cloneset/web"}, "can't restart paused")
	setImage("web:v3")
	p.fails([]string{"status", "cloneset/web", "--timeout=3s"}, "timed out waiting for the condition")
	p.ok([]string{"status", "cloneset/web", "--watch=false"}, "0 out of 3 new replicas have been updated", "the update is paused")

	p.ok([]string{"resume", "cloneset/web"}, "cloneset.apps.kruise.io/web resumed")
	p.fails([]string{"resume", "cloneset/web"}, `clonesets.apps.kruise.io "web" is not paused`)
	p.ok([]string{"status", "cloneset/web", "--timeout=2m"}, `cloneset "web" successfully rolled out`)

	// Restart stamps the template, which is a new revision to roll out.
	p.ok([]string{"restart", "cloneset/web", "-o", "name"}, "cloneset.apps.kruise.io/web")
	cs, err := clonesets.Get(e.Ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cs.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] == "" {
		t.Errorf("restart left no restartedAt annotation on the template: %v", cs.Spec.Template.Annotations)
	}
	p.ok([]string{"status", "cloneset/web", "--timeout=2m"}, `cloneset "web" successfully rolled out`)

	p.fails([]string{"status", "deployment/web"}, `unknown resource type "deployment"`)
	p.fails([]string{"status", "cloneset/absent"}, "not found")
}

func TestAdvancedDaemonSetRollout(t *testing.T) {
	e := framework.NewTestEnv(t, framework.SharedControlPlane(t), framework.EnvOptions{
		RemoveWebhookConfigurations: true,
		Remove:                      []string{"daemonsets.apps.kruise.io", "pods", "controllerrevisions.apps"},
		RemoveLabelled:              []string{"nodes"},
	})
	for _, suffix := range []string{"a", "b"} {
		e.CreateNode(t, e.NewNode(suffix, nil, time.Now()))
	}
	framework.StartBosunControllerManager(t, e.CP, framework.ControllerManagerOptions{Controllers: "advanceddaemonset", Webhooks: true})
	e.StartPodReadier(t, 2, nil)
	p := newPlugin(t, e)
	daemonsets := e.Bosun.AppsV1beta1().DaemonSets(e.Namespace)

	labels := map[string]string{"app": "agent"}
	ds := &appsv1beta1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1beta1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: webTemplate(labels, "agent:v1"),
		},
	}
	// Only the test's nodes: other tests' nodes may exist in the shared control plane.
	ds.Spec.Template.Spec.NodeSelector = map[string]string{framework.OwnerNamespaceLabel: e.Namespace}
	if _, err := daemonsets.Create(e.Ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.ok([]string{"status", "daemonset/agent", "--timeout=2m"}, `daemon set "agent" successfully rolled out`)

	// A partition keeps one pod on the old revision: the rollout is done when the other is
	// updated.
	patch := `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":1}},"template":{"spec":{"containers":[{"name":"web","image":"agent:v2"}]}}}}`
	if _, err := daemonsets.Patch(e.Ctx, "agent", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	p.ok([]string{"status", "ads/agent", "--timeout=2m"}, "partitioned roll out complete: 1 new pods have been updated")
	p.ok([]string{"history", "daemonset/agent"}, "daemonset.apps.kruise.io/agent", "1         <none>", "2         <none>")

	p.ok([]string{"pause", "daemonset/agent"}, "daemonset.apps.kruise.io/agent paused")
	p.ok([]string{"resume", "daemonset/agent"}, "daemonset.apps.kruise.io/agent resumed")
	p.ok([]string{"undo", "daemonset/agent"}, "daemonset.apps.kruise.io/agent rolled back")
	got, err := daemonsets.Get(e.Ctx, "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if image := got.Spec.Template.Spec.Containers[0].Image; image != "agent:v1" {
		t.Errorf("after undo the template runs %s, want agent:v1", image)
	}
	// Without the partition every pod goes to the template the undo restored.
	if _, err := daemonsets.Patch(e.Ctx, "agent", types.MergePatchType, []byte(`{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	p.ok([]string{"status", "daemonset/agent", "--timeout=2m"}, `daemon set "agent" successfully rolled out`)
}
