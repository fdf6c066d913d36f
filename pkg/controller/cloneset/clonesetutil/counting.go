package clonesetutil

import (
	"math"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

// DefaultMaxUnavailable is the rolling update's maxUnavailable when none is set.
const DefaultMaxUnavailable = "20%"

// Partition returns the number of pods a CloneSet keeps at the current revision out of
// replicas (nil: 1): an integer as it is, a percentage rounded up, except that a percentage
// other than "100%" that rounds up to every one of several pods leaves one pod to update;
// the result is clamped to [0, replicas]. A nil partition is 0; a value that is neither an
// integer nor a percentage is an error.
func Partition(partition *intstr.IntOrString, replicas *int32) (int, error) {
	if partition == nil {
		return 0, nil
	}
	total := int(ptr.Deref(replicas, 1))
	n, err := ScaledValue(partition, total, true)
	if err != nil {
		return 0, err
	}
	if total > 1 && n == total && partition.Type == intstr.String && partition.StrVal != "100%" {
		n = total - 1
	}
	return min(max(n, 0), total), nil
}

// ExpectedUpdatedReplicas is status.expectedUpdatedReplicas: replicas less the partition,
// all of them without a rolling update. A partition that does not parse leaves 0, as
// OpenKruise leaves the field unset then.
func ExpectedUpdatedReplicas(cs *appsv1beta1.CloneSet) int32 {
	replicas := ptr.Deref(cs.Spec.Replicas, 1)
	rolling := cs.Spec.UpdateStrategy.RollingUpdate
	if rolling == nil {
		return replicas
	}
	partition, err := Partition(rolling.Partition, cs.Spec.Replicas)
	if err != nil {
		return 0
	}
	return replicas - int32(partition)
}

// Budget is what a CloneSet's spec says about how many pods it wants and how far scaling
// and updating may go, in pods.
type Budget struct {
	// Replicas is spec.replicas.
	Replicas int
	// Partition is the number of pods kept at the current revision.
	Partition int
	// MaxSurge is how many pods beyond Replicas an update or a replacement may add; 0 while
	// the update is paused.
	MaxSurge int
	// MaxUnavailable is how many pods may be unavailable for updates and deletions.
	MaxUnavailable int
	// ScaleMaxUnavailable is how many pods may be unavailable for new pods to be created
	// (scaleStrategy.maxUnavailable; unlimited when unset).
	ScaleMaxUnavailable int
	// ExcludePreparingDelete leaves pods held in PreparingDelete out of the pods counted
	// against Replicas.
	ExcludePreparingDelete bool
	// MayRollBack lets pods at the update revision go back to the current one when the
	// partition grows (gate CloneSetPartitionRollback, while the two revisions differ).
	MayRollBack bool
}

// BudgetOf reads the Budget of cs. Values that do not parse count as 0, as OpenKruise
// counts them. excludePreparingDelete is the effective setting (ExcludePreparingDelete);
// mayRollBack whether gate CloneSetPartitionRollback is on and the update and current
// revisions differ.
func BudgetOf(cs *appsv1beta1.CloneSet, excludePreparingDelete, mayRollBack bool) Budget {
	b := Budget{
		Replicas:               int(ptr.Deref(cs.Spec.Replicas, 1)),
		ExcludePreparingDelete: excludePreparingDelete,
		MayRollBack:            mayRollBack,
	}
	if rolling := cs.Spec.UpdateStrategy.RollingUpdate; rolling != nil {
		if partition, err := Partition(rolling.Partition, cs.Spec.Replicas); err == nil {
			b.Partition = partition
		}
		if rolling.MaxSurge != nil && !rolling.Paused {
			b.MaxSurge, _ = intstr.GetScaledValueFromIntOrPercent(rolling.MaxSurge, b.Replicas, true)
		}
		// A percentage rounds up when nothing surges, so that a small CloneSet can update
		// at all, and down otherwise, so that surge and unavailability do not add up.
		maxUnavailable := intstr.ValueOrDefault(rolling.MaxUnavailable, intstr.FromString(DefaultMaxUnavailable))
		b.MaxUnavailable, _ = intstr.GetScaledValueFromIntOrPercent(maxUnavailable, b.Replicas, b.MaxSurge == 0)
	} else {
		maxUnavailable := intstr.FromString(DefaultMaxUnavailable)
		b.MaxUnavailable, _ = intstr.GetScaledValueFromIntOrPercent(&maxUnavailable, b.Replicas, false)
	}
	scaleMaxUnavailable := intstr.ValueOrDefault(cs.Spec.ScaleStrategy.MaxUnavailable, intstr.FromInt32(math.MaxInt32))
	b.ScaleMaxUnavailable, _ = intstr.GetScaledValueFromIntOrPercent(scaleMaxUnavailable, b.Replicas, true)
	return b
}

// PodClass is what the counting needs to know of one active pod.
type PodClass struct {
	// Updated: the pod is at the update revision.
	Updated bool
	// PreparingDelete: a preDelete hook holds the pod.
	PreparingDelete bool
	// Specified: the pod is to be deleted (the specified-delete label, or named in
	// podsToDelete).
	Specified bool
	// Available: the pod counts as available (lifecycle Normal or none, running, ready for
	// minReadySeconds, in-place update done).
	Available bool
}

// Diffs is what one sync of a CloneSet should do, in pods.
type Diffs struct {
	// ScaleUp pods are missing, ScaleUpOld of them at the current revision; at most
	// ScaleUpLimit may be created now.
	ScaleUp, ScaleUpOld, ScaleUpLimit int
	// ScaleDown pods are surplus, ScaleDownOld of them at the current revision.
	ScaleDown, ScaleDownOld int
	// DeleteReadyLimit is how many ready pods may be deleted.
	DeleteReadyLimit int
	// UseSurge extra pods are wanted, UseSurgeOld of them at the current revision.
	UseSurge, UseSurgeOld int
	// Update is the number of pods to move to the update revision (negative: back to the
	// current one), UpdateMaxUnavailable how many pods may be unavailable meanwhile.
	Update, UpdateMaxUnavailable int
}

// revisionCounts counts the active pods of one side (update or current revision).
type revisionCounts struct {
	total, preparingDelete, active, specified, unavailable int
}

func (c *revisionCounts) add(p PodClass) {
	c.total++
	if p.PreparingDelete {
		c.preparingDelete++
		return
	}
	c.active++
	switch {
	case p.Specified:
		c.specified++
	case !p.Available:
		c.unavailable++
	}
}

// CalculateDiffs computes what a CloneSet under budget b, whose active pods are pods, should
// do next. It is OpenKruise's arithmetic exactly, so that both controllers take the same
// steps from the same state.
func CalculateDiffs(b Budget, pods []PodClass) Diffs {
	var updated, old revisionCounts
	for _, p := range pods {
		if p.Updated {
			updated.add(p)
		} else {
			old.add(p)
		}
	}
	var d Diffs

	oldDiff := old.active - b.Partition
	newDiff := updated.active - (b.Replicas - b.Partition)
	if !b.MayRollBack {
		oldDiff = max(oldDiff, 0)
		newDiff = min(newDiff, 0)
	}
	totalUnavailable := updated.preparingDelete + old.preparingDelete + updated.unavailable + old.unavailable

	if b.MaxSurge > 0 {
		d.UseSurge, d.UseSurgeOld = surge(b, updated, old, oldDiff, newDiff, totalUnavailable)
	}

	current, currentOld := len(pods), old.total
	if b.ExcludePreparingDelete {
		current -= old.preparingDelete + updated.preparingDelete
		currentOld -= old.preparingDelete
	}
	expected, expectedOld := b.Replicas+d.UseSurge, b.Partition+d.UseSurgeOld

	if n := expected - current; n > 0 {
		d.ScaleUp = n
		d.ScaleUpOld = max(expectedOld-currentOld, 0)
		d.ScaleUpLimit = min(n, max(b.ScaleMaxUnavailable-totalUnavailable, 0))
	}
	specified := old.specified + updated.specified
	if n := current - specified - expected; n > 0 {
		d.ScaleDown = n
		d.ScaleDownOld = max(currentOld-old.specified-expectedOld, 0)
	}
	if specified > 0 || d.ScaleDown > 0 {
		d.DeleteReadyLimit = max(b.MaxUnavailable+(len(pods)-b.Replicas)-totalUnavailable, 0)
	}

	if abs(oldDiff) <= abs(newDiff) {
		d.Update = oldDiff
	} else {
		d.Update = -newDiff
	}
	if d.Update != 0 {
		d.UpdateMaxUnavailable = b.MaxUnavailable + len(pods) - b.Replicas
	}
	return d
}

// surge returns how many extra pods, and how many of them at the current revision, the
// CloneSet should run: for pods to delete while too many are unavailable to lose them
// first, or for an update that moves pods between the revisions; whichever needs more,
// within maxSurge.
func surge(b Budget, updated, old revisionCounts, oldDiff, newDiff, totalUnavailable int) (useSurge, useSurgeOld int) {
	var scaleSurge, scaleSurgeOld int
	if specified := updated.specified + old.specified; specified > 0 {
		scaleSurge = min(max(totalUnavailable+specified-b.MaxUnavailable, 0), specified)
		scaleSurgeOld = max(scaleSurge-updated.specified, 0)
	}
	var updateSurge, updateSurgeOld int
	if (oldDiff < 0 && newDiff > 0) || (oldDiff > 0 && newDiff < 0) {
		if abs(oldDiff) <= abs(newDiff) {
			updateSurge = abs(oldDiff)
			if oldDiff < 0 {
				updateSurgeOld = updateSurge
			}
		} else {
			updateSurge = abs(newDiff)
			if newDiff > 0 {
				updateSurgeOld = updateSurge
			}
		}
	}
	if scaleSurge >= updateSurge {
		useSurge = min(b.MaxSurge, scaleSurge)
		return useSurge, min(useSurge, scaleSurgeOld)
	}
	useSurge = min(b.MaxSurge, updateSurge)
	return useSurge, min(useSurge, updateSurgeOld)
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
