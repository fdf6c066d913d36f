package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestParseFrom(t *testing.T) {
	got, err := parseFrom("1.9,1.8")
	if err != nil || len(got) != 2 || got[0].name != "1.9" || got[1].name != "1.8" {
		t.Errorf("parseFrom(1.9,1.8) = %v, %v", got, err)
	}
	if got, err := parseFrom(" 1.8 "); err != nil || len(got) != 1 || got[0].release != framework.Kruise18 {
		t.Errorf("parseFrom(1.8) = %v, %v", got, err)
	}
	for _, bad := range []string{"1.7", "", "1.8,1.8"} {
		if _, err := parseFrom(bad); err == nil {
			t.Errorf("parseFrom(%q) was accepted", bad)
		}
	}
}

// Every starting point writes its objects in versions its CRDs serve, in eras whose storage
// they serve, reads through the version they store, compares in versions it recorded, and
// its self-check names objects it creates.
func TestStartingPointsAreConsistent(t *testing.T) {
	for _, sp := range startingPoints {
		if !slices.Contains(sp.served, sp.storage) {
			t.Errorf("%s: stores %s, which it does not serve", sp.name, sp.storage)
		}
		for _, era := range sp.eras {
			if !slices.Contains(sp.served, era.storage) {
				t.Errorf("%s: an era stores %s, which the CRDs do not serve", sp.name, era.storage)
			}
			for _, w := range slices.DeleteFunc(era.objects(), func(w workload) bool { return w.kind == "ContainerRecreateRequest" }) {
				version := manifestVersion(w.manifest)
				if !slices.Contains(sp.served, version) {
					t.Errorf("%s: %s %s is written in %s, which the CRDs do not serve", sp.name, w.kind, w.name, version)
				}
				if !strings.Contains(w.manifest, "kind: "+w.kind+"\n") || !strings.Contains(w.manifest, "name: "+w.name+"\n") {
					t.Errorf("%s: the manifest of %s %s is not that object:\n%s", sp.name, w.kind, w.name, w.manifest)
				}
			}
		}
		for version := range sp.expected {
			if !slices.Contains(sp.compared, version) {
				t.Errorf("%s: expects differences in %s, which it does not compare", sp.name, version)
			}
			for _, d := range sp.expected[version] {
				if d.Version != version {
					t.Errorf("%s: the expected difference %s %s %s is listed under %s", sp.name, d.Kind, d.Object, d.Path, version)
				}
			}
		}
		for version, possible := range sp.possible {
			for _, d := range possible {
				if !slices.ContainsFunc(sp.workloads(), func(w workload) bool { return d.Kind == w.kind && d.Object == namespace+"/"+w.name }) {
					t.Errorf("%s: the possible difference names %s %s, which it does not create", sp.name, d.Kind, d.Object)
				}
			}
			if !slices.Contains(sp.compared, version) {
				t.Errorf("%s: allows differences in %s, which it does not compare", sp.name, version)
			}
			for _, d := range possible {
				if d.Version != version {
					t.Errorf("%s: the possible difference %s %s %s is listed under %s", sp.name, d.Kind, d.Object, d.Path, version)
				}
				if slices.ContainsFunc(sp.expected[version], func(e allowedDifference) bool { return e.Kind == d.Kind && e.Object == d.Object && e.Path == d.Path }) {
					t.Errorf("%s: %s %s %s is both expected and possible", sp.name, d.Kind, d.Object, d.Path)
				}
			}
		}
		for _, version := range sp.compared {
			if !slices.Contains(sp.served, version) {
				t.Errorf("%s: compares in %s, which OpenKruise does not serve", sp.name, version)
			}
		}
		for _, c := range sp.cloneSets() {
			if version := manifestVersion(c.manifest()); version != c.version {
				t.Errorf("%s: CloneSet %s is written in %s, want %s", sp.name, c.name, version, c.version)
			}
			if c.progressDeadline && !slices.Contains(sp.served, v1beta1) {
				t.Errorf("%s: CloneSet %s sets progressDeadlineSeconds, which OpenKruise before 1.9 does not have", sp.name, c.name)
			}
		}
		names := map[string]bool{}
		for _, w := range sp.workloads() {
			names[w.kind+"/"+w.name] = true
		}
		if !names["PodUnavailableBudget/"+sp.sabotageBudget] || !names["DaemonSet/"+sp.victimDaemonSet] || !names["DaemonSet/"+alphaDaemonSet] {
			t.Errorf("%s: the self-check and the last rollout name objects it does not create", sp.name)
		}
	}
}

// The objects the runs require stored as v1alpha1: from 1.9 those written before the
// storage went to v1beta1, from 1.8 every one the run writes.
func TestStoredAsAlpha(t *testing.T) {
	want19 := []string{
		"apps.kruise.io/daemonsets/takeover/agent-alpha",
		"policy.kruise.io/podunavailablebudgets/takeover/budget-alpha",
		"apps.kruise.io/imagepulljobs/takeover/pull-alpha",
		"apps.kruise.io/clonesets/takeover/claims-alpha",
	}
	if got := from19.storedAsAlpha(); !slices.Equal(got, want19) {
		t.Errorf("from 1.9: %v, want %v", got, want19)
	}
	if got := from18.storedAsAlpha(); len(got) != len(from18.workloads()) {
		t.Errorf("from 1.8: %v, want all of its %d objects", got, len(from18.workloads()))
	}
}

func manifestVersion(manifest string) string {
	for line := range strings.Lines(manifest) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "apiVersion: "); ok {
			_, version, _ := strings.Cut(v, "/")
			return version
		}
	}
	return ""
}
