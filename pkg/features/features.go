// Package features defines bosun's feature gates. Both binaries parse --feature-gates into
// DefaultMutableFeatureGate; controllers read DefaultFeatureGate.
//
// Gates that share a name with an upstream kube-controller-manager gate mean the same thing,
// so an operator's --feature-gates line carries over unchanged.
package features

import (
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
)

const (
	// PodDeletionCost makes the controller.kubernetes.io/pod-deletion-cost annotation take part
	// in ranking pods for scale-down.
	PodDeletionCost featuregate.Feature = "PodDeletionCost"

	// DeploymentReplicaSetTerminatingReplicas makes ReplicaSet and Deployment status report
	// .status.terminatingReplicas.
	DeploymentReplicaSetTerminatingReplicas featuregate.Feature = "DeploymentReplicaSetTerminatingReplicas"

	// StaleControllerConsistencyReplicaSet makes the ReplicaSet controller wait until its pod
	// cache has observed its own writes before syncing again.
	StaleControllerConsistencyReplicaSet featuregate.Feature = "StaleControllerConsistencyReplicaSet"

	// LogarithmicScaleDown ranks pods of similar age in logarithmic buckets on scale-down.
	// It is GA upstream and cannot be switched off.
	LogarithmicScaleDown featuregate.Feature = "LogarithmicScaleDown"

	// AdvancedDaemonSetStrictMaxUnavailable makes the Advanced DaemonSet controller count the
	// replacement of old pods that are already unavailable against maxUnavailable. Without it
	// (OpenKruise's behaviour) such pods are replaced outside the budget, so two template
	// changes within minReadySeconds can take every pod of a DaemonSet down at once.
	AdvancedDaemonSetStrictMaxUnavailable featuregate.Feature = "AdvancedDaemonSetStrictMaxUnavailable"
)

// defaultFeatureGates holds every gate bosun knows with its default and maturity.
var defaultFeatureGates = map[featuregate.Feature]featuregate.FeatureSpec{
	PodDeletionCost:                         {Default: true, PreRelease: featuregate.Beta},
	DeploymentReplicaSetTerminatingReplicas: {Default: true, PreRelease: featuregate.Beta},
	StaleControllerConsistencyReplicaSet:    {Default: true, PreRelease: featuregate.Beta},
	LogarithmicScaleDown:                    {Default: true, PreRelease: featuregate.GA, LockToDefault: true},
	AdvancedDaemonSetStrictMaxUnavailable:   {Default: false, PreRelease: featuregate.Alpha},
}

// DefaultMutableFeatureGate is the gate --feature-gates writes into. Only the binaries'
// flag parsing should mutate it.
var DefaultMutableFeatureGate featuregate.MutableVersionedFeatureGate = NewFeatureGate()

// DefaultFeatureGate is the read-only view controllers consult.
var DefaultFeatureGate featuregate.FeatureGate = DefaultMutableFeatureGate

// NewFeatureGate returns a fresh gate with bosun's gates and the logging gates registered.
// The logging gates must be present because component-base's logging configuration
// consults them while being applied.
func NewFeatureGate() featuregate.MutableVersionedFeatureGate {
	gate := featuregate.NewFeatureGate()
	utilruntime.Must(gate.Add(defaultFeatureGates))
	utilruntime.Must(logsapi.AddFeatureGates(gate))
	return gate
}
