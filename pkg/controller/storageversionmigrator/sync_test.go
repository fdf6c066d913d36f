package storageversionmigrator

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
)

// A CRD that is not labelled as bosun's is never migrated, however ready it is and however
// long it waits; the same CRD with the label is.
func TestUnmanagedCRDsAreNeverMigrated(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"no labels", nil, false},
		{"managed by someone else", map[string]string{ManagedByLabel: "Helm"}, false},
		{"other labels only", map[string]string{"app.kubernetes.io/name": "kruise"}, false},
		{"managed by bosun", map[string]string{ManagedByLabel: ManagedByValue}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, WithSettleDelay(0))
			crd := newCRD(dsCRD)
			crd.SetLabels(tc.labels)
			f.addCRD(crd)
			keys := f.addObjects(dsCRD, 3)
			ds := kinds[dsCRD].resource

			for range 2 {
				if err := f.sync(dsCRD); err != nil {
					t.Fatalf("sync: %v", err)
				}
				f.clock.Step(time.Hour)
				f.cacheCRD(dsCRD)
			}

			if !tc.want {
				if n := f.lists(ds); n != 0 {
					t.Errorf("%d LISTs of %s, want none", n, ds)
				}
				if w := f.writes(ds); len(w) != 0 {
					t.Errorf("writes to %s: %v, want none", ds, w)
				}
				if w := f.writes(CRDResource); len(w) != 0 {
					t.Errorf("writes to the CRD: %v, want none", w)
				}
				if got := f.storedVersions(dsCRD); !slices.Equal(got, []string{"v1alpha1", "v1beta1"}) {
					t.Errorf("storedVersions %v, want them untouched", got)
				}
				if e := f.events(); len(e) != 0 {
					t.Errorf("events %v, want none", e)
				}
				if d := f.queue.Delayed(); len(d) != 0 {
					t.Errorf("queued again %v, want nothing", d)
				}
				return
			}
			if got := f.statusUpdates(ds); !slices.Equal(got, keys) {
				t.Errorf("status updates of %v, want %v", got, keys)
			}
			if got := f.storedVersions(dsCRD); !slices.Equal(got, []string{"v1beta1"}) {
				t.Errorf("storedVersions %v, want [v1beta1]", got)
			}
		})
	}
}

// Until the API server can serve the pass (v1beta1 the served storage version, the CRD
// established, a Webhook CRD's caBundle written) the sync sends nothing and keeps no timer:
// the CRD's own update brings it back. Once it can, the pass runs.
func TestWaitsUntilTheAPIServerCanServeThePass(t *testing.T) {
	for _, tc := range []struct {
		name    string
		crd     string
		unready func(crd *unstructured.Unstructured)
	}{
		{"not established", dsCRD, func(crd *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(crd.Object, []any{
				map[string]any{"type": "NamesAccepted", "status": "True"},
				map[string]any{"type": "Established", "status": "False"},
			}, "status", "conditions")
		}},
		{"no conditions yet", niCRD, func(crd *unstructured.Unstructured) {
			unstructured.RemoveNestedField(crd.Object, "status", "conditions")
		}},
		{"storage still v1alpha1", niCRD, func(crd *unstructured.Unstructured) { setStorage(crd, "v1alpha1") }},
		{"v1beta1 stored but not served", dsCRD, func(crd *unstructured.Unstructured) {
			versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
			versions[1].(map[string]any)["served"] = false
			_ = unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions")
		}},
		{"Webhook conversion without caBundle", dsCRD, func(crd *unstructured.Unstructured) {
			unstructured.RemoveNestedField(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
		}},
		{"Webhook conversion with an empty caBundle", "podunavailablebudgets.policy.kruise.io", func(crd *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(crd.Object, "", "spec", "conversion", "webhook", "clientConfig", "caBundle")
		}},
		{"Webhook conversion without a webhook", "containerrecreaterequests.apps.kruise.io", func(crd *unstructured.Unstructured) {
			unstructured.RemoveNestedField(crd.Object, "spec", "conversion", "webhook")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			resource := kinds[tc.crd].resource
			broken := newCRD(tc.crd)
			tc.unready(broken)
			f.addCRD(broken)
			keys := f.addObjects(tc.crd, 2)

			for range 2 {
				if err := f.sync(tc.crd); err != nil {
					t.Fatalf("sync: %v", err)
				}
				if n := f.lists(resource); n != 0 {
					t.Fatalf("%d LISTs of %s while the CRD is not ready, want none", n, resource)
				}
				if w := f.writes(CRDResource); len(w) != 0 {
					t.Fatalf("writes to the CRD while it is not ready: %v", w)
				}
				if d := f.queue.Delayed(); len(d) != 0 {
					t.Fatalf("queued again %v while the CRD is not ready, want nothing", d)
				}
				f.clock.Step(5 * time.Minute)
			}

			// The CRD's update brings it back; a new storage version has its settle delay
			// still to wait, the others waited it meanwhile.
			f.updateCRD(newCRD(tc.crd))
			for range 2 {
				if err := f.sync(tc.crd); err != nil {
					t.Fatalf("sync once ready: %v", err)
				}
				f.clock.Step(DefaultSettleDelay)
				f.cacheCRD(tc.crd)
			}
			if got := f.statusUpdates(resource); !slices.Equal(got, keys) {
				t.Errorf("status updates of %v once ready, want %v", got, keys)
			}
			if got := f.storedVersions(tc.crd); !slices.Equal(got, []string{"v1beta1"}) {
				t.Errorf("storedVersions %v once ready, want [v1beta1]", got)
			}
		})
	}
}

// A CRD without conversion webhook (strategy None) has no caBundle to wait for.
func TestNoneConversionNeedsNoCABundle(t *testing.T) {
	f := newFixture(t, WithSettleDelay(0))
	crd := newCRD("imagepulljobs.apps.kruise.io")
	if s, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy"); s != "None" {
		t.Fatalf("test CRD has conversion strategy %q, want None", s)
	}
	f.addCRD(crd)
	keys := f.addObjects("imagepulljobs.apps.kruise.io", 2)
	if err := f.sync("imagepulljobs.apps.kruise.io"); err != nil {
		t.Fatal(err)
	}
	if got := f.statusUpdates(kinds["imagepulljobs.apps.kruise.io"].resource); !slices.Equal(got, keys) {
		t.Errorf("status updates of %v, want %v", got, keys)
	}
}

// The pass waits the settle delay from the moment this process first saw v1beta1 as the
// storage version, and looks again when it is over; a new storage version or a new CRD
// starts the delay again.
func TestSettleDelay(t *testing.T) {
	ds := kinds[dsCRD].resource

	t.Run("default two minutes", func(t *testing.T) {
		f := newFixture(t)
		f.addCRD(newCRD(dsCRD))
		f.addObjects(dsCRD, 2)
		f.syncWaits(dsCRD, 2*time.Minute)

		f.clock.Step(90 * time.Second)
		f.syncWaits(dsCRD, 30*time.Second)

		f.clock.Step(30 * time.Second)
		if err := f.sync(dsCRD); err != nil {
			t.Fatal(err)
		}
		if n := f.lists(ds); n != 1 {
			t.Errorf("%d LISTs once the delay is over, want 1", n)
		}
		if got := f.storedVersions(dsCRD); !slices.Equal(got, []string{"v1beta1"}) {
			t.Errorf("storedVersions %v, want [v1beta1]", got)
		}
	})

	t.Run("WithSettleDelay", func(t *testing.T) {
		f := newFixture(t, WithSettleDelay(10*time.Second))
		f.addCRD(newCRD(dsCRD))
		f.syncWaits(dsCRD, 10*time.Second)
	})

	t.Run("counted from the first sight of storage v1beta1, not from readiness", func(t *testing.T) {
		f := newFixture(t)
		crd := newCRD(dsCRD)
		unstructured.RemoveNestedField(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
		f.addCRD(crd)
		f.addObjects(dsCRD, 1)
		if err := f.sync(dsCRD); err != nil {
			t.Fatal(err)
		}
		f.clock.Step(90 * time.Second)
		f.updateCRD(newCRD(dsCRD))
		f.syncWaits(dsCRD, 30*time.Second)
	})

	t.Run("storage version changed back and forth", func(t *testing.T) {
		f := newFixture(t)
		f.addCRD(newCRD(dsCRD))
		f.syncWaits(dsCRD, 2*time.Minute)
		f.clock.Step(90 * time.Second)

		back := newCRD(dsCRD)
		setStorage(back, "v1alpha1")
		f.updateCRD(back)
		f.queue.Reset()
		if err := f.sync(dsCRD); err != nil {
			t.Fatal(err)
		}
		if d := f.queue.Delayed(); len(d) != 0 {
			t.Fatalf("queued again %v while v1alpha1 is the storage version", d)
		}

		f.updateCRD(newCRD(dsCRD))
		f.syncWaits(dsCRD, 2*time.Minute)
	})

	t.Run("CRD created again", func(t *testing.T) {
		f := newFixture(t)
		f.addCRD(newCRD(dsCRD))
		f.syncWaits(dsCRD, 2*time.Minute)
		f.clock.Step(90 * time.Second)

		again := newCRD(dsCRD)
		again.SetUID("another-uid")
		f.updateCRD(again)
		f.syncWaits(dsCRD, 2*time.Minute)
	})

	t.Run("CRD deleted and created again", func(t *testing.T) {
		f := newFixture(t)
		f.addCRD(newCRD(dsCRD))
		f.syncWaits(dsCRD, 2*time.Minute)
		f.clock.Step(90 * time.Second)

		if err := f.crds.Informer().GetIndexer().Delete(newCRD(dsCRD)); err != nil {
			t.Fatal(err)
		}
		if err := f.sync(dsCRD); err != nil {
			t.Fatal(err)
		}
		if err := f.crds.Informer().GetIndexer().Add(newCRD(dsCRD)); err != nil {
			t.Fatal(err)
		}
		f.syncWaits(dsCRD, 2*time.Minute)
	})
}

// syncWaits syncs the CRD and checks that it sent nothing and asked to be looked at again
// after exactly delay.
func (f *fixture) syncWaits(name string, delay time.Duration) {
	f.t.Helper()
	f.queue.Reset()
	if err := f.sync(name); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
	if n := f.lists(kinds[name].resource); n != 0 {
		f.t.Errorf("%d LISTs before the settle delay is over, want none", n)
	}
	if w := f.writes(CRDResource); len(w) != 0 {
		f.t.Errorf("writes to the CRD before the settle delay is over: %v", w)
	}
	want := []queuetest.Delayed{{Key: name, Delay: delay}}
	if got := f.queue.Delayed(); !slices.Equal(got, want) {
		f.t.Errorf("queued again %v, want %v", got, want)
	}
}

// A CRD whose storedVersions hold only v1beta1 (or nothing) has nothing to migrate: no
// LIST, no write, no event. One holding only v1alpha1 is migrated.
func TestNothingToMigrate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stored []string
		want   bool
	}{
		{"already v1beta1", []string{"v1beta1"}, false},
		{"no stored versions", nil, false},
		{"only v1alpha1", []string{"v1alpha1"}, true},
		{"v1beta1 first", []string{"v1beta1", "v1alpha1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, WithSettleDelay(0))
			crd := newCRD(niCRD)
			setStoredVersions(crd, tc.stored...)
			f.addCRD(crd)
			f.addObjects(niCRD, 2)
			if err := f.sync(niCRD); err != nil {
				t.Fatal(err)
			}
			ni := kinds[niCRD].resource
			if tc.want {
				if got := f.storedVersions(niCRD); !slices.Equal(got, []string{"v1beta1"}) {
					t.Errorf("storedVersions %v, want [v1beta1]", got)
				}
				if n := f.lists(ni); n != 1 {
					t.Errorf("%d LISTs, want 1", n)
				}
				return
			}
			if n := f.lists(ni); n != 0 {
				t.Errorf("%d LISTs, want none", n)
			}
			if w := append(f.writes(ni), f.writes(CRDResource)...); len(w) != 0 {
				t.Errorf("writes %v, want none", w)
			}
			if e := f.events(); len(e) != 0 {
				t.Errorf("events %v, want none", e)
			}
			if got := f.storedVersions(niCRD); !slices.Equal(got, tc.stored) {
				t.Errorf("storedVersions %v, want %v untouched", got, tc.stored)
			}
		})
	}
}

// A CRD that is not in the cache (deleted, or its label removed) is left alone.
func TestMissingCRD(t *testing.T) {
	f := newFixture(t, WithSettleDelay(0))
	if err := f.sync(dsCRD); err != nil {
		t.Fatal(err)
	}
	if a := f.client.Actions(); len(a) != 0 {
		t.Errorf("requests %v for a CRD the cache does not hold, want none", a)
	}
}
