package daemonsetutil

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

// DefaultBurstReplicas caps creates, deletes and in-place updates per sync when
// spec.burstReplicas is unset.
const DefaultBurstReplicas = 250

// DefaultRevisionHistoryLimit is the number of old revisions kept when
// spec.revisionHistoryLimit is unset.
const DefaultRevisionHistoryLimit = 10

// scaled resolves value against total; a nil value is zero.
func scaled(value *intstr.IntOrString, total int, roundUp bool) (int, error) {
	if value == nil {
		return 0, nil
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(value, total, roundUp)
	if err != nil {
		return 0, fmt.Errorf("resolving %q against %d: %w", value.String(), total, err)
	}
	return max(n, 0), nil
}

// RollingUpdate returns the rolling-update parameters of ds, or nil when ds does not roll.
func RollingUpdate(ds *appsv1beta1.DaemonSet) *appsv1beta1.RollingUpdateDaemonSet {
	if ds.Spec.UpdateStrategy.Type != appsv1beta1.RollingUpdateDaemonSetStrategyType && ds.Spec.UpdateStrategy.Type != "" {
		return nil
	}
	return ds.Spec.UpdateStrategy.RollingUpdate
}

// SurgeAndUnavailable returns maxSurge and maxUnavailable of ds scaled against desired
// (the number of nodes that want a pod), percentages rounded up. When both come out 0 on
// a DaemonSet that has nodes, maxUnavailable is 1, so that a rollout always moves.
func SurgeAndUnavailable(ds *appsv1beta1.DaemonSet, desired int) (surge, unavailable int, err error) {
	rolling := RollingUpdate(ds)
	if rolling == nil {
		return 0, 1, nil
	}
	if surge, err = scaled(rolling.MaxSurge, desired, true); err != nil {
		return 0, 0, err
	}
	if unavailable, err = scaled(rolling.MaxUnavailable, desired, true); err != nil {
		return 0, 0, err
	}
	if surge == 0 && unavailable == 0 && desired > 0 {
		unavailable = 1
	}
	return surge, unavailable, nil
}

// SurgeEnabled reports whether ds may run a second pod on a node during a rollout:
// maxSurge resolves to more than 0 against a single node.
func SurgeEnabled(ds *appsv1beta1.DaemonSet) bool {
	rolling := RollingUpdate(ds)
	if rolling == nil || rolling.Type == appsv1beta1.InplaceRollingUpdateType {
		return false
	}
	surge, err := scaled(rolling.MaxSurge, 1, true)
	return err == nil && surge > 0
}

// Partition returns the number of pods ds keeps on old revisions, a percentage of desired
// rounded down; 0 when ds does not roll.
func Partition(ds *appsv1beta1.DaemonSet, desired int) (int, error) {
	rolling := RollingUpdate(ds)
	if rolling == nil {
		return 0, nil
	}
	return scaled(rolling.Partition, desired, false)
}

// PartitionedScaling reports whether ds's partition also holds back the creation of pods
// on nodes that have none. spec.scaleStrategy decides when it is set; otherwise the
// annotation that carries the setting in v1alpha1 does, when it is exactly "true". Objects
// written in v1alpha1 by a writer that does not convert (OpenKruise's CRDs convert with
// strategy None) reach the controller with only the annotation, and must behave as they
// always did.
func PartitionedScaling(ds *appsv1beta1.DaemonSet) bool {
	if ds.Spec.ScaleStrategy != nil {
		return ds.Spec.ScaleStrategy.PartitionedScaling
	}
	return ds.Annotations[appsv1beta1.ProgressiveCreatePodAnnotation] == "true"
}

// Paused reports whether the rolling phase of ds is paused.
func Paused(ds *appsv1beta1.DaemonSet) bool {
	rolling := RollingUpdate(ds)
	return rolling != nil && ptr.Deref(rolling.Paused, false)
}

// InPlaceIfPossible reports whether ds updates pods in place when only images changed.
func InPlaceIfPossible(ds *appsv1beta1.DaemonSet) bool {
	rolling := RollingUpdate(ds)
	return rolling != nil && rolling.Type == appsv1beta1.InplaceRollingUpdateType
}

// BurstReplicas returns how many creates, deletes and in-place updates ds allows per sync:
// spec.burstReplicas (a percentage of desired rounded down), else fallback. It is never
// below 1: a percentage of a small DaemonSet that rounds down to 0 would stop it for good.
func BurstReplicas(ds *appsv1beta1.DaemonSet, desired, fallback int) int {
	if ds.Spec.BurstReplicas == nil {
		return max(fallback, 1)
	}
	burst, err := scaled(ds.Spec.BurstReplicas, desired, false)
	if err != nil {
		return max(fallback, 1)
	}
	return max(burst, 1)
}

// RevisionHistoryLimit returns how many old revisions ds keeps.
func RevisionHistoryLimit(ds *appsv1beta1.DaemonSet) int {
	return int(ptr.Deref(ds.Spec.RevisionHistoryLimit, DefaultRevisionHistoryLimit))
}
