package framework_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// widgetCRD is a CRD in a group of its own, so that it cannot clash with bosun's.
const widgetCRD = `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.framework.test.bosun.dev
  labels:
    revision: "%s"
spec:
  group: framework.test.bosun.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              name: {type: string, maxLength: 9007199254740993}
---
`

const gadgetCRD = `{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
 "metadata": {"name": "gadgets.framework.test.bosun.dev"},
 "spec": {"group": "framework.test.bosun.dev", "scope": "Cluster",
  "names": {"plural": "gadgets", "kind": "Gadget"},
  "versions": [{"name": "v1", "served": true, "storage": true,
   "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}`

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestInstallCRDs(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := writeFiles(t, map[string]string{
		"widgets.yaml":        strings.Replace(widgetCRD, "%s", "1", 1),
		"nested/gadgets.json": gadgetCRD,
		"README.md":           "not a manifest",
		"nested/.empty.yaml":  "---\n",
	})
	if err := framework.InstallCRDs(ctx, cp.Config(), dir); err != nil {
		t.Fatal(err)
	}
	client := dynamic.NewForConfigOrDie(cp.Config())
	ns := framework.CreateTestNamespace(t, cp.Clientset(t))

	// Usable right away: no waiting for discovery or the CRD controller.
	widgets := client.Resource(schema.GroupVersionResource{Group: "framework.test.bosun.dev", Version: "v1", Resource: "widgets"})
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "framework.test.bosun.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w"},
		"spec":     map[string]any{"size": int64(3)},
	}}
	if _, err := widgets.Namespace(ns.Name).Create(ctx, widget, metav1.CreateOptions{}); err != nil {
		t.Errorf("creating a Widget: %v", err)
	}
	gadgets := client.Resource(schema.GroupVersionResource{Group: "framework.test.bosun.dev", Version: "v1", Resource: "gadgets"})
	if _, err := gadgets.List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("listing Gadgets: %v", err)
	}

	// Installing again updates the CRDs in place.
	if err := os.WriteFile(filepath.Join(dir, "widgets.yaml"), []byte(strings.Replace(widgetCRD, "%s", "2", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := framework.InstallCRDs(ctx, cp.Config(), dir); err != nil {
		t.Fatalf("installing the CRDs again: %v", err)
	}
	crds := client.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	crd, err := crds.Get(ctx, "widgets.framework.test.bosun.dev", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := crd.GetLabels()["revision"]; got != "2" {
		t.Errorf("CRD revision label = %q after reinstalling, want 2", got)
	}
	// The integer survived decoding without a detour through float64 (2^53+1 has no
	// float64 of its own).
	versions, err := json.Marshal(crd.Object["spec"].(map[string]any)["versions"])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(versions), `"maxLength":9007199254740993`) {
		t.Errorf("maxLength lost precision: %s", versions)
	}
}

func TestInstallCRDsRejectsBadInput(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		wantErr string
	}{
		{name: "no CRDs", files: map[string]string{"README.md": "x"}, wantErr: "no CustomResourceDefinitions"},
		{name: "only empty documents", files: map[string]string{"a.yaml": "---\n---\n"}, wantErr: "no CustomResourceDefinitions"},
		{
			name:    "not a CRD",
			files:   map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"},
			wantErr: `"x" is not an apiextensions.k8s.io/v1 CustomResourceDefinition`,
		},
		{
			name:    "old CRD version",
			files:   map[string]string{"crd.yaml": "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata: {name: x}\n"},
			wantErr: "is not an apiextensions.k8s.io/v1 CustomResourceDefinition",
		},
		{name: "broken YAML", files: map[string]string{"bad.yaml": "kind: [\n"}, wantErr: "decoding"},
	}
	// Bad input is rejected before the server is contacted, so none is needed.
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := framework.InstallCRDs(context.Background(), cfg, writeFiles(t, tc.files))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("InstallCRDs() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
	t.Run("missing directory", func(t *testing.T) {
		if err := framework.InstallCRDs(context.Background(), cfg, filepath.Join(t.TempDir(), "none")); err == nil {
			t.Error("InstallCRDs() of a missing directory succeeded")
		}
	})
}
