package storageversionmigrator

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// Handlers queue the names of bosun's seven CRDs on add, change and delete (tombstones
// included), and nothing else: other CRDs, resyncs, objects of another type.
func TestHandlersQueueOnlyBosunCRDs(t *testing.T) {
	other := newCRD(dsCRD)
	other.SetName("widgets.example.com")
	changed := newCRD(niCRD)
	changed.SetResourceVersion("8")

	for _, tc := range []struct {
		name string
		fire func(f *fixture)
		want []string
	}{
		{"add", func(f *fixture) { f.c.addCRD(f.ctx, newCRD(dsCRD)) }, []string{dsCRD}},
		{"add of another CRD", func(f *fixture) { f.c.addCRD(f.ctx, other) }, nil},
		{"add of another type", func(f *fixture) { f.c.addCRD(f.ctx, &metav1.PartialObjectMetadata{}) }, nil},
		{"update", func(f *fixture) { f.c.updateCRD(f.ctx, newCRD(niCRD), changed) }, []string{niCRD}},
		{"resync", func(f *fixture) { f.c.updateCRD(f.ctx, newCRD(niCRD), newCRD(niCRD)) }, nil},
		{"update of another CRD", func(f *fixture) {
			changedOther := other.DeepCopy()
			changedOther.SetResourceVersion("8")
			f.c.updateCRD(f.ctx, other, changedOther)
		}, nil},
		{"delete", func(f *fixture) { f.c.deleteCRD(f.ctx, newCRD(dsCRD)) }, []string{dsCRD}},
		{"delete tombstone", func(f *fixture) {
			f.c.deleteCRD(f.ctx, cache.DeletedFinalStateUnknown{Key: niCRD, Obj: newCRD(niCRD)})
		}, []string{niCRD}},
		{"delete of another CRD", func(f *fixture) { f.c.deleteCRD(f.ctx, other) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.fire(f)
			if got := f.queue.AddedKeys(); !slices.Equal(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
			if a := f.client.Actions(); len(a) != 0 {
				t.Errorf("handler sent %v, want no request", a)
			}
		})
	}
}

// The informer lists and watches only the CRDs labelled as bosun's.
func TestSelectManagedCRDs(t *testing.T) {
	var opts metav1.ListOptions
	SelectManagedCRDs(&opts)
	selector, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		t.Fatalf("label selector %q: %v", opts.LabelSelector, err)
	}
	for _, tc := range []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{ManagedByLabel: ManagedByValue}, true},
		{map[string]string{ManagedByLabel: ManagedByValue, "other": "x"}, true},
		{map[string]string{ManagedByLabel: "Helm"}, false},
		{nil, false},
	} {
		if got := selector.Matches(labels.Set(tc.labels)); got != tc.want {
			t.Errorf("selector %q matches %v: %t, want %t", opts.LabelSelector, tc.labels, got, tc.want)
		}
	}
}

// Every CRD name the controller migrates is the name of a CRD of the tests' seven kinds,
// plural.group, so that the handlers' filter and the resources agree.
func TestCRDNamesAreTheSevenResources(t *testing.T) {
	if len(CRDNames) != 7 {
		t.Fatalf("%d CRD names, want 7", len(CRDNames))
	}
	for _, name := range CRDNames {
		k, ok := kinds[name]
		if !ok {
			t.Errorf("%s is not one of bosun's resources", name)
			continue
		}
		crd := newCRD(name)
		if got := migratedResource(crd); got != k.resource || got.Resource+"."+got.Group != name {
			t.Errorf("resource of %s is %v, want %v", name, got, k.resource)
		}
	}
}
