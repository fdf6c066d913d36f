package api

import (
	"bytes"
	"context"
	_ "embed"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	bosunscheme "github.com/bosun-dev/client-go/clientset/versioned/scheme"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

//go:embed testdata/openkruise-objects.yaml
var openKruiseObjects []byte

// TestDiscoveryServesOpenKruiseResources checks what kubectl and clients learn from
// discovery: resource names, scope, short names, the status subresource and, for the
// CloneSet only, the scale subresource, exactly as OpenKruise serves them.
func TestDiscoveryServesOpenKruiseResources(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	disco := discovery.NewDiscoveryClientForConfigOrDie(cp.Config())

	type resource struct {
		namespaced bool
		shortNames []string
		// scale: kubectl scale and HorizontalPodAutoscalers work on it.
		scale bool
	}
	want := map[string]map[string]resource{
		"apps.kruise.io/v1alpha1": {
			"daemonsets":                {namespaced: true, shortNames: []string{"daemon", "ads"}},
			"clonesets":                 {namespaced: true, shortNames: []string{"clone"}, scale: true},
			"containerrecreaterequests": {namespaced: true, shortNames: []string{"crr"}},
			"nodeimages":                {namespaced: false},
			"imagepulljobs":             {namespaced: true},
		},
		"policy.kruise.io/v1alpha1": {
			"podunavailablebudgets": {namespaced: true, shortNames: []string{"pub"}},
		},
	}
	for gv, resources := range want {
		list, err := disco.ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Fatalf("discovery of %s: %v", gv, err)
		}
		served := map[string]metav1.APIResource{}
		for _, r := range list.APIResources {
			served[r.Name] = r
		}
		for name, w := range resources {
			r, ok := served[name]
			if !ok {
				t.Errorf("%s does not serve %s", gv, name)
				continue
			}
			if r.Namespaced != w.namespaced {
				t.Errorf("%s %s: namespaced = %v, want %v", gv, name, r.Namespaced, w.namespaced)
			}
			if !slices.Equal(sorted(r.ShortNames), sorted(w.shortNames)) {
				t.Errorf("%s %s: short names %v, want %v", gv, name, r.ShortNames, w.shortNames)
			}
			if _, ok := served[name+"/status"]; !ok {
				t.Errorf("%s %s has no status subresource", gv, name)
			}
			if _, ok := served[name+"/scale"]; ok != w.scale {
				t.Errorf("%s %s: scale subresource served %v, want %v as OpenKruise v1alpha1", gv, name, ok, w.scale)
			}
		}
	}
}

// TestOpenKruiseObjectsAreStoredUnchanged creates OpenKruise-style objects of every kind
// and checks that the API server stores every field as written: nothing is pruned, and
// unknown fields inside the schemaless pod and claim templates (DaemonSet, CloneSet)
// survive.
func TestOpenKruiseObjectsAreStoredUnchanged(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	ns := framework.CreateTestNamespace(t, cp.Clientset(t)).Name
	client := dynamic.NewForConfigOrDie(cp.Config())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	objects := decodeAll(t, openKruiseObjects)
	if len(objects) != 6 {
		t.Fatalf("testdata holds %d objects, want one of each of the 6 kinds", len(objects))
	}
	for _, obj := range objects {
		t.Run(obj.GetKind(), func(t *testing.T) {
			res := resourceFor(t, obj)
			var ri dynamic.ResourceInterface = client.Resource(res)
			if obj.GetKind() == "NodeImage" {
				obj.SetName(ns + "-" + obj.GetName()) // cluster scoped: keep tests apart
				t.Cleanup(func() { _ = client.Resource(res).Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{}) })
			} else {
				ri = client.Resource(res).Namespace(ns)
			}
			created, err := ri.Create(ctx, obj, metav1.CreateOptions{FieldValidation: "Strict"})
			if err != nil {
				t.Fatalf("creating: %v", err)
			}
			// Compared as YAML, which is also what a failure prints. The kinds whose
			// versions differ are stored as v1beta1 through bosun's conversion, which
			// decodes into the Go types: the spec comes back as those types encode it
			// (an explicit false of an omitempty field is left out), nothing more; pod
			// and claim templates, schemaless, are passed through as sent.
			want := obj
			if convertsThroughWebhook[obj.GetKind()] {
				want = encodedByGoTypes(t, obj)
				for _, field := range schemalessSpecFields[obj.GetKind()] {
					if value, found, _ := unstructured.NestedFieldCopy(obj.Object, "spec", field); found {
						if err := unstructured.SetNestedField(want.Object, value, "spec", field); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			sent, _ := yaml.Marshal(want.Object["spec"])
			stored, _ := yaml.Marshal(created.Object["spec"])
			if !bytes.Equal(sent, stored) {
				t.Errorf("stored spec differs from the one sent\nsent:\n%s\nstored:\n%s", sent, stored)
			}
			if !reflect.DeepEqual(created.GetAnnotations(), obj.GetAnnotations()) {
				t.Errorf("annotations = %v, want %v", created.GetAnnotations(), obj.GetAnnotations())
			}
		})
	}
}

// TestSchemaRejectsInvalidObjects sends objects that break the rules the CRD schemas
// carry and checks that each is refused with a message that names the problem.
func TestSchemaRejectsInvalidObjects(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	ns := framework.CreateTestNamespace(t, cp.Clientset(t)).Name
	client := dynamic.NewForConfigOrDie(cp.Config())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	cases := []struct {
		name string
		yaml string
		// wantInMessage are substrings the API server's message must contain.
		wantInMessage []string
	}{{
		name: "DaemonSet with an unknown update strategy",
		yaml: `
apiVersion: apps.kruise.io/v1alpha1
kind: DaemonSet
metadata: {name: bad-strategy}
spec:
  selector: {matchLabels: {app: a}}
  template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: i}]}}
  updateStrategy: {type: Sideways}`,
		wantInMessage: []string{"spec.updateStrategy.type", "Unsupported value", `"Sideways"`},
	}, {
		name: "DaemonSet with an unknown rolling update type",
		yaml: `
apiVersion: apps.kruise.io/v1alpha1
kind: DaemonSet
metadata: {name: bad-rolling-type}
spec:
  selector: {matchLabels: {app: a}}
  template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: i}]}}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {rollingUpdateType: Eventually}}`,
		wantInMessage: []string{"spec.updateStrategy.rollingUpdate.rollingUpdateType", "Unsupported value"},
	}, {
		name: "DaemonSet with negative minReadySeconds",
		yaml: `
apiVersion: apps.kruise.io/v1alpha1
kind: DaemonSet
metadata: {name: bad-min-ready}
spec:
  selector: {matchLabels: {app: a}}
  template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: i}]}}
  minReadySeconds: -1`,
		wantInMessage: []string{"spec.minReadySeconds", "should be greater than or equal to 0"},
	}, {
		name: "DaemonSet without a selector",
		yaml: `
apiVersion: apps.kruise.io/v1alpha1
kind: DaemonSet
metadata: {name: no-selector}
spec:
  template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: i}]}}`,
		wantInMessage: []string{"spec.selector", "Required value"},
	}, {
		name: "ContainerRecreateRequest with an unknown failure policy",
		yaml: `
apiVersion: apps.kruise.io/v1alpha1
kind: ContainerRecreateRequest
metadata: {name: bad-policy}
spec:
  podName: web-0
  containers: [{name: app}]
  strategy: {failurePolicy: Retry}`,
		wantInMessage: []string{"spec.strategy.failurePolicy", "Unsupported value"},
	}, {
		name: "ImagePullJob with both a node selector and a pod selector",
		yaml: `
apiVersion: apps.kruise.io/v1alpha1
kind: ImagePullJob
metadata: {name: both-selectors}
spec:
  image: registry.example/web:2.0
  selector: {names: [node-a]}
  podSelector: {matchLabels: {app: web}}
  completionPolicy: {type: Always}`,
		wantInMessage: []string{"selector and podSelector are mutually exclusive"},
	}, {
		name: "ImagePullJob with an unknown completion policy",
		yaml: `
apiVersion: apps.kruise.io/v1alpha1
kind: ImagePullJob
metadata: {name: bad-completion}
spec:
  image: registry.example/web:2.0
  completionPolicy: {type: Sometimes}`,
		wantInMessage: []string{"spec.completionPolicy.type", "Unsupported value"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := decodeAll(t, []byte(tc.yaml))[0]
			_, err := client.Resource(resourceFor(t, obj)).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
			if err == nil {
				t.Fatal("the API server accepted the object")
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("err = %v, want an Invalid (422) error", err)
			}
			for _, want := range tc.wantInMessage {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message %q does not mention %q", err.Error(), want)
				}
			}
		})
	}
}

// TestKubectlGetByShortNames runs the real kubectl the way the README tells users to.
func TestKubectlGetByShortNames(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	ns := framework.CreateTestNamespace(t, cp.Clientset(t)).Name
	kubectl, err := framework.ToolPath("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(kubectl, append([]string{"--kubeconfig", cp.KubeconfigPath()}, args...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		return out.String()
	}
	// The first document of the testdata is a DaemonSet.
	first, _, _ := bytes.Cut(openKruiseObjects, []byte("\n---"))
	run("apply", "-n", ns, "-f", writeTemp(t, first))

	out := run("get", "ads,pub,crr,nodeimages", "-n", ns)
	for _, column := range []string{"DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "log-agent"} {
		if !strings.Contains(out, column) {
			t.Errorf("kubectl get ads output lacks %q:\n%s", column, out)
		}
	}
	wide := run("get", "daemon", "-n", ns, "-o", "wide")
	for _, column := range []string{"CONTAINERS", "IMAGES", "registry.example/log-agent:1.4"} {
		if !strings.Contains(wide, column) {
			t.Errorf("kubectl get daemon -o wide output lacks %q:\n%s", column, wide)
		}
	}
}

func decodeAll(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	objects, err := framework.DecodeObjects(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decoding testdata: %v", err)
	}
	return objects
}

func resourceFor(t *testing.T, obj *unstructured.Unstructured) schema.GroupVersionResource {
	t.Helper()
	plural := map[string]string{
		"DaemonSet":                "daemonsets",
		"CloneSet":                 "clonesets",
		"PodUnavailableBudget":     "podunavailablebudgets",
		"ContainerRecreateRequest": "containerrecreaterequests",
		"ImagePullJob":             "imagepulljobs",
		"NodeImage":                "nodeimages",
	}[obj.GetKind()]
	if plural == "" {
		t.Fatalf("no resource for kind %q", obj.GetKind())
	}
	return obj.GroupVersionKind().GroupVersion().WithResource(plural)
}

// convertsThroughWebhook names the kinds whose two versions differ, so that the API
// server converts them through bosun's /convert.
var convertsThroughWebhook = map[string]bool{"DaemonSet": true, "CloneSet": true, "ContainerRecreateRequest": true, "PodUnavailableBudget": true}

// encodedByGoTypes returns obj as its version's Go type encodes it.
func encodedByGoTypes(t *testing.T, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	typed, err := bosunscheme.Scheme.New(obj.GroupVersionKind())
	if err != nil {
		t.Fatalf("no Go type for %s: %v", obj.GroupVersionKind(), err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed); err != nil {
		t.Fatalf("decoding %s into its Go type: %v", obj.GetKind(), err)
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		t.Fatalf("encoding %s from its Go type: %v", obj.GetKind(), err)
	}
	return &unstructured.Unstructured{Object: content}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func writeTemp(t *testing.T, data []byte) string {
	t.Helper()
	path := t.TempDir() + "/object.yaml"
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
