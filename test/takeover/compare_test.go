package main

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func budget(mutate func(obj map[string]any)) *unstructured.Unstructured {
	obj := map[string]any{
		"apiVersion": "policy.kruise.io/v1beta1",
		"kind":       "PodUnavailableBudget",
		"metadata": map[string]any{
			"name": "b", "namespace": "ns", "uid": "u1", "generation": int64(1), "resourceVersion": "10",
			"annotations": map[string]any{"a": "1"},
		},
		"spec": map[string]any{"maxUnavailable": int64(1), "protectOperations": []any{"DELETE"}},
		"status": map[string]any{
			"observedGeneration": int64(1), "unavailableAllowed": int64(1), "currentAvailable": int64(1),
			"desiredAvailable": int64(0), "totalReplicas": int64(1),
		},
	}
	if mutate != nil {
		mutate(obj)
	}
	return &unstructured.Unstructured{Object: obj}
}

var budgetKey = objectKey{Kind: "PodUnavailableBudget", Namespace: "ns", Name: "b"}

func compareBudgets(before, after *unstructured.Unstructured) []difference {
	return compareObjects(v1beta1, map[objectKey]*unstructured.Unstructured{budgetKey: before}, map[objectKey]*unstructured.Unstructured{budgetKey: after})
}

func paths(diffs []difference) string {
	var out []string
	for _, d := range diffs {
		out = append(out, d.Path)
	}
	return strings.Join(out, " ")
}

// A status write that only changes resourceVersion and managedFields, or that writes the
// same status with empty lists and maps for unset ones, is no difference.
func TestCompareObjectsIgnoresWhatAStatusWriteMayChange(t *testing.T) {
	after := budget(func(obj map[string]any) {
		meta := obj["metadata"].(map[string]any)
		meta["resourceVersion"] = "20"
		meta["managedFields"] = []any{map[string]any{"manager": "bosun"}}
		obj["status"].(map[string]any)["disruptedPods"] = map[string]any{}
	})
	if diffs := compareBudgets(budget(nil), after); len(diffs) != 0 {
		t.Errorf("differences %v, want none", diffs)
	}
}

// Metadata and spec compare exactly, key by key; status compares by value.
func TestCompareObjectsReportsEachChangedField(t *testing.T) {
	after := budget(func(obj map[string]any) {
		meta := obj["metadata"].(map[string]any)
		meta["annotations"].(map[string]any)["planted"] = "x"
		meta["generation"] = int64(2)
		obj["spec"].(map[string]any)["protectOperations"] = []any{"DELETE", "EVICT"}
		obj["status"].(map[string]any)["totalReplicas"] = int64(-1)
	})
	got := paths(compareBudgets(budget(nil), after))
	want := "metadata.generation metadata.annotations[planted] spec.protectOperations status.totalReplicas"
	if got != want {
		t.Errorf("paths %q, want %q", got, want)
	}
}

// An unset map that becomes set is reported key by key; an object that went is reported.
func TestCompareObjectsReportsAppearedKeysAndGoneObjects(t *testing.T) {
	before := budget(func(obj map[string]any) { delete(obj["metadata"].(map[string]any), "annotations") })
	if got, want := paths(compareBudgets(before, budget(nil))), "metadata.annotations[a]"; got != want {
		t.Errorf("paths %q, want %q", got, want)
	}
	diffs := compareObjects(v1beta1, map[objectKey]*unstructured.Unstructured{budgetKey: budget(nil)}, nil)
	if len(diffs) != 1 || diffs[0].Path != "object" || diffs[0].After != "absent" {
		t.Errorf("a gone object gave %v", diffs)
	}
}

// Pods, claims and ControllerRevisions that went, came or changed are reported.
func TestComparePodsAndRevisions(t *testing.T) {
	pods := comparePods(map[string]pod{"ns/a": {UID: "u1"}, "ns/b": {UID: "u2"}}, map[string]pod{"ns/a": {UID: "u1"}, "ns/c": {UID: "u3"}})
	if got, want := len(pods), 2; got != want {
		t.Errorf("pod differences %v, want %d", pods, want)
	}
	for _, d := range pods {
		if d.Path != "metadata.uid" {
			t.Errorf("a pod that went or came gave %v", d)
		}
	}
	// A pod kept but relabelled, re-annotated or given another image, as a controller
	// moving it along a lifecycle or updating it in place does, is reported field by field;
	// an unset map and an empty one are the same.
	held := pod{UID: "u1", Labels: map[string]string{"lifecycle.apps.kruise.io/state": "PreparingUpdate"}, Images: []string{"web:v1"}}
	moved := pod{UID: "u1", Labels: map[string]string{"lifecycle.apps.kruise.io/state": "Updating"},
		Annotations: map[string]string{"apps.kruise.io/inplace-update-state": "{}"}, Images: []string{"web:v2"}}
	if got, want := paths(comparePods(map[string]pod{"ns/a": held}, map[string]pod{"ns/a": moved})),
		"images[0] metadata.annotations[apps.kruise.io/inplace-update-state] metadata.labels[lifecycle.apps.kruise.io/state]"; got != want {
		t.Errorf("pod paths %q, want %q", got, want)
	}
	same := held
	same.Annotations = map[string]string{}
	if diffs := comparePods(map[string]pod{"ns/a": held}, map[string]pod{"ns/a": same}); len(diffs) > 0 {
		t.Errorf("an unchanged pod gave %v", diffs)
	}
	claims := compareClaims(map[string]string{"ns/data-a": "c1", "ns/data-b": "c2"}, map[string]string{"ns/data-a": "c1", "ns/data-b": "c3"})
	if len(claims) != 1 || claims[0].Object != "ns/data-b" || claims[0].Before != "c2" || claims[0].After != "c3" {
		t.Errorf("claim differences %v, want data-b replaced", claims)
	}
	r := revision{UID: "r", Revision: 1, Data: map[string]any{"spec": "x"}, Labels: map[string]string{"k": "v"}}
	changed := r
	changed.Labels = map[string]string{"k": "w"}
	diffs := compareRevisions(map[string]revision{"ns/r": r}, map[string]revision{"ns/r": changed})
	if got, want := paths(diffs), "labels[k]"; got != want {
		t.Errorf("revision paths %q, want %q", got, want)
	}
}

// An allowed difference passes only with the values its check accepts, every allowed
// difference must occur, and any other difference is unexpected.
func TestJudge(t *testing.T) {
	allowed := []allowedDifference{{"PodUnavailableBudget", v1beta1, "ns/b", "status.totalReplicas", values(-1, 1), "why"}}
	d := difference{Kind: "PodUnavailableBudget", Version: v1beta1, Object: "ns/b", Path: "status.totalReplicas", Before: float64(-1), After: float64(1)}
	if v := judge([]difference{d}, allowed, nil); !v.ok() || len(v.expected) != 1 {
		t.Errorf("the allowed difference was judged %+v", v)
	}
	wrong := d
	wrong.After = float64(2)
	if v := judge([]difference{wrong}, allowed, nil); v.ok() || len(v.unexpected) != 1 || len(v.missing) != 1 {
		t.Errorf("a difference with other values was judged %+v", v)
	}
	other := d
	other.Path = "status.desiredAvailable"
	if v := judge([]difference{d, other}, allowed, nil); v.ok() || len(v.unexpected) != 1 {
		t.Errorf("an unlisted difference was judged %+v", v)
	}
}

// A possible difference passes with the values its check accepts, fails with others, and
// may as well not occur.
func TestJudgePossible(t *testing.T) {
	possible := failuresCleared([]string{"c"}, v1beta1)[v1beta1]
	failed := map[string]any{"type": "FailedUpdate", "status": "True", "message": "conflict"}
	progressing := map[string]any{"type": "Progressing", "status": "True", "reason": "ProgressPartitionAvailable"}
	d := difference{Kind: "CloneSet", Version: v1beta1, Object: namespace + "/c", Path: "status.conditions",
		Before: []any{failed, progressing}, After: []any{progressing}}
	if v := judge([]difference{d}, nil, possible); !v.ok() || len(v.expected) != 1 {
		t.Errorf("the possible difference was judged %+v", v)
	}
	if v := judge(nil, nil, possible); !v.ok() || len(v.missing) != 0 {
		t.Errorf("a possible difference that did not occur was judged %+v", v)
	}
	gone := d
	gone.Before, gone.After = []any{failed}, nil
	if v := judge([]difference{gone}, nil, possible); !v.ok() {
		t.Errorf("the only condition, FailedUpdate, removed was judged %+v", v)
	}
	for name, after := range map[string]any{
		"another condition changed": []any{map[string]any{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}},
		"the other condition gone":  nil,
	} {
		wrong := d
		wrong.After = after
		if v := judge([]difference{wrong}, nil, possible); v.ok() || len(v.unexpected) != 1 {
			t.Errorf("%s was judged %+v", name, v)
		}
	}
	added := d
	added.Before, added.After = []any{progressing}, []any{failed, progressing}
	if v := judge([]difference{added}, nil, possible); v.ok() {
		t.Errorf("a FailedUpdate condition added was judged %+v", v)
	}
}

func TestReservedCheck(t *testing.T) {
	check := reserved(map[string]string{"spec.x": "null"})
	if err := check(nil, `{"spec.x":{"restore":null,"guard":{}}}`); err != nil {
		t.Errorf("the expected record was refused: %v", err)
	}
	for _, value := range []any{`{"spec.y":{"restore":null}}`, `{"spec.x":{"restore":1}}`, "not json"} {
		if err := check(nil, value); err == nil {
			t.Errorf("record %v was accepted", value)
		}
	}
	if err := check("{}", `{"spec.x":{"restore":null}}`); err == nil {
		t.Error("a record that was there before was accepted")
	}
}
