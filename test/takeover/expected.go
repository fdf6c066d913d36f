package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Why bosun's state may differ from OpenKruise's, field by field. Each difference must
// occur with the values its check accepts; any other difference fails the run.
const (
	whyProgressing = "bosun writes a Progressing condition on Advanced DaemonSets (docs/api-reference.md); " +
		"OpenKruise never writes status.conditions"
	whyCarriedTotal = "the budget was written in v1alpha1 with pub.kruise.io/protect-total-replicas; OpenKruise's CRD " +
		"converts budgets with strategy None, so its v1beta1 controller saw no spec.protectTotalReplicas and ignored the " +
		"annotation (its total for an Advanced DaemonSet's pods is 'unknown', -1); bosun honours the value, as v1alpha1 did"
	whyPromoted = "the budget is stored as v1alpha1 with the annotations; OpenKruise converts budgets with strategy None " +
		"and never promotes them, bosun's conversion reads them into the v1beta1 fields (and keeps them)"
	whyReserved = "the plain v1alpha1 form of this v1beta1 object would not convert back to it; bosun records what " +
		"to restore in its reserved annotation (docs/api-reference.md), OpenKruise's conversion loses it"
	whyNotCarried = "OpenKruise converts budgets with strategy None: its v1alpha1 view has no form of " +
		"spec.protectOperations and spec.protectTotalReplicas; bosun carries them in their v1alpha1 annotations"
	whyFailureCleared = "OpenKruise records an error of a CloneSet's sync (here, a conflict writing a pod, which its " +
		"next sync got past) in a FailedUpdate or FailedScale condition and never removes it; bosun removes it after a " +
		"sync without that error (docs/controllers.md). It shows only where OpenKruise happened to hit such an error"
	whyExcludeLabel = "OpenKruise's conversion never writes spec.scaleStrategy.excludePreparingDelete down: its " +
		"v1alpha1 view of the CloneSet has no form of it (a v1alpha1 read-modify-write erases it); bosun's carries it " +
		"in the label v1alpha1 reads it from"
)

// excludeDeleteLabelPath is where a v1alpha1 CloneSet keeps excludePreparingDelete.
const excludeDeleteLabelPath = "metadata.labels[" + excludeDeleteLabel + "]"

const reservedAlpha = "metadata.annotations[conversion.bosun.dev/v1beta1]"

// expectedBetaDifferences and expectedAlphaDifferences are those of the takeover from
// OpenKruise 1.9.
var expectedBetaDifferences = []allowedDifference{
	{"DaemonSet", v1beta1, namespace + "/" + alphaDaemonSet, "status.conditions", progressingComplete, whyProgressing},
	{"DaemonSet", v1beta1, namespace + "/" + betaDaemonSet, "status.conditions", progressingComplete, whyProgressing},
	{"PodUnavailableBudget", v1beta1, namespace + "/" + alphaBudget, "status.totalReplicas", values(-1, 1), whyCarriedTotal},
	{"PodUnavailableBudget", v1beta1, namespace + "/" + alphaBudget, "spec.protectOperations",
		values(nil, []any{"DELETE", "EVICT"}), whyPromoted},
	{"PodUnavailableBudget", v1beta1, namespace + "/" + alphaBudget, "spec.protectTotalReplicas", values(nil, 1), whyPromoted},
}

var expectedAlphaDifferences = []allowedDifference{
	{"DaemonSet", v1alpha1, namespace + "/" + alphaDaemonSet, "status.conditions", progressingComplete, whyProgressing},
	{"DaemonSet", v1alpha1, namespace + "/" + betaDaemonSet, "status.conditions", progressingComplete, whyProgressing},
	{"PodUnavailableBudget", v1alpha1, namespace + "/" + alphaBudget, "status.totalReplicas", values(-1, 1), whyCarriedTotal},

	// partitionedScaling: true reads as progressive-create-pod "true", which a v1beta1
	// object written with the field alone does not have.
	{"DaemonSet", v1alpha1, namespace + "/" + betaDaemonSet, reservedAlpha,
		reserved(map[string]string{"metadata.annotations[daemonset.kruise.io/progressive-create-pod]": "null"}), whyReserved},
	{"PodUnavailableBudget", v1alpha1, namespace + "/" + betaBudget, "metadata.annotations[kruise.io/pub-protect-operations]",
		values(nil, "DELETE,EVICT"), whyNotCarried},
	{"PodUnavailableBudget", v1alpha1, namespace + "/" + betaBudget, "metadata.annotations[pub.kruise.io/protect-total-replicas]",
		values(nil, "1"), whyNotCarried},
	// ignoredPodSelector has no v1alpha1 form at all (OpenKruise drops it from its
	// v1alpha1 view); the carriers were not on the v1beta1 object.
	{"PodUnavailableBudget", v1alpha1, namespace + "/" + betaBudget, reservedAlpha,
		reserved(map[string]string{
			"metadata.annotations[kruise.io/pub-protect-operations]":     "null",
			"metadata.annotations[pub.kruise.io/protect-total-replicas]": "null",
			"spec.ignoredPodSelector":                                    `{"matchLabels":{"takeover.bosun.dev/unprotected":"true"}}`,
		}), whyReserved},
	// excludePreparingDelete: true reads as the label "true", which a v1beta1 CloneSet
	// written with the field alone does not have.
	{"CloneSet", v1alpha1, namespace + "/" + drainBeta, excludeDeleteLabelPath, values(nil, "true"), whyExcludeLabel},
	{"CloneSet", v1alpha1, namespace + "/" + drainBeta, reservedAlpha,
		reserved(map[string]string{excludeDeleteLabelPath: "null"}), whyReserved},
	// The snapshot of the recreated container is a v1beta1 status field; its v1alpha1
	// carrier annotation was not on the v1beta1 object.
	{"ContainerRecreateRequest", v1alpha1, namespace + "/" + recreate, reservedAlpha,
		reserved(map[string]string{"metadata.annotations[crr.apps.kruise.io/sync-container-statuses]": "null"}), whyReserved},
}

// expected18AlphaDifferences are those of the takeover from OpenKruise 1.8, whose objects
// are all v1alpha1 and are read in v1alpha1 through bosun's conversion once its migrator
// has stored them as v1beta1.
var expected18AlphaDifferences = []allowedDifference{
	{"DaemonSet", v1alpha1, namespace + "/" + alphaDaemonSet, "status.conditions", progressingComplete, whyProgressing},
}

// failuresCleared are the possible differences of the CloneSets named, in each version:
// status.conditions losing the FailedUpdate and FailedScale conditions OpenKruise left.
func failuresCleared(cloneSets []string, versions ...string) map[string][]allowedDifference {
	out := map[string][]allowedDifference{}
	for _, version := range versions {
		for _, name := range cloneSets {
			out[version] = append(out[version], allowedDifference{"CloneSet", version, namespace + "/" + name,
				"status.conditions", failureConditionsDropped, whyFailureCleared})
		}
	}
	return out
}

// failureConditionsDropped accepts conditions that lost one or more FailedUpdate or
// FailedScale conditions and are otherwise the same.
func failureConditionsDropped(b, a any) error {
	before, _ := b.([]any)
	var kept []any
	for _, c := range before {
		if t, _ := c.(map[string]any)["type"].(string); t != "FailedUpdate" && t != "FailedScale" {
			kept = append(kept, c)
		}
	}
	if len(kept) == len(before) {
		return fmt.Errorf("want FailedUpdate or FailedScale conditions removed")
	}
	if compact(normalize(kept)) != compact(normalize(a)) {
		return fmt.Errorf("want only FailedUpdate or FailedScale conditions removed")
	}
	return nil
}

// values accepts exactly these two values (nil: unset).
func values(before, after any) func(any, any) error {
	return func(b, a any) error {
		if compact(b) != compact(before) || compact(a) != compact(after) {
			return fmt.Errorf("want %s -> %s", compact(before), compact(after))
		}
		return nil
	}
}

// progressingComplete accepts an unset status.conditions becoming one Progressing
// condition, True, reason RolloutComplete.
func progressingComplete(b, a any) error {
	conditions, ok := a.([]any)
	if b != nil || !ok || len(conditions) != 1 {
		return fmt.Errorf("want no conditions becoming one Progressing condition")
	}
	c, _ := conditions[0].(map[string]any)
	if c["type"] != "Progressing" || c["status"] != "True" || c["reason"] != "RolloutComplete" {
		return fmt.Errorf("want Progressing True RolloutComplete")
	}
	return nil
}

// reserved accepts bosun's reserved annotation appearing with exactly these items, each
// restoring the given JSON.
func reserved(restore map[string]string) func(any, any) error {
	return func(b, a any) error {
		value, ok := a.(string)
		if b != nil || !ok {
			return fmt.Errorf("want the annotation to appear")
		}
		var record map[string]struct {
			Restore json.RawMessage `json:"restore"`
		}
		if err := json.Unmarshal([]byte(value), &record); err != nil {
			return fmt.Errorf("not a reserved record: %w", err)
		}
		got := map[string]string{}
		for item, entry := range record {
			got[item] = compact(entry.Restore)
		}
		if !maps.Equal(got, restore) {
			return fmt.Errorf("want items %s", strings.Join(slices.Sorted(maps.Keys(restore)), ", "))
		}
		return nil
	}
}

// compact is v as compact JSON; raw JSON is re-encoded.
func compact(v any) string {
	if raw, ok := v.(json.RawMessage); ok {
		var decoded any
		if err := json.Unmarshal(raw, &decoded); err != nil {
			return string(raw)
		}
		v = decoded
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}
