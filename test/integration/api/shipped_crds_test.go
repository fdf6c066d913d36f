package api

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// TestShippedCRDs checks the CRD files as shipped, without an API server, for what a
// cluster that ran OpenKruise 1.9 needs of them: both versions served (the API server
// refuses to drop a version that may be in status.storedVersions), v1beta1 stored,
// conversion through bosun's /convert exactly where the versions differ, the label by
// which bosun's writers recognise the CRDs they manage, and identical schemas where no
// conversion runs (with strategy None the API server only relabels the apiVersion).
func TestShippedCRDs(t *testing.T) {
	dir, err := framework.DefaultCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	webhookConversion := map[string]bool{
		"daemonsets.apps.kruise.io":                true,
		"containerrecreaterequests.apps.kruise.io": true,
		"podunavailablebudgets.policy.kruise.io":   true,
		"clonesets.apps.kruise.io":                 true,
		"nodeimages.apps.kruise.io":                false,
		"imagepulljobs.apps.kruise.io":             false,
		"imagelistpulljobs.apps.kruise.io":         false,
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, file := range files {
		crd := readCRDFile(t, file)
		name := crd.GetName()
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			webhook, known := webhookConversion[name]
			if !known {
				t.Fatalf("%s ships a CRD this test does not know; add it with its conversion strategy", filepath.Base(file))
			}
			if got := crd.GetLabels()["app.kubernetes.io/managed-by"]; got != "bosun" {
				t.Errorf("label app.kubernetes.io/managed-by = %q, want bosun", got)
			}
			versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
			schemas := map[string]any{}
			for _, v := range versions {
				version := v.(map[string]any)
				name, _ := version["name"].(string)
				if served, _ := version["served"].(bool); !served {
					t.Errorf("version %s is not served", name)
				}
				if stored, _ := version["storage"].(bool); stored != (name == "v1beta1") {
					t.Errorf("version %s has storage %v, want v1beta1 and only v1beta1 stored", name, stored)
				}
				schemas[name] = version["schema"]
			}
			if _, ok := schemas["v1alpha1"]; !ok || len(schemas) != 2 {
				t.Fatalf("versions %v, want v1alpha1 and v1beta1", reflect.ValueOf(schemas).MapKeys())
			}
			strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
			if webhook {
				if strategy != "Webhook" {
					t.Errorf("conversion strategy %q, want Webhook", strategy)
				}
				url, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "url")
				if url != "https://127.0.0.1:9876/convert" {
					t.Errorf("conversion URL %q, want the default https://127.0.0.1:9876/convert", url)
				}
				reviewVersions, _, _ := unstructured.NestedStringSlice(crd.Object, "spec", "conversion", "webhook", "conversionReviewVersions")
				if !reflect.DeepEqual(reviewVersions, []string{"v1"}) {
					t.Errorf("conversionReviewVersions %v, want [v1]", reviewVersions)
				}
				if _, found, _ := unstructured.NestedFieldNoCopy(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle"); found {
					t.Error("the shipped CRD carries a caBundle; the manager injects its own")
				}
				return
			}
			if strategy != "" && strategy != "None" {
				t.Errorf("conversion strategy %q, want None", strategy)
			}
			if !reflect.DeepEqual(withoutDescriptions(schemas["v1alpha1"]), withoutDescriptions(schemas["v1beta1"])) {
				t.Error("the two versions' schemas differ, but nothing converts between them")
			}
		})
	}
	for name := range webhookConversion {
		if !seen[name] {
			t.Errorf("no shipped CRD %s", name)
		}
	}
}

// withoutDescriptions returns a copy of a schema without its descriptions, which the API
// server neither validates nor prunes by.
func withoutDescriptions(schema any) any {
	switch s := schema.(type) {
	case map[string]any:
		out := map[string]any{}
		for key, value := range s {
			if key == "description" {
				if _, isText := value.(string); isText {
					continue
				}
			}
			out[key] = withoutDescriptions(value)
		}
		return out
	case []any:
		out := make([]any, len(s))
		for i, value := range s {
			out[i] = withoutDescriptions(value)
		}
		return out
	default:
		return schema
	}
}

func readCRDFile(t *testing.T, file string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := utilyaml.Unmarshal(data, &obj.Object); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return obj
}
