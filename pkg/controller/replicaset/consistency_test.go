package replicaset

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/features"
)

func TestCompareResourceVersions(t *testing.T) {
	tests := []struct {
		a, b    string
		want    int
		wantErr bool
	}{
		{a: "9", b: "10", want: -1},
		{a: "10", b: "9", want: 1},
		{a: "123", b: "123", want: 0},
		{a: "124", b: "123", want: 1},
		{a: "", b: "1", wantErr: true},
		{a: "1", b: "", wantErr: true},
		{a: "0", b: "1", wantErr: true},
		{a: "012", b: "12", wantErr: true},
		{a: "12a", b: "12", wantErr: true},
		{a: "-1", b: "1", wantErr: true},
	}
	for _, tc := range tests {
		got, err := compareResourceVersions(tc.a, tc.b)
		if (err != nil) != tc.wantErr || (err == nil && got != tc.want) {
			t.Errorf("compare(%q, %q) = %d, %v; want %d, error %v", tc.a, tc.b, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestWriteTracker(t *testing.T) {
	registerMetrics()
	podsRead, rsRead := "0", "0"
	newTracker := func() *writeTracker {
		return newWriteTracker(func() string { return podsRead }, func() string { return rsRead })
	}
	rsRef := func(uid string) *metav1.OwnerReference {
		return &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "a", UID: types.UID("uid-" + uid), Controller: ptr.To(true)}
	}
	pod := func(rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: rv}}
	}

	tests := []struct {
		name            string
		record          func(w *writeTracker)
		podsRead, rsRev string
		wantErr         string
		wantRecordKept  bool
	}{
		{
			name:           "pod cache behind our create",
			record:         func(w *writeTracker) { w.podWritten(pod("20"), rsRef("a")) },
			podsRead:       "19",
			wantErr:        "the pods cache is at resourceVersion 19, behind this controller's own write at 20; waiting for it to catch up",
			wantRecordKept: true,
		},
		{
			name:     "pod cache caught up: record dropped",
			record:   func(w *writeTracker) { w.podWritten(pod("20"), rsRef("a")) },
			podsRead: "20",
		},
		{
			name: "replicaset cache behind our status write",
			record: func(w *writeTracker) {
				w.replicaSetWritten(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a", ResourceVersion: "31"}})
			},
			podsRead:       "100",
			rsRev:          "30",
			wantErr:        "the replicasets.apps cache is at resourceVersion 30, behind this controller's own write at 31; waiting for it to catch up",
			wantRecordKept: true,
		},
		{
			name: "concurrent creates out of order: the newest counts",
			record: func(w *writeTracker) {
				w.podWritten(pod("25"), rsRef("a"))
				w.podWritten(pod("21"), rsRef("a"))
			},
			podsRead:       "24",
			wantErr:        "own write at 25",
			wantRecordKept: true,
		},
		{
			name: "a re-created ReplicaSet replaces the record",
			record: func(w *writeTracker) {
				w.podWritten(pod("50"), rsRef("a"))
				w.podWritten(pod("10"), rsRef("a-new"))
			},
			podsRead: "20",
		},
		{
			name:     "uncomparable versions never block",
			record:   func(w *writeTracker) { w.podWritten(pod("20"), rsRef("a")) },
			podsRead: "",
		},
		{
			name:     "empty written version is not recorded",
			record:   func(w *writeTracker) { w.podWritten(pod(""), rsRef("a")) },
			podsRead: "1",
		},
		{
			name: "writes for other owners are not recorded",
			record: func(w *writeTracker) {
				w.podWritten(pod("20"), nil)
				ref := rsRef("a")
				ref.Kind = "StatefulSet"
				w.podWritten(pod("20"), ref)
				ref = rsRef("a")
				ref.APIVersion = "extensions/v1beta1x"
				w.podWritten(pod("20"), ref)
			},
			podsRead: "1",
		},
		{
			name: "forget drops the record",
			record: func(w *writeTracker) {
				w.podWritten(pod("20"), rsRef("a"))
				w.forget("ns/a")
			},
			podsRead: "1",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			podsRead, rsRead = tc.podsRead, tc.rsRev
			if rsRead == "" {
				rsRead = "1000"
			}
			w := newTracker()
			tc.record(w)
			err := w.ensureObserved("ns/a")
			if tc.wantErr == "" && err != nil {
				t.Fatalf("ensureObserved: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("ensureObserved error = %v, want one containing %q", err, tc.wantErr)
			}
			// The worker loop must log the wait as what it is, not as a failed sync.
			if reason, wait := queue.IsNormalWait(err); tc.wantErr != "" && (!wait || reason != queue.WaitCacheBehind) {
				t.Errorf("ensureObserved error classified as (%q, %v), want a %s wait", reason, wait, queue.WaitCacheBehind)
			}
			if _, kept := w.records["ns/a"]; kept != tc.wantRecordKept {
				t.Errorf("record kept = %v, want %v", kept, tc.wantRecordKept)
			}
		})
	}
}

func TestWriteTrackerCountsSkips(t *testing.T) {
	registerMetrics()
	w := newWriteTracker(func() string { return "5" }, func() string { return "5" })
	before := staleSkips(t, "", "pods")
	w.wrote("ns/a", "uid", podsResource, "6")
	for range 2 {
		if err := w.ensureObserved("ns/a"); err == nil {
			t.Fatal("expected a stale-cache error")
		}
	}
	if got := staleSkips(t, "", "pods") - before; got != 2 {
		t.Errorf("stale skips counted %v, want 2", got)
	}
}

func staleSkips(t *testing.T, group, resource string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(staleSyncSkips.WithLabelValues(group, resource))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSyncWaitsForOwnWrites runs the guard end to end: the pods the controller creates are
// recorded through the pod control write hook, and the next sync waits until the pod
// cache has reached them.
func TestSyncWaitsForOwnWrites(t *testing.T) {
	for _, gateOn := range []bool{true, false} {
		t.Run(map[bool]string{true: "gate on", false: "gate off"}[gateOn], func(t *testing.T) {
			rs := newRS("a", 2)
			f := newFixture(t, fixtureOption{gates: map[featuregate.Feature]bool{features.StaleControllerConsistencyReplicaSet: gateOn}},
				[]*appsv1.ReplicaSet{rs}, nil)
			// The informers have synced up to resourceVersion 50.
			f.podIndexer.Bookmark("50")
			f.rsIndexer.Bookmark("50")
			reactor := &podCreateReactor{} // created pods get resourceVersions 101 and 102
			reactor.install(f.client)
			f.client.PrependReactor("update", "replicasets", func(action clienttesting.Action) (bool, runtime.Object, error) {
				written := action.(clienttesting.UpdateAction).GetObject().(*appsv1.ReplicaSet).DeepCopy()
				written.ResourceVersion = "103"
				return true, written, nil
			})
			if err := f.c.syncReplicaSet(f.ctx, "ns/a"); err != nil {
				t.Fatalf("first sync: %v", err)
			}

			// The caches still show none of the writes.
			f.client.ClearActions()
			err := f.c.syncReplicaSet(f.ctx, "ns/a")
			if !gateOn {
				if err != nil {
					t.Fatalf("with the gate off the guard must not exist: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "the pods cache") {
				t.Fatalf("second sync error = %v, want the stale pod cache", err)
			}
			if n := len(f.client.Actions()); n != 0 {
				t.Errorf("a skipped sync sent %d requests", n)
			}

			// The informers deliver the created pods and the status write.
			for _, pod := range reactor.pods {
				f.cacheAdd(f.podIndexer, pod)
			}
			err = f.c.syncReplicaSet(f.ctx, "ns/a")
			if err == nil || !strings.Contains(err.Error(), "the replicasets.apps cache") {
				t.Fatalf("third sync error = %v, want the stale ReplicaSet cache", err)
			}
			written := rs.DeepCopy()
			written.ResourceVersion = "103"
			if err := f.rsIndexer.Update(written); err != nil {
				t.Fatal(err)
			}
			if err := f.c.syncReplicaSet(f.ctx, "ns/a"); err != nil {
				t.Fatalf("sync after the caches caught up: %v", err)
			}
		})
	}
}
