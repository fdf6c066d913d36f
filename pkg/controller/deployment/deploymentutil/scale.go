package deploymentutil

import (
	"fmt"
	"math"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
)

// ScaleTarget is a ReplicaSet and the size the controller should scale it to.
type ScaleTarget struct {
	RS       *appsv1.ReplicaSet
	Replicas int32
}

// NewRSNewReplicas returns the size the new ReplicaSet may grow to in this step.
//
// RollingUpdate: grow by as much as the surge allows (spec.replicas + maxSurge minus the
// pods all ReplicaSets already ask for) but never beyond spec.replicas; when the surge is
// used up the size is unchanged. Recreate: spec.replicas, because old pods are gone by the
// time the new ReplicaSet is scaled. allRSs must include newRS; a nil newRS counts as a
// ReplicaSet of 0 (the size a ReplicaSet about to be created starts from).
func NewRSNewReplicas(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) (int32, error) {
	replicas := deploymentReplicas(d)
	switch d.Spec.Strategy.Type {
	case appsv1.RollingUpdateDeploymentStrategyType:
		surge, _, err := resolveDeploymentFenceposts(d)
		if err != nil {
			return 0, fmt.Errorf("computing new replicas of deployment %s/%s: %w", d.Namespace, d.Name, err)
		}
		current := rsReplicas(newRS)
		maxTotal := replicas + surge
		existing := ReplicaCount(allRSs)
		if existing >= maxTotal {
			return current, nil
		}
		return current + min(maxTotal-existing, replicas-current), nil
	case appsv1.RecreateDeploymentStrategyType:
		return replicas, nil
	default:
		return 0, fmt.Errorf("unexpected deployment strategy type: %s", d.Spec.Strategy.Type)
	}
}

// IsSaturated reports whether rs (the new ReplicaSet) fully serves d: it asks for and has
// spec.replicas available pods, and its desired-replicas annotation says it was sized for
// the current spec.replicas. A saturated new ReplicaSet lets a scale skip proportional
// scaling and simply retire every old ReplicaSet.
func IsSaturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	desired, ok := DesiredReplicasFromAnnotation(rs)
	if !ok {
		return false
	}
	replicas := deploymentReplicas(d)
	return rsReplicas(rs) == replicas && desired == replicas && rs.Status.AvailableReplicas == replicas
}

// ProportionalScale spreads a change of d's size over its active ReplicaSets during a
// rolling update, so that a rollout in flight keeps its old/new ratio instead of the newest
// ReplicaSet absorbing the whole change (kubernetes issues #29357, #28145).
//
// The ReplicaSets may together ask for spec.replicas + maxSurge pods (0 when scaling to 0).
// Each ReplicaSet's share is its size scaled by the ratio of the new to the old maximum
// (its max-replicas annotation, falling back to status.replicas of d), rounded half away
// from zero and capped by what is left to distribute. Larger ReplicaSets go first; on equal
// sizes the newer one goes first when growing and the older one when shrinking, so rounding
// favours the new template on the way up and removes old pods first on the way down. The
// first ReplicaSet also takes the rounding leftover, never going below 0.
//
// The result lists every active ReplicaSet in the order to scale them, with its new size
// (possibly unchanged: the caller still refreshes its annotations). Deciding whether to
// scale proportionally at all (one active ReplicaSet, a saturated new ReplicaSet,
// Recreate) is left to the caller.
func ProportionalScale(d *appsv1.Deployment, active []*appsv1.ReplicaSet) []ScaleTarget {
	order := FilterActive(active)
	replicas := deploymentReplicas(d)
	var allowed int32
	if replicas > 0 {
		allowed = replicas + MaxSurge(d)
	}
	toAdd := allowed - ReplicaCount(order)
	switch {
	case toAdd > 0:
		sort.SliceStable(order, func(i, j int) bool {
			a, b := order[i], order[j]
			if rsReplicas(a) != rsReplicas(b) {
				return rsReplicas(a) > rsReplicas(b)
			}
			return createdBefore(b, a)
		})
	case toAdd < 0:
		sort.SliceStable(order, func(i, j int) bool {
			a, b := order[i], order[j]
			if rsReplicas(a) != rsReplicas(b) {
				return rsReplicas(a) > rsReplicas(b)
			}
			return createdBefore(a, b)
		})
	}

	targets := make([]ScaleTarget, 0, len(order))
	var added int32
	for _, rs := range order {
		share := proportion(d, rs, toAdd, added)
		targets = append(targets, ScaleTarget{RS: rs, Replicas: rsReplicas(rs) + share})
		added += share
	}
	if toAdd != 0 && len(targets) > 0 {
		targets[0].Replicas = max(targets[0].Replicas+toAdd-added, 0)
	}
	return targets
}

// proportion returns how many replicas rs gains (or, negative, loses) when toAdd replicas
// are distributed and added of them already went to ReplicaSets earlier in the order.
func proportion(d *appsv1.Deployment, rs *appsv1.ReplicaSet, toAdd, added int32) int32 {
	if toAdd == 0 || toAdd == added || rsReplicas(rs) == 0 {
		return 0
	}
	fraction := scaleFraction(d, rs)
	left := toAdd - added
	if toAdd > 0 {
		return min(fraction, left)
	}
	return max(fraction, left)
}

// scaleFraction returns rs's proportional change: its size scaled from the Deployment's
// previous maximum (max-replicas annotation) to the current one, minus its size.
func scaleFraction(d *appsv1.Deployment, rs *appsv1.ReplicaSet) int32 {
	size := rsReplicas(rs)
	replicas := deploymentReplicas(d)
	if replicas == 0 {
		return -size
	}
	newMax := replicas + MaxSurge(d)
	oldMax, ok := MaxReplicasFromAnnotation(rs)
	if !ok || oldMax == 0 {
		// Someone edited or removed the annotation: the Deployment's current pod count
		// is the best remaining guess of the size the ReplicaSets were sized against.
		oldMax = d.Status.Replicas
		if oldMax == 0 {
			return 0
		}
	}
	scaled := math.Round(float64(size) * float64(newMax) / float64(oldMax))
	return int32(scaled) - size
}

// PlanOldReplicaSetsScaleDown decides how far a rolling update may shrink the old
// ReplicaSets in this step without letting availability fall below MinAvailable. allRSs
// is every ReplicaSet of d (new included), oldRSs the old ones (inactive ones are ignored);
// newRS may be nil.
//
// The budget is Σ spec.replicas(all) − minAvailable − the new ReplicaSet's unavailable pods
// (those may still be starting and are not counted on). Old ReplicaSets with pods that are
// not available are shrunk first, oldest first and by at most their unavailable pods: those
// pods serve nothing, and left alone they could hold the rollout up until its deadline
// (kubernetes issue #16737). Then, if more pods are available than minAvailable, the
// oldest old ReplicaSets give up the excess.
//
// The result lists only the old ReplicaSets whose size changes, oldest first, with their
// final size.
func PlanOldReplicaSetsScaleDown(d *appsv1.Deployment, allRSs, oldRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) []ScaleTarget {
	olds := FilterActive(oldRSs)
	if len(olds) == 0 {
		return nil
	}
	SortByCreation(olds)
	minAvailable := MinAvailable(d)
	var newUnavailable int32
	if newRS != nil {
		newUnavailable = rsReplicas(newRS) - newRS.Status.AvailableReplicas
	}
	budget := ReplicaCount(allRSs) - minAvailable - newUnavailable
	if budget <= 0 {
		return nil
	}

	sizes := make([]int32, len(olds))
	for i, rs := range olds {
		sizes[i] = rsReplicas(rs)
	}

	// Unhealthy pods first.
	var removed int32
	for i, rs := range olds {
		if removed >= budget {
			break
		}
		unhealthy := sizes[i] - rs.Status.AvailableReplicas
		if unhealthy <= 0 {
			continue
		}
		n := min(budget-removed, unhealthy)
		sizes[i] -= n
		removed += n
	}

	// Then available pods above the floor. Removing unavailable pods above did not change
	// how many are available, so the ReplicaSets' reported counts still hold. Only the
	// ReplicaSets that take part in the rollout count: an old ReplicaSet already at 0 may
	// still report pods that are on their way out.
	var available int32
	for _, rs := range olds {
		available += availableWithinSpec(rs)
	}
	if newRS != nil {
		available += availableWithinSpec(newRS)
	}
	if excess := available - minAvailable; excess > 0 {
		var done int32
		for i := range olds {
			if done >= excess {
				break
			}
			n := min(sizes[i], excess-done)
			sizes[i] -= n
			done += n
		}
	}

	var targets []ScaleTarget
	for i, rs := range olds {
		if sizes[i] != rsReplicas(rs) {
			targets = append(targets, ScaleTarget{RS: rs, Replicas: sizes[i]})
		}
	}
	return targets
}

// availableWithinSpec is how many of rs's pods can be counted on as available: its reported
// available pods, but never more than spec.replicas. A ReplicaSet just scaled down reports
// the pods it counted before deleting the surplus (its status is written in the sync that
// sends the deletes), so counting them would let one scale-down step take the same pods
// twice and drop availability below the floor.
func availableWithinSpec(rs *appsv1.ReplicaSet) int32 {
	return min(rs.Status.AvailableReplicas, rsReplicas(rs))
}
