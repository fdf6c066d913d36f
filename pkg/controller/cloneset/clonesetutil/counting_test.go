package clonesetutil

import (
	"math"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

func TestPartition(t *testing.T) {
	for _, tc := range []struct {
		name      string
		partition *intstr.IntOrString
		replicas  *int32
		want      int
		wantErr   bool
	}{
		{"unset", nil, ptr.To[int32](4), 0, false},
		{"integer", ptr.To(intstr.FromInt32(2)), ptr.To[int32](4), 2, false},
		{"integer above replicas is clamped", ptr.To(intstr.FromInt32(10)), ptr.To[int32](4), 4, false},
		{"negative integer is clamped", ptr.To(intstr.FromInt32(-1)), ptr.To[int32](4), 0, false},
		{"percentage rounds up", ptr.To(intstr.FromString("50%")), ptr.To[int32](5), 3, false},
		{"99% of 4 leaves one pod to update", ptr.To(intstr.FromString("99%")), ptr.To[int32](4), 3, false},
		{"100% keeps all", ptr.To(intstr.FromString("100%")), ptr.To[int32](4), 4, false},
		{"99% of a single pod keeps it", ptr.To(intstr.FromString("99%")), ptr.To[int32](1), 1, false},
		{"fraction", ptr.To(intstr.FromString("12.5%")), ptr.To[int32](10), 2, false},
		{"replicas unset counts as 1", ptr.To(intstr.FromString("50%")), nil, 1, false},
		{"not a percentage", ptr.To(intstr.FromString("2")), ptr.To[int32](4), 0, true},
	} {
		got, err := Partition(tc.partition, tc.replicas)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s: Partition = %d, %v; want %d, error %v", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestBudgetOf(t *testing.T) {
	rolling := func(mutate func(*appsv1beta1.RollingUpdateCloneSetStrategy)) *appsv1beta1.CloneSet {
		cs := &appsv1beta1.CloneSet{Spec: appsv1beta1.CloneSetSpec{Replicas: ptr.To[int32](10)}}
		cs.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateCloneSetStrategy{}
		mutate(cs.Spec.UpdateStrategy.RollingUpdate)
		return cs
	}
	for _, tc := range []struct {
		name string
		cs   *appsv1beta1.CloneSet
		want Budget
	}{
		{"no rolling update: 20% rounded down", &appsv1beta1.CloneSet{Spec: appsv1beta1.CloneSetSpec{Replicas: ptr.To[int32](4)}},
			Budget{Replicas: 4, MaxUnavailable: 0, ScaleMaxUnavailable: math.MaxInt32}},
		{"default maxUnavailable rounds up without surge", rolling(func(*appsv1beta1.RollingUpdateCloneSetStrategy) {}),
			Budget{Replicas: 10, MaxUnavailable: 2, ScaleMaxUnavailable: math.MaxInt32}},
		{"maxUnavailable rounds up without surge", rolling(func(r *appsv1beta1.RollingUpdateCloneSetStrategy) {
			r.MaxUnavailable = ptr.To(intstr.FromString("25%"))
		}), Budget{Replicas: 10, MaxUnavailable: 3, ScaleMaxUnavailable: math.MaxInt32}},
		{"maxUnavailable rounds down with surge, surge rounds up", rolling(func(r *appsv1beta1.RollingUpdateCloneSetStrategy) {
			r.MaxUnavailable = ptr.To(intstr.FromString("25%"))
			r.MaxSurge = ptr.To(intstr.FromString("11%"))
		}), Budget{Replicas: 10, MaxSurge: 2, MaxUnavailable: 2, ScaleMaxUnavailable: math.MaxInt32}},
		{"paused: no surge", rolling(func(r *appsv1beta1.RollingUpdateCloneSetStrategy) {
			r.MaxUnavailable = ptr.To(intstr.FromString("25%"))
			r.MaxSurge = ptr.To(intstr.FromInt32(3))
			r.Paused = true
		}), Budget{Replicas: 10, MaxUnavailable: 3, ScaleMaxUnavailable: math.MaxInt32}},
		{"partition", rolling(func(r *appsv1beta1.RollingUpdateCloneSetStrategy) {
			r.Partition = ptr.To(intstr.FromString("30%"))
		}), Budget{Replicas: 10, Partition: 3, MaxUnavailable: 2, ScaleMaxUnavailable: math.MaxInt32}},
		{"unparsable values count as 0", rolling(func(r *appsv1beta1.RollingUpdateCloneSetStrategy) {
			r.Partition = ptr.To(intstr.FromString("x"))
			r.MaxUnavailable = ptr.To(intstr.FromString("2.5%"))
		}), Budget{Replicas: 10, ScaleMaxUnavailable: math.MaxInt32}},
		{"scale maxUnavailable rounds up", &appsv1beta1.CloneSet{Spec: appsv1beta1.CloneSetSpec{
			Replicas:      ptr.To[int32](10),
			ScaleStrategy: appsv1beta1.CloneSetScaleStrategy{MaxUnavailable: ptr.To(intstr.FromString("15%"))},
		}}, Budget{Replicas: 10, MaxUnavailable: 2, ScaleMaxUnavailable: 2}},
	} {
		if got := BudgetOf(tc.cs, false, false); got != tc.want {
			t.Errorf("%s: BudgetOf = %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if b := BudgetOf(&appsv1beta1.CloneSet{}, true, true); !b.ExcludePreparingDelete || !b.MayRollBack || b.Replicas != 1 {
		t.Errorf("flags or default replicas not carried: %+v", b)
	}
}

func TestExpectedUpdatedReplicas(t *testing.T) {
	cs := &appsv1beta1.CloneSet{Spec: appsv1beta1.CloneSetSpec{Replicas: ptr.To[int32](4)}}
	if got := ExpectedUpdatedReplicas(cs); got != 4 {
		t.Errorf("without a rolling update: %d, want 4", got)
	}
	cs.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateCloneSetStrategy{Partition: ptr.To(intstr.FromString("99%"))}
	if got := ExpectedUpdatedReplicas(cs); got != 1 {
		t.Errorf("partition 99%% of 4: %d, want 1", got)
	}
	cs.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromString("bad"))
	if got := ExpectedUpdatedReplicas(cs); got != 0 {
		t.Errorf("bad partition: %d, want 0", got)
	}
}

// pods builds PodClass lists: n copies of p.
func pods(groups ...any) []PodClass {
	var out []PodClass
	for i := 0; i < len(groups); i += 2 {
		for range groups[i].(int) {
			out = append(out, groups[i+1].(PodClass))
		}
	}
	return out
}

var (
	newOK       = PodClass{Updated: true, Available: true}
	newDown     = PodClass{Updated: true}
	newSpecOK   = PodClass{Updated: true, Specified: true, Available: true}
	newHeld     = PodClass{Updated: true, PreparingDelete: true}
	oldOK       = PodClass{Available: true}
	oldSpecOK   = PodClass{Specified: true, Available: true}
	oldHeld     = PodClass{PreparingDelete: true}
	unlimited   = math.MaxInt32
	noSurgeMU1  = Budget{MaxUnavailable: 1, ScaleMaxUnavailable: unlimited}
	withReplica = func(b Budget, replicas, partition int) Budget {
		b.Replicas, b.Partition = replicas, partition
		return b
	}
)

// Every expected value below is worked out by hand from the formulas of OpenKruise's
// calculateDiffsWithExpectation (v1.9.0), which the comments restate.
func TestCalculateDiffs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget Budget
		pods   []PodClass
		want   Diffs
	}{
		{
			// expected 5 - current 0; limit min(5, unlimited - 0).
			name: "scale up from nothing", budget: withReplica(noSurgeMU1, 5, 0), pods: nil,
			want: Diffs{ScaleUp: 5, ScaleUpLimit: 5},
		},
		{
			// old part: partition 2 - 1 old pod.
			name: "scale up keeps the partition's share at the current revision", budget: withReplica(noSurgeMU1, 4, 2), pods: pods(1, oldOK),
			want: Diffs{ScaleUp: 3, ScaleUpOld: 1, ScaleUpLimit: 3},
		},
		{
			// limit min(2, max(scaleMaxUnavailable 1 - unavailable 1, 0)).
			name: "scale maxUnavailable limits creation", budget: Budget{Replicas: 3, ScaleMaxUnavailable: 1}, pods: pods(1, newDown),
			want: Diffs{ScaleUp: 2, ScaleUpLimit: 0},
		},
		{
			// 4 current - 0 specified - 2 expected; old part 1 - 0 - 1; ready limit 1 + (4-2) - 0.
			name: "scale down", budget: withReplica(noSurgeMU1, 2, 1), pods: pods(3, newOK, 1, oldOK),
			want: Diffs{ScaleDown: 2, DeleteReadyLimit: 3},
		},
		{
			// nothing to scale; ready limit 1 + 0 - 0 because one pod is specified.
			name: "specified pod", budget: withReplica(noSurgeMU1, 3, 0), pods: pods(2, newOK, 1, newSpecOK),
			want: Diffs{DeleteReadyLimit: 1},
		},
		{
			// scaleSurge min(max(0+1-0, 0), 1) = 1, none old; expected 4 → one more pod;
			// ready limit max(0 + 0 - 0, 0).
			name: "surge replaces a specified pod first", budget: Budget{Replicas: 3, MaxSurge: 1, ScaleMaxUnavailable: unlimited},
			pods: pods(2, newOK, 1, newSpecOK),
			want: Diffs{UseSurge: 1, ScaleUp: 1, ScaleUpLimit: 1},
		},
		{
			// oldDiff 4, newDiff -4 → update 4; updateMaxUnavailable 1 + 4 - 4.
			name: "update without surge", budget: withReplica(noSurgeMU1, 4, 0), pods: pods(4, oldOK),
			want: Diffs{Update: 4, UpdateMaxUnavailable: 1},
		},
		{
			name: "update stops at the partition", budget: withReplica(noSurgeMU1, 4, 2), pods: pods(4, oldOK),
			want: Diffs{Update: 2, UpdateMaxUnavailable: 1},
		},
		{
			// updateSurge |4| (oldDiff > 0: none old); useSurge min(1, 4); expected 5.
			name: "update with surge", budget: Budget{Replicas: 4, MaxSurge: 1, ScaleMaxUnavailable: unlimited}, pods: pods(4, oldOK),
			want: Diffs{UseSurge: 1, ScaleUp: 1, ScaleUpLimit: 1, Update: 4},
		},
		{
			// oldDiff 1, newDiff min(0, 0): no surge; 5 current - 4 expected, the old one;
			// ready limit 0 + 1 - 0; update -newDiff = 0 since |1| > |0|.
			name: "surge pod ready: the old pod goes", budget: Budget{Replicas: 4, MaxSurge: 2, ScaleMaxUnavailable: unlimited},
			pods: pods(1, oldOK, 4, newOK),
			want: Diffs{ScaleDown: 1, ScaleDownOld: 1, DeleteReadyLimit: 1},
		},
		{
			// Without the rollback gate the diffs are clamped: nothing to do.
			name: "partition raised, no rollback", budget: withReplica(noSurgeMU1, 4, 3), pods: pods(4, newOK),
			want: Diffs{},
		},
		{
			// oldDiff 0-3, newDiff 4-1 → update -3 (back to the current revision).
			name: "partition raised, rollback", budget: Budget{Replicas: 4, Partition: 3, MaxUnavailable: 1, ScaleMaxUnavailable: unlimited, MayRollBack: true},
			pods: pods(4, newOK),
			want: Diffs{Update: -3, UpdateMaxUnavailable: 1},
		},
		{
			// updateSurge 3, all old (oldDiff < 0); useSurge 1, old 1; expected 5, old 4.
			name: "rollback with surge", budget: Budget{Replicas: 4, Partition: 3, MaxSurge: 1, ScaleMaxUnavailable: unlimited, MayRollBack: true},
			pods: pods(4, newOK),
			want: Diffs{UseSurge: 1, UseSurgeOld: 1, ScaleUp: 1, ScaleUpOld: 4, ScaleUpLimit: 1, Update: -3},
		},
		{
			// PreparingDelete counts: 4 current - 3; unavailable 1 → ready limit 1 + 1 - 1.
			name: "preparing delete counted", budget: withReplica(noSurgeMU1, 3, 0), pods: pods(3, newOK, 1, newHeld),
			want: Diffs{ScaleDown: 1, DeleteReadyLimit: 1},
		},
		{
			name: "preparing delete excluded", budget: Budget{Replicas: 3, MaxUnavailable: 1, ScaleMaxUnavailable: unlimited, ExcludePreparingDelete: true},
			pods: pods(3, newOK, 1, newHeld),
			want: Diffs{},
		},
		{
			// 3 current - 2 expected, old part 3 - 0 - 2.
			name: "old preparing delete counted", budget: withReplica(noSurgeMU1, 2, 2), pods: pods(2, oldOK, 1, oldHeld),
			want: Diffs{ScaleDown: 1, ScaleDownOld: 1, DeleteReadyLimit: 1},
		},
		{
			name: "old preparing delete excluded", budget: Budget{Replicas: 2, Partition: 2, MaxUnavailable: 1, ScaleMaxUnavailable: unlimited, ExcludePreparingDelete: true},
			pods: pods(2, oldOK, 1, oldHeld),
			want: Diffs{},
		},
		{
			// scaleSurge 1 (old 1) ties updateSurge 1 (old 0): scale wins, useSurge 1 old 1;
			// expected 3, old 1+1 = 2 = current old → nothing old to create.
			name: "scale surge wins a tie", budget: Budget{Replicas: 2, Partition: 1, MaxSurge: 2, ScaleMaxUnavailable: unlimited},
			pods: pods(1, oldOK, 1, oldSpecOK),
			want: Diffs{UseSurge: 1, UseSurgeOld: 1, ScaleUp: 1, ScaleUpLimit: 1, Update: 1},
		},
		{
			// updateSurge 4 beats scaleSurge 2: useSurge min(3, 4), old min(3, 0).
			name: "update surge wins", budget: Budget{Replicas: 4, MaxSurge: 3, ScaleMaxUnavailable: unlimited},
			pods: pods(2, oldOK, 2, oldSpecOK),
			want: Diffs{UseSurge: 3, ScaleUp: 3, ScaleUpLimit: 3, Update: 4, DeleteReadyLimit: 0},
		},
		{
			// unavailable pods eat the scale-up budget and the update budget: updateMaxUnavailable
			// 2 + 4 - 4 = 2 whatever is unavailable (the limiter counts those).
			name: "unavailable pods", budget: Budget{Replicas: 4, MaxUnavailable: 2, ScaleMaxUnavailable: 1}, pods: pods(2, oldOK, 2, newDown),
			want: Diffs{Update: 2, UpdateMaxUnavailable: 2},
		},
	} {
		if got := CalculateDiffs(tc.budget, tc.pods); got != tc.want {
			t.Errorf("%s:\n got  %+v\n want %+v", tc.name, got, tc.want)
		}
	}
}
