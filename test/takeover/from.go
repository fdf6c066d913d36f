package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// startingPoint is an OpenKruise release a takeover starts from, and everything the run
// does differently for it: the rest of the run reads these fields and never the release.
type startingPoint struct {
	// name is how -from and the summary call it.
	name    string
	release framework.KruiseRelease
	// served are the versions the release's CRDs of the seven kinds serve, storage the one
	// they store as installed. While OpenKruise runs, the run lists, reads and waits
	// through storage, which every object can be read in.
	served  []string
	storage string
	// webhookConversion says that the release's CRDs convert (some of) the seven kinds
	// through its manager's webhook, which the hand-over re-points at bosun (docs/install.md,
	// step 4). Without it, no CRD may convert through a webhook and there is nothing to
	// re-point.
	webhookConversion bool
	// eras are the objects the run creates through OpenKruise, era by era.
	eras []era
	// compared are the versions the baseline records and bosun's state is compared in;
	// expected the differences allowed in each of them, each required to occur, possible
	// those that may occur or not (expected.go).
	compared []string
	expected map[string][]allowedDifference
	possible map[string][]allowedDifference
	// sabotageBudget is the budget the self-check of the comparison plants an annotation
	// on (through storage), victimDaemonSet the DaemonSet whose pod it deletes.
	sabotageBudget, victimDaemonSet string
}

// era is what the run creates while the CRDs store one version: a DaemonSet, rolled out
// before the rest, then the others (budgets, pull jobs), the CloneSets, each rolled out and
// then set off into the state it is handed over in, then, with recreate, a
// ContainerRecreateRequest of the DaemonSet's pod; all settle before the next era.
type era struct {
	storage   string
	daemonSet workload
	others    []workload
	cloneSets []cloneSetCase
	recreate  bool
}

// objects are the era's objects, in the order the run creates them.
func (e era) objects() []workload {
	out := append([]workload{e.daemonSet}, e.others...)
	for _, c := range e.cloneSets {
		out = append(out, c.workload())
	}
	if e.recreate {
		out = append(out, workload{kind: "ContainerRecreateRequest", name: recreate})
	}
	return out
}

// workload is one object the run creates, as a user writes it.
type workload struct {
	kind, name, manifest string
}

// from19 is OpenKruise 1.9 on a cluster that ran an OpenKruise before 1.9: its CRDs store
// v1beta1 and convert CloneSets, DaemonSets and ContainerRecreateRequests through
// kruise-manager's webhook; the v1alpha1 objects are written while the CRDs store v1alpha1
// (as up to 1.8) and stay stored so, the v1beta1 objects after 1.9's CRDs made v1beta1 the
// storage version.
var from19 = startingPoint{
	name:              "1.9",
	release:           framework.Kruise19,
	served:            []string{v1alpha1, v1beta1},
	storage:           v1beta1,
	webhookConversion: true,
	eras: []era{
		{
			storage:   v1alpha1,
			daemonSet: workload{"DaemonSet", alphaDaemonSet, alphaDaemonSetYAML},
			others: []workload{
				{"PodUnavailableBudget", alphaBudget, alphaBudgetYAML},
				{"ImagePullJob", alphaPullJob, alphaPullJobYAML},
			},
			cloneSets: []cloneSetCase{
				{name: claimsAlpha, version: v1alpha1, shape: partitionedRecreate, progressDeadline: true},
			},
		},
		{
			storage:   v1beta1,
			daemonSet: workload{"DaemonSet", betaDaemonSet, betaDaemonSetYAML},
			others: []workload{
				{"PodUnavailableBudget", betaBudget, betaBudgetYAML},
				{"ImagePullJob", betaPullJob, betaPullJobYAML},
				{"ImageListPullJob", listPullJob, listPullJobYAML},
			},
			cloneSets: []cloneSetCase{
				{name: inPlaceBeta, version: v1beta1, shape: heldInPlaceUpdate},
				{name: drainBeta, version: v1beta1, shape: heldDeletion},
			},
			recreate: true,
		},
	},
	compared:        []string{v1alpha1, v1beta1},
	expected:        map[string][]allowedDifference{v1alpha1: expectedAlphaDifferences, v1beta1: expectedBetaDifferences},
	possible:        failuresCleared([]string{claimsAlpha, inPlaceBeta, drainBeta}, v1alpha1, v1beta1),
	sabotageBudget:  betaBudget,
	victimDaemonSet: betaDaemonSet,
}

// from18 is OpenKruise 1.8, whose CRDs of the seven kinds serve and store v1alpha1 alone,
// with no conversion: every object is written, stored and recorded in v1alpha1, and
// v1beta1 appears with bosun's CRDs.
var from18 = startingPoint{
	name:    "1.8",
	release: framework.Kruise18,
	served:  []string{v1alpha1},
	storage: v1alpha1,
	eras: []era{{
		storage:   v1alpha1,
		daemonSet: workload{"DaemonSet", alphaDaemonSet, alphaDaemonSetYAML},
		others: []workload{
			{"PodUnavailableBudget", alphaBudget, alphaBudgetYAML},
			{"ImagePullJob", alphaPullJob, alphaPullJobYAML},
			{"ImageListPullJob", listPullJob, listPullJobYAML},
		},
		cloneSets: []cloneSetCase{
			{name: claimsAlpha, version: v1alpha1, shape: partitionedRecreate},
			{name: inPlaceAlpha, version: v1alpha1, shape: heldInPlaceUpdate},
			{name: drainAlpha, version: v1alpha1, shape: heldDeletion},
		},
		recreate: true,
	}},
	compared:        []string{v1alpha1},
	expected:        map[string][]allowedDifference{v1alpha1: expected18AlphaDifferences},
	possible:        failuresCleared([]string{claimsAlpha, inPlaceAlpha, drainAlpha}, v1alpha1),
	sabotageBudget:  alphaBudget,
	victimDaemonSet: alphaDaemonSet,
}

// startingPoints are the releases -from may name.
var startingPoints = []startingPoint{from19, from18}

// parseFrom returns the starting points a comma-separated -from names, in its order.
func parseFrom(value string) ([]startingPoint, error) {
	var out []startingPoint
	for _, name := range strings.Split(value, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(startingPoints, func(sp startingPoint) bool { return sp.name == name })
		if i < 0 {
			return nil, fmt.Errorf("-from: no OpenKruise release %q to start from (%s)", name, startingPointNames())
		}
		if slices.ContainsFunc(out, func(sp startingPoint) bool { return sp.name == name }) {
			return nil, fmt.Errorf("-from: %s named twice", name)
		}
		out = append(out, startingPoints[i])
	}
	return out, nil
}

func startingPointNames() string {
	var names []string
	for _, sp := range startingPoints {
		names = append(names, sp.name)
	}
	return strings.Join(names, ", ")
}

// workloads are every object the eras create, in order, with the ContainerRecreateRequest.
func (sp startingPoint) workloads() []workload {
	var out []workload
	for _, era := range sp.eras {
		out = append(out, era.objects()...)
	}
	return out
}

// cloneSets are every CloneSet the eras create, in order.
func (sp startingPoint) cloneSets() []cloneSetCase {
	var out []cloneSetCase
	for _, era := range sp.eras {
		out = append(out, era.cloneSets...)
	}
	return out
}

// cloneSet returns the CloneSet of the starting point named name.
func (sp startingPoint) cloneSet(name string) (cloneSetCase, bool) {
	cases := sp.cloneSets()
	i := slices.IndexFunc(cases, func(c cloneSetCase) bool { return c.name == name })
	if i < 0 {
		return cloneSetCase{}, false
	}
	return cases[i], true
}

// storedAsAlpha are the keys in etcd of the objects the run writes while the CRDs store
// v1alpha1: they must still be stored so when the baseline is recorded, or the run would
// not show a takeover of objects stored as v1alpha1.
func (sp startingPoint) storedAsAlpha() []string {
	var keys []string
	for _, era := range sp.eras {
		if era.storage != v1alpha1 {
			continue
		}
		for _, w := range era.objects() {
			k := kindNamed(w.kind)
			keys = append(keys, k.Group+"/"+k.Resource+"/"+namespace+"/"+w.name)
		}
	}
	return keys
}
