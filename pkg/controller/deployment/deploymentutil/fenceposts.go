package deploymentutil

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ResolveFenceposts turns maxSurge and maxUnavailable into replica counts for a Deployment
// of desired replicas. Percentages of desired are rounded up for the surge and down for
// unavailability, so that a rollout always makes progress without dipping below the
// requested availability; nil counts as 0. When both come out as 0 unavailable becomes 1:
// with neither extra pods nor missing pods allowed, a rollout could never move.
func ResolveFenceposts(maxSurge, maxUnavailable *intstr.IntOrString, desired int32) (surge, unavailable int32, err error) {
	zero := intstr.FromInt32(0)
	s, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(maxSurge, zero), int(desired), true)
	if err != nil {
		return 0, 0, fmt.Errorf("resolving maxSurge: %w", err)
	}
	u, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(maxUnavailable, zero), int(desired), false)
	if err != nil {
		return 0, 0, fmt.Errorf("resolving maxUnavailable: %w", err)
	}
	if s == 0 && u == 0 {
		u = 1
	}
	return int32(s), int32(u), nil
}

// IsRollingUpdate reports whether d uses the RollingUpdate strategy.
func IsRollingUpdate(d *appsv1.Deployment) bool {
	return d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType
}

// resolveDeploymentFenceposts resolves d's rolling-update parameters against its
// spec.replicas; a missing rollingUpdate block counts as both values nil.
func resolveDeploymentFenceposts(d *appsv1.Deployment) (surge, unavailable int32, err error) {
	var maxSurge, maxUnavailable *intstr.IntOrString
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		maxSurge, maxUnavailable = ru.MaxSurge, ru.MaxUnavailable
	}
	return ResolveFenceposts(maxSurge, maxUnavailable, deploymentReplicas(d))
}

// fenceposts is resolveDeploymentFenceposts for callers that cannot fail. Validation rejects
// invalid values, so an error is treated as "no surge, no unavailability".
func fenceposts(d *appsv1.Deployment) (surge, unavailable int32) {
	surge, unavailable, err := resolveDeploymentFenceposts(d)
	if err != nil {
		return 0, 0
	}
	return surge, unavailable
}

// MaxSurge returns how many pods above spec.replicas d may run during a rollout: the
// resolved maxSurge for RollingUpdate, 0 for any other strategy.
func MaxSurge(d *appsv1.Deployment) int32 {
	if !IsRollingUpdate(d) {
		return 0
	}
	surge, _ := fenceposts(d)
	return surge
}

// MaxUnavailable returns how many of d's spec.replicas may be unavailable during a rollout.
// It is 0 for Recreate (which makes no availability promise while it runs) and for a
// Deployment scaled to 0, and never more than spec.replicas.
func MaxUnavailable(d *appsv1.Deployment) int32 {
	replicas := deploymentReplicas(d)
	if !IsRollingUpdate(d) || replicas == 0 {
		return 0
	}
	_, unavailable := fenceposts(d)
	return min(unavailable, replicas)
}

// MinAvailable returns how many of d's pods must be available: spec.replicas −
// MaxUnavailable. It is the floor a rolling update scales old ReplicaSets down against, and
// the line between Available=True and Available=False; for Recreate, which allows no
// unavailability, it is every replica.
func MinAvailable(d *appsv1.Deployment) int32 {
	return deploymentReplicas(d) - MaxUnavailable(d)
}

// deploymentReplicas returns d's spec.replicas, or the API default 1 when unset.
func deploymentReplicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}
