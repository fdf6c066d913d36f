package deploymentutil

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestNewRSNewReplicas(t *testing.T) {
	badSurge := rolling(10, pct25, pct25)
	badSurge.Spec.Strategy.RollingUpdate.MaxSurge = ptrTo(intstr.FromString("lots"))
	unknown := rolling(10, pct25, pct25)
	unknown.Spec.Strategy.Type = "BlueGreen"

	tests := []struct {
		name    string
		d       *appsv1.Deployment
		old     int32 // size of one old ReplicaSet
		newRS   *appsv1.ReplicaSet
		want    int32
		wantErr bool
	}{
		{name: "start of rollout: grow by the surge", d: rolling(10, pct25, pct25), old: 10, newRS: replicaSet("new", 1, 0), want: 3},
		{name: "surge used up: unchanged", d: rolling(10, pct25, pct25), old: 10, newRS: replicaSet("new", 1, 3), want: 3},
		{name: "beyond the surge: unchanged, not shrunk", d: rolling(10, pct25, pct25), old: 12, newRS: replicaSet("new", 1, 3), want: 3},
		{name: "room left: grow by it", d: rolling(10, pct25, pct25), old: 6, newRS: replicaSet("new", 1, 5), want: 7},
		{name: "never beyond replicas", d: rolling(10, pct25, pct25), old: 2, newRS: replicaSet("new", 1, 8), want: 10},
		{name: "above replicas is pulled back", d: rolling(10, pct25, pct25), old: 0, newRS: replicaSet("new", 1, 12), want: 10},
		{name: "zero surge waits for old pods to go", d: rolling(10, zero, num(2)), old: 10, newRS: replicaSet("new", 1, 0), want: 0},
		{name: "zero surge after old shrank", d: rolling(10, zero, num(2)), old: 8, newRS: replicaSet("new", 1, 0), want: 2},
		{name: "nil new ReplicaSet counts as 0", d: rolling(10, pct25, pct25), old: 10, newRS: nil, want: 3},
		{name: "Recreate: all at once", d: recreate(5), old: 0, newRS: replicaSet("new", 1, 0), want: 5},
		{name: "invalid maxSurge", d: badSurge, old: 10, newRS: replicaSet("new", 1, 0), wantErr: true},
		{name: "unknown strategy", d: unknown, old: 10, newRS: replicaSet("new", 1, 0), wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			all := []*appsv1.ReplicaSet{replicaSet("old", 0, tc.old)}
			if tc.newRS != nil {
				all = append(all, tc.newRS)
			}
			got, err := NewRSNewReplicas(tc.d, all, tc.newRS)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestIsSaturated(t *testing.T) {
	d := rolling(3, pct25, pct25)
	tests := []struct {
		name string
		rs   *appsv1.ReplicaSet
		want bool
	}{
		{name: "sized, annotated and available", rs: replicaSet("new", 0, 3, available(3), annotated(DesiredReplicasAnnotation, "3")), want: true},
		{name: "nil", rs: nil, want: false},
		{name: "no annotation", rs: replicaSet("new", 0, 3, available(3)), want: false},
		{name: "unparsable annotation", rs: replicaSet("new", 0, 3, available(3), annotated(DesiredReplicasAnnotation, "three")), want: false},
		{name: "annotation from before a scale", rs: replicaSet("new", 0, 3, available(3), annotated(DesiredReplicasAnnotation, "2")), want: false},
		{name: "not all available", rs: replicaSet("new", 0, 3, available(2), annotated(DesiredReplicasAnnotation, "3")), want: false},
		{name: "wrong size", rs: replicaSet("new", 0, 4, available(3), annotated(DesiredReplicasAnnotation, "3")), want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsSaturated(d, tc.rs); got != tc.want {
				t.Errorf("IsSaturated = %v, want %v", got, tc.want)
			}
		})
	}
}

func maxReplicas(v string) rsOption { return annotated(MaxReplicasAnnotation, v) }

func TestProportionalScale(t *testing.T) {
	withStatusReplicas := func(d *appsv1.Deployment, n int32) *appsv1.Deployment {
		d.Status.Replicas = n
		return d
	}
	tests := []struct {
		name   string
		d      *appsv1.Deployment
		active []*appsv1.ReplicaSet
		want   []string
	}{
		{
			// The proportional-scaling acceptance case: 100 old + 20 new (sized for 100+20), scaled to 120 with surge 20:
			// 100×140/120 = 116.67 → 117 and 20×140/120 = 23.33 → 23.
			name: "rollout in flight scaled 100 to 120",
			d:    withStatusReplicas(rolling(120, num(20), zero), 120),
			active: []*appsv1.ReplicaSet{
				replicaSet("old", 0, 100, maxReplicas("120")),
				replicaSet("new", 10, 20, maxReplicas("120")),
			},
			want: []string{"old=117", "new=23"},
		},
		{
			name: "scale down 10 to 5 keeps the ratio",
			d:    rolling(5, pct25, pct25), // allowed 5+2
			active: []*appsv1.ReplicaSet{
				replicaSet("new", 10, 5, maxReplicas("13")),
				replicaSet("old", 0, 8, maxReplicas("13")),
			},
			// old 8×7/13 = 4.31 → 4; new 5×7/13 = 2.69 → 3.
			want: []string{"old=4", "new=3"},
		},
		{
			name: "equal sizes growing: newer first takes the rounding (5.5 rounds away from zero)",
			d:    rolling(11, zero, num(1)),
			active: []*appsv1.ReplicaSet{
				replicaSet("a", 0, 5, maxReplicas("10")),
				replicaSet("b", 10, 5, maxReplicas("10")),
			},
			want: []string{"b=6", "a=5"},
		},
		{
			name: "equal sizes shrinking: older first takes the leftover",
			d:    rolling(9, zero, num(1)),
			active: []*appsv1.ReplicaSet{
				replicaSet("b", 10, 5, maxReplicas("10")),
				replicaSet("a", 0, 5, maxReplicas("10")),
			},
			// 5×9/10 = 4.5 → 5 for both, so the whole -1 is leftover for the first.
			want: []string{"a=4", "b=5"},
		},
		{
			name: "equal sizes and creation times growing: name breaks the tie, reversed",
			d:    rolling(11, zero, num(1)),
			active: []*appsv1.ReplicaSet{
				replicaSet("x-a", 0, 5, maxReplicas("10")),
				replicaSet("x-b", 0, 5, maxReplicas("10")),
			},
			want: []string{"x-b=6", "x-a=5"},
		},
		{
			name: "equal sizes and creation times shrinking: name order",
			d:    rolling(9, zero, num(1)),
			active: []*appsv1.ReplicaSet{
				replicaSet("x-b", 0, 5, maxReplicas("10")),
				replicaSet("x-a", 0, 5, maxReplicas("10")),
			},
			want: []string{"x-a=4", "x-b=5"},
		},
		{
			name: "larger first regardless of age",
			d:    rolling(20, zero, num(1)),
			active: []*appsv1.ReplicaSet{
				replicaSet("old", 0, 3, maxReplicas("10")),
				replicaSet("new", 10, 7, maxReplicas("10")),
			},
			want: []string{"new=14", "old=6"},
		},
		{
			name: "a share never removes more than is left to remove",
			d:    rolling(6, zero, num(1)),
			active: []*appsv1.ReplicaSet{
				replicaSet("a", 0, 8, maxReplicas("16")),
				replicaSet("b", 10, 4, maxReplicas("16")),
			},
			// a 8×6/16 = 3 (-5); b 4×6/16 = 1.5 → 2 would be -2 but only -1 is left.
			want: []string{"a=3", "b=3"},
		},
		{
			name: "a share never adds more than is left to add",
			d:    rolling(13, zero, num(1)),
			active: []*appsv1.ReplicaSet{
				replicaSet("a", 0, 6, maxReplicas("10")),
				replicaSet("b", 10, 4, maxReplicas("5")), // stale annotation
			},
			// a 6×13/10 = 7.8 → 8 (+2); b 4×13/5 = 10.4 → 10 would be +6 but only 1 is left.
			want: []string{"a=8", "b=5"},
		},
		{
			name: "each share rounds to nearest, not down",
			d:    rolling(13, zero, num(1)),
			active: []*appsv1.ReplicaSet{
				replicaSet("a", 0, 6, maxReplicas("11")),
				replicaSet("b", 10, 5, maxReplicas("11")),
			},
			// a 6×13/11 = 7.09 → 7; b 5×13/11 = 5.91 → 6.
			want: []string{"a=7", "b=6"},
		},
		{
			name: "missing annotations fall back to the Deployment's status.replicas",
			d:    withStatusReplicas(rolling(20, zero, num(1)), 10),
			active: []*appsv1.ReplicaSet{
				replicaSet("a", 0, 6),
				replicaSet("b", 10, 4, maxReplicas("0")),
			},
			want: []string{"a=12", "b=8"},
		},
		{
			name: "no annotation and no status: everything is leftover for the largest",
			d:    rolling(20, zero, num(1)),
			active: []*appsv1.ReplicaSet{
				replicaSet("a", 0, 6, maxReplicas("junk")),
				replicaSet("b", 10, 4),
			},
			want: []string{"a=16", "b=4"},
		},
		{
			name: "scale to zero empties every ReplicaSet",
			d:    rolling(0, pct25, pct25),
			active: []*appsv1.ReplicaSet{
				replicaSet("a", 0, 6, maxReplicas("13")),
				replicaSet("b", 10, 4, maxReplicas("13")),
			},
			want: []string{"a=0", "b=0"},
		},
		{
			name: "nothing to add: sizes and order as given, inactive and nil dropped",
			d:    rolling(10, pct25, pct25),
			active: []*appsv1.ReplicaSet{
				replicaSet("small", 10, 4, maxReplicas("13")),
				nil,
				replicaSet("empty", 5, 0, maxReplicas("13")),
				replicaSet("big", 0, 9, maxReplicas("13")),
			},
			want: []string{"small=4", "big=9"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := sizes(ProportionalScale(tc.d, tc.active))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("targets (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProportionalScaleKeepsTotalWithinAllowed(t *testing.T) {
	// Whatever the sizes, after a proportional scale the ReplicaSets together ask for
	// exactly replicas + maxSurge.
	for replicas := int32(1); replicas <= 40; replicas++ {
		d := rolling(replicas, pct25, pct25)
		active := []*appsv1.ReplicaSet{
			replicaSet("a", 0, 7, maxReplicas("13")),
			replicaSet("b", 1, 3, maxReplicas("13")),
			replicaSet("c", 2, 3, maxReplicas("13")),
		}
		var total int32
		for _, tgt := range ProportionalScale(d, active) {
			if tgt.Replicas < 0 {
				t.Fatalf("replicas %d: negative size for %s", replicas, tgt.RS.Name)
			}
			total += tgt.Replicas
		}
		if want := replicas + MaxSurge(d); total != want {
			t.Errorf("replicas %d: total %d, want %d", replicas, total, want)
		}
	}
}

func TestPlanOldReplicaSetsScaleDown(t *testing.T) {
	tests := []struct {
		name  string
		d     *appsv1.Deployment
		olds  []*appsv1.ReplicaSet
		newRS *appsv1.ReplicaSet
		want  []string
	}{
		{
			name:  "healthy old shrinks to minAvailable",
			d:     rolling(10, pct25, pct25), // surge 3, minAvailable 8
			olds:  []*appsv1.ReplicaSet{replicaSet("old", 0, 10, available(10))},
			newRS: replicaSet("new", 10, 3),
			want:  []string{"old=8"},
		},
		{
			name:  "an old ReplicaSet's pods beyond its spec are not counted as available",
			d:     rolling(6, num(1), num(1)), // minAvailable 5
			olds:  []*appsv1.ReplicaSet{replicaSet("old", 0, 4, available(5))},
			newRS: replicaSet("new", 10, 3, available(2)),
			// Its status still counts the pod it is deleting: 4 + 2 = 6 can be counted on,
			// one above the floor, so one more goes, not two.
			want: []string{"old=3"},
		},
		{
			name:  "unavailable new pods leave no budget",
			d:     rolling(10, num(3), zero), // minAvailable 10
			olds:  []*appsv1.ReplicaSet{replicaSet("old", 0, 10, available(10))},
			newRS: replicaSet("new", 10, 3),
			want:  nil,
		},
		{
			name:  "unavailable new pods hold back even the unhealthy cleanup",
			d:     rolling(10, num(3), zero), // minAvailable 10
			olds:  []*appsv1.ReplicaSet{replicaSet("old", 0, 10, available(8))},
			newRS: replicaSet("new", 10, 3),
			// budget 13-10-3 = 0: the old ReplicaSet's 2 unready pods may still turn ready
			// sooner than the 3 new ones.
			want: nil,
		},
		{
			name: "unhealthy old goes first even when newer",
			d:    rolling(10, pct25, pct25),
			olds: []*appsv1.ReplicaSet{
				replicaSet("healthy", 0, 5, available(5)),
				replicaSet("broken", 5, 5, available(0)),
			},
			newRS: replicaSet("new", 10, 3, available(3)),
			// budget 13-8-0 = 5 removes broken; then available 8 is not above 8.
			want: []string{"broken=0"},
		},
		{
			name: "unhealthy cleanup is limited by the budget, oldest first",
			d:    rolling(10, pct25, pct25),
			olds: []*appsv1.ReplicaSet{
				replicaSet("b", 5, 5, available(0)),
				replicaSet("a", 0, 5, available(0)),
			},
			newRS: replicaSet("new", 10, 3, available(3)),
			want:  []string{"a=0"},
		},
		{
			name: "unhealthy then healthy, stopping at minAvailable",
			d:    rolling(10, pct25, pct25),
			olds: []*appsv1.ReplicaSet{
				replicaSet("a", 0, 5, available(2)),
				replicaSet("b", 5, 5, available(5)),
			},
			newRS: replicaSet("new", 10, 3, available(3)),
			// budget 5: a 5→2 (its 3 unavailable). available 2+5+3 = 10, 2 above 8: a 2→0.
			want: []string{"a=0"},
		},
		{
			name: "healthy excess spread oldest first",
			d:    rolling(10, pct25, pct25),
			olds: []*appsv1.ReplicaSet{
				replicaSet("b", 5, 6, available(6)),
				replicaSet("a", 0, 4, available(4)),
			},
			newRS: replicaSet("new", 10, 3, available(3)),
			// available 13, 5 above 8: a 4→0, b 6→5.
			want: []string{"a=0", "b=5"},
		},
		{
			name: "a scaled-down old ReplicaSet's stale availability is not counted",
			d:    rolling(10, pct25, pct25),
			olds: []*appsv1.ReplicaSet{
				replicaSet("gone", 0, 0, available(5)),
				replicaSet("old", 5, 10, available(10)),
			},
			newRS: replicaSet("new", 10, 3),
			want:  []string{"old=8"},
		},
		{
			name:  "no active old ReplicaSet",
			d:     rolling(10, pct25, pct25),
			olds:  []*appsv1.ReplicaSet{replicaSet("gone", 0, 0)},
			newRS: replicaSet("new", 10, 10, available(10)),
			want:  nil,
		},
		{
			name:  "nil new ReplicaSet",
			d:     rolling(10, pct25, pct25),
			olds:  []*appsv1.ReplicaSet{replicaSet("old", 0, 10, available(10))},
			newRS: nil,
			want:  []string{"old=8"},
		},
		{
			name:  "already at the floor",
			d:     rolling(10, pct25, pct25),
			olds:  []*appsv1.ReplicaSet{replicaSet("old", 0, 7, available(7))},
			newRS: replicaSet("new", 10, 3, available(1)),
			want:  nil,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			all := append([]*appsv1.ReplicaSet{}, tc.olds...)
			if tc.newRS != nil {
				all = append(all, tc.newRS)
			}
			targets := PlanOldReplicaSetsScaleDown(tc.d, all, tc.olds, tc.newRS)
			if diff := cmp.Diff(tc.want, sizes(targets), cmpEmpty); diff != "" {
				t.Errorf("targets (-want +got):\n%s", diff)
			}
			// Invariant: never below minAvailable, counting only pods that stay.
			var kept int32
			shrunk := map[string]int32{}
			for _, tgt := range targets {
				shrunk[tgt.RS.Name] = tgt.Replicas
			}
			for _, rs := range FilterActive(tc.olds) {
				size, ok := shrunk[rs.Name]
				if !ok {
					size = *rs.Spec.Replicas
				}
				kept += min(size, rs.Status.AvailableReplicas)
			}
			if tc.newRS != nil {
				kept += tc.newRS.Status.AvailableReplicas
			}
			before := AvailableReplicaCount(FilterActive(all))
			if floor := MinAvailable(tc.d); kept < floor && kept < before {
				t.Errorf("availability %d would drop below minAvailable %d", kept, floor)
			}
		})
	}
}

// cmpEmpty treats nil and empty string slices as equal.
var cmpEmpty = cmp.Transformer("nilToEmpty", func(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
})
