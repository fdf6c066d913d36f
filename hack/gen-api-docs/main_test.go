package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// obj is a JSON object, for writing schemas and CRDs briefly.
type obj = map[string]any

// writeCRD writes a CRD of kind Foo-like name in group example.io with versions v1alpha1 and
// v1beta1 (stored), whose spec schemas are alphaSpec and betaSpec.
func writeCRD(t *testing.T, dir, kindName, strategy string, alphaSpec, betaSpec obj) {
	t.Helper()
	version := func(name string, storage bool, spec obj) obj {
		return obj{
			"name": name, "served": true, "storage": storage,
			"subresources": obj{"status": obj{}},
			"schema": obj{"openAPIV3Schema": obj{
				"type":        "object",
				"description": kindName + " is a test kind.",
				"properties": obj{
					"apiVersion": obj{"type": "string"},
					"kind":       obj{"type": "string"},
					"metadata":   obj{"type": "object"},
					"spec":       spec,
				},
			}},
		}
	}
	plural := strings.ToLower(kindName) + "s"
	crd := obj{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   obj{"name": plural + ".example.io"},
		"spec": obj{
			"group":      "example.io",
			"names":      obj{"kind": kindName, "plural": plural},
			"scope":      "Namespaced",
			"conversion": obj{"strategy": strategy},
			"versions": []any{
				version("v1alpha1", false, alphaSpec),
				version("v1beta1", true, betaSpec),
			},
		},
	}
	data, err := json.Marshal(crd)
	if err != nil {
		t.Fatal(err)
	}
	// JSON is YAML.
	if err := os.WriteFile(filepath.Join(dir, "example.io_"+plural+".yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeNotes(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// section returns the part of page from the heading line (exactly) to the next heading of
// the same or a higher level, or "" when there is no such heading.
func section(page, heading string) string {
	level := strings.Index(heading, " ")
	lines := strings.Split(page, "\n")
	for i, l := range lines {
		if l != heading {
			continue
		}
		end := len(lines)
		for j := i + 1; j < len(lines); j++ {
			if m := regexp.MustCompile(`^(#+) `).FindStringSubmatch(lines[j]); m != nil && len(m[1]) <= level {
				end = j
				break
			}
		}
		return strings.Join(lines[i:end], "\n")
	}
	return ""
}

// rowPaths returns the field paths of the table rows of text, in order.
func rowPaths(text string) []string {
	var paths []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(text, -1) {
		paths = append(paths, m[1])
	}
	return paths
}

func TestDifferencesAreComputedFromTheSchemas(t *testing.T) {
	crds, notesDir := t.TempDir(), filepath.Join(t.TempDir(), "notes")
	alpha := obj{"type": "object", "required": []any{"old"}, "properties": obj{
		"old":    obj{"type": "string", "description": "Old is gone in v1beta1."},
		"mode":   obj{"type": "string", "enum": []any{"a", "b", "c"}},
		"shared": obj{"type": "string", "description": "Said one way."},
		"name":   obj{"type": "string", "maxLength": 5},
		"labels": obj{"type": "object", "x-kubernetes-map-type": "atomic", "additionalProperties": obj{"type": "string"}},
		"list":   obj{"type": "array", "items": obj{"type": "string"}},
	}}
	beta := obj{"type": "object", "properties": obj{
		"new": obj{"type": "object", "properties": obj{
			"x": obj{"type": "string"},
			"y": obj{"type": "array", "items": obj{"type": "object", "properties": obj{"z": obj{"type": "integer"}}}},
		}},
		"mode":   obj{"type": "string", "enum": []any{"a", "b"}},
		"shared": obj{"type": "string", "description": "Said another way."},
		"name":   obj{"type": "string", "maxLength": 6},
		"labels": obj{"type": "object", "x-kubernetes-map-type": "granular", "additionalProperties": obj{"type": "string"}},
		"list":   obj{"type": "array", "items": obj{"type": "string", "enum": []any{"p", "q"}}},
	}}
	writeCRD(t, crds, "Foo", "Webhook", alpha, beta)
	writeNotes(t, notesDir, map[string]string{
		"foo.md":                 "Foo keeps `old` in an annotation.\n",
		reservedAnnotationsNotes: "Reserved text.\n",
	})

	out, err := render(crds, notesDir)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	page := string(out)
	diff := section(page, "### Foo: v1alpha1 differences")
	if diff == "" {
		t.Fatalf("no differences section:\n%s", page)
	}
	want := []string{"spec.labels", "spec.list[]", "spec.mode", "spec.name", "spec.new", "spec.old"}
	if got := rowPaths(diff); !slices.Equal(got, want) {
		t.Errorf("difference rows = %v, want %v", got, want)
	}
	for _, row := range []string{
		// A field of the storage version only stands for the named fields below it.
		"| `spec.new` | – | object, with the 3 fields below it |",
		// A field of the other version only is described, since no other table lists it.
		"| `spec.old` | string (**required**) — Old is gone in v1beta1. | – |",
		"| `spec.mode` | string (one of `a`, `b`, `c`) | string (one of `a`, `b`) |",
		"| `spec.name` | string (at most 5 characters) | string (at most 6 characters) |",
		// Keywords the tables do not describe are shown as written.
		"| `spec.labels` | map[string]string (`x-kubernetes-map-type: \"atomic\"`) | map[string]string (`x-kubernetes-map-type: \"granular\"`) |",
	} {
		if !strings.Contains(diff, row+"\n") {
			t.Errorf("differences lack the row\n%s\nin\n%s", row, diff)
		}
	}
	if !strings.Contains(diff, "Foo keeps `old` in an annotation.\n") {
		t.Errorf("the kind's notes are not in its differences section:\n%s", diff)
	}
	kindSection := section(page, "## Foo (example.io)")
	if got := strings.Count(kindSection, "| `spec.new.x` |"); got != 1 {
		t.Errorf("spec.new.x is listed %d times in the kind's section, want once (in the v1beta1 table)", got)
	}
	if strings.Contains(kindSection, "`spec.old`") && !strings.Contains(diff, "`spec.old`") {
		t.Errorf("spec.old, a v1alpha1 field, is listed outside the differences")
	}
	if !strings.Contains(kindSection, "| `spec.shared` | string | Said another way. |") {
		t.Errorf("the field table does not use the storage version's descriptions:\n%s", kindSection)
	}
}

func TestIdenticalSchemasAreListedOnce(t *testing.T) {
	crds, notesDir := t.TempDir(), filepath.Join(t.TempDir(), "notes")
	spec := func(description string) obj {
		return obj{"type": "object", "properties": obj{
			"image": obj{"type": "string", "description": description, "minLength": 1},
		}}
	}
	// Only the descriptions differ.
	writeCRD(t, crds, "Bar", "None", spec("The image."), spec("The image to pull."))
	writeNotes(t, notesDir, map[string]string{"bar.md": "Bar notes.\n"})

	out, err := render(crds, notesDir)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	page := string(out)
	kindSection := section(page, "## Bar (example.io)")
	if kindSection == "" {
		t.Fatalf("no section for Bar:\n%s", page)
	}
	if strings.Contains(page, "differences") {
		t.Errorf("identical schemas got a differences section:\n%s", page)
	}
	if !strings.Contains(kindSection, "the fields below apply to both versions") {
		t.Errorf("the section does not say its fields are those of both versions:\n%s", kindSection)
	}
	if got := strings.Count(page, "| `spec.image` |"); got != 1 {
		t.Errorf("spec.image is listed %d times, want once", got)
	}
	if !strings.Contains(kindSection, "Bar notes.\n") {
		t.Errorf("the kind's notes are missing from its section:\n%s", kindSection)
	}
	row := "| [Bar](#bar-exampleio) | `example.io` | `v1alpha1`, `v1beta1` (storage) | `bars` | Namespaced |  | none (identical schemas) |"
	if !strings.Contains(page, row+"\n") {
		t.Errorf("the kinds table lacks the row\n%s\nin\n%s", row, page)
	}
	if strings.Contains(page, "## Reserved annotations") {
		t.Errorf("a Reserved annotations section without its notes file")
	}
}

func TestNotesThatCannotBeIncludedFail(t *testing.T) {
	spec := obj{"type": "object", "properties": obj{"a": obj{"type": "string"}}}
	other := obj{"type": "object", "properties": obj{"b": obj{"type": "string"}}}
	for name, tc := range map[string]struct {
		notes map[string]string
		want  string
	}{
		"misnamed kind notes": {
			notes: map[string]string{"foos.md": "x\n", reservedAnnotationsNotes: "r\n"},
			want:  "foos.md is not one of the files",
		},
		"webhook kind without reserved annotations": {
			notes: map[string]string{"foo.md": "x\n"},
			want:  reservedAnnotationsNotes + " is missing",
		},
		"heading that repeats a generated one": {
			notes: map[string]string{"foo.md": "### Foo spec\n", reservedAnnotationsNotes: "r\n"},
			want:  "anchor #foo-spec is used by 2 headings",
		},
		"link to no heading": {
			notes: map[string]string{reservedAnnotationsNotes: "See [the kind](#foo).\n"},
			want:  "link to #foo finds no heading",
		},
	} {
		t.Run(name, func(t *testing.T) {
			crds, notesDir := t.TempDir(), filepath.Join(t.TempDir(), "notes")
			writeCRD(t, crds, "Foo", "Webhook", spec, other)
			writeNotes(t, notesDir, tc.notes)
			_, err := render(crds, notesDir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("render error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"DaemonSet (apps.kruise.io)":      "daemonset-appskruiseio",
		"DaemonSet: v1alpha1 differences": "daemonset-v1alpha1-differences",
		"Reserved annotations":            "reserved-annotations",
		"`code` and_under-score":          "code-and_under-score",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

func TestCheckAnchorsIgnoresCodeBlocks(t *testing.T) {
	page := "# A\n\n```\n# A\n[x](#nowhere)\n```\n\n[a](#a)\n"
	if err := checkAnchors([]byte(page)); err != nil {
		t.Errorf("checkAnchors: %v", err)
	}
	if err := checkAnchors([]byte("# A\n\n# A\n")); err == nil {
		t.Errorf("checkAnchors accepted two headings with one anchor")
	}
}

// TestRepositoryReference renders the reference from the repository's CRDs and notes, as
// hack/update-docs.sh does.
func TestRepositoryReference(t *testing.T) {
	notesDir := filepath.Join("..", "..", "docs", "api-reference-notes")
	out, err := render(filepath.Join("..", "..", "config", "crd", "bases"), notesDir)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	page := string(out)
	again, err := render(filepath.Join("..", "..", "config", "crd", "bases"), notesDir)
	if err != nil || !bytes.Equal(out, again) {
		t.Fatalf("rendering twice gave different pages (err %v)", err)
	}

	kinds := map[string]string{
		"ContainerRecreateRequest": "apps.kruise.io",
		"DaemonSet":                "apps.kruise.io",
		"ImageListPullJob":         "apps.kruise.io",
		"ImagePullJob":             "apps.kruise.io",
		"NodeImage":                "apps.kruise.io",
		"PodUnavailableBudget":     "policy.kruise.io",
	}
	// The fields the conversion carries, at least, differ between the versions.
	differing := map[string][]string{
		"DaemonSet":                {"spec.scaleStrategy", "spec.updateStrategy.rollingUpdate.rollingUpdateType", "status.daemonSetHash", "status.updateRevision"},
		"PodUnavailableBudget":     {"spec.ignoredPodSelector", "spec.protectOperations", "spec.protectTotalReplicas"},
		"ContainerRecreateRequest": {"status.conditions", "status.containerStatusSnapshot"},
	}
	for name, group := range kinds {
		heading := "## " + name + " (" + group + ")"
		if got := strings.Count(page, "\n"+heading+"\n"); got != 1 {
			t.Errorf("%d sections %q, want 1", got, heading)
		}
		rows := regexp.MustCompile(`(?m)^\| \[`+name+`\]\(#[a-z-]+\) \| .*$`).FindAllString(page, -1)
		if len(rows) != 1 || !strings.Contains(rows[0], "| `v1alpha1`, `v1beta1` (storage) |") {
			t.Errorf("kinds table rows of %s = %q, want one listing v1alpha1 and v1beta1 (storage)", name, rows)
		}
		diff := section(page, "### "+name+": v1alpha1 differences")
		fields, differs := differing[name]
		if !differs {
			if diff != "" || !strings.Contains(section(page, heading), "the fields below apply to both versions") {
				t.Errorf("%s has identical schemas but its section does not list its fields once for both versions", name)
			}
			continue
		}
		paths := rowPaths(diff)
		for _, f := range fields {
			if !slices.Contains(paths, f) {
				t.Errorf("the v1alpha1 differences of %s lack %s (rows %v)", name, f, paths)
			}
		}
		notes, err := os.ReadFile(filepath.Join(notesDir, strings.ToLower(name)+".md"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(diff, strings.TrimSpace(string(notes))) {
			t.Errorf("the notes of %s are not included verbatim in its differences section", name)
		}
	}
	if paths := rowPaths(section(page, "### DaemonSet: v1alpha1 differences")); slices.Contains(paths, "spec.selector") {
		t.Errorf("DaemonSet's spec.selector, the same in both versions, is listed as a difference")
	}

	reserved := section(page, "## Reserved annotations")
	for _, s := range []string{"`conversion.bosun.dev/v1beta1`", "`conversion.bosun.dev/v1alpha1`", "256 KiB", "bosun_conversion_dropped_total",
		"kruise.io/pub-protect-operations", "pub.kruise.io/protect-total-replicas", "daemonset.kruise.io/progressive-create-pod",
		"crr.apps.kruise.io/sync-container-statuses", "crr.apps.kruise.io/unready-acquired"} {
		if !strings.Contains(reserved, s) {
			t.Errorf("the Reserved annotations section does not mention %s", s)
		}
	}
	intro := page[:strings.Index(page, "\n## ")]
	for _, s := range []string{"`v1beta1` is the storage version of every kind and the hub of conversion",
		"[ContainerRecreateRequest](#containerrecreaterequest-appskruiseio), [DaemonSet](#daemonset-appskruiseio) and [PodUnavailableBudget](#podunavailablebudget-policykruiseio)\n  convert through bosun's conversion webhook",
		"[ImageListPullJob](#imagelistpulljob-appskruiseio), [ImagePullJob](#imagepulljob-appskruiseio) and [NodeImage](#nodeimage-appskruiseio)\n  have the same schema in every version"} {
		if !strings.Contains(intro, s) {
			t.Errorf("the introduction does not say %q", s)
		}
	}
	if err := checkAnchors(out); err != nil {
		t.Error(err)
	}
}
