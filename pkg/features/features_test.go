package features

import (
	"testing"

	"k8s.io/component-base/featuregate"
)

func TestDefaults(t *testing.T) {
	gate := NewFeatureGate()
	for _, f := range []featuregate.Feature{PodDeletionCost, DeploymentReplicaSetTerminatingReplicas,
		StaleControllerConsistencyReplicaSet, LogarithmicScaleDown, PodUnavailableBudgetDeleteGate, InPlaceUpdateEnvFromMetadata} {
		if !gate.Enabled(f) {
			t.Errorf("%s: want enabled by default", f)
		}
	}
	// Behaviour beyond upstream and OpenKruise is opt-in.
	for _, f := range []featuregate.Feature{AdvancedDaemonSetStrictMaxUnavailable, PodUnavailableBudgetUpdateGate,
		PodUnavailableBudgetDaemonSetReplicas, PodUnavailableBudgetOwnerChain, PreDownloadImageForDaemonSetUpdate,
		PreDownloadImageForInPlaceUpdate, TemplateNoDefaults, CloneSetShortHash, PreparingUpdateAsUpdate, CloneSetPartitionRollback,
		RecreatePodWhenChangeVCTInCloneSetGate, ForceDeleteTimeoutExpectationFeatureGate, KruisePodReadinessGate} {
		if gate.Enabled(f) {
			t.Errorf("%s: want disabled by default", f)
		}
	}
}

func TestSet(t *testing.T) {
	tests := []struct {
		value        string
		wantErr      bool
		wantDisabled []featuregate.Feature
		wantEnabled  []featuregate.Feature
	}{
		{value: "PodDeletionCost=false", wantDisabled: []featuregate.Feature{PodDeletionCost}},
		{
			value:        "StaleControllerConsistencyReplicaSet=false,DeploymentReplicaSetTerminatingReplicas=false",
			wantDisabled: []featuregate.Feature{StaleControllerConsistencyReplicaSet, DeploymentReplicaSetTerminatingReplicas},
		},
		{value: "NoSuchGate=true", wantErr: true},
		// OpenKruise's name for this gate, as its users write it on the command line.
		{value: "ForceDeleteTimeoutExpectationGate=true", wantEnabled: []featuregate.Feature{ForceDeleteTimeoutExpectationFeatureGate}},
		{value: "ForceDeleteTimeoutExpectationFeatureGate=true", wantErr: true},
		{value: "LogarithmicScaleDown=false", wantErr: true},
		{value: "LogarithmicScaleDown=true"},
		{value: "AdvancedDaemonSetStrictMaxUnavailable=true", wantEnabled: []featuregate.Feature{AdvancedDaemonSetStrictMaxUnavailable}},
		{value: "PreDownloadImageForDaemonSetUpdate=true", wantEnabled: []featuregate.Feature{PreDownloadImageForDaemonSetUpdate}},
		{value: "PreDownloadImageForInPlaceUpdate=true", wantEnabled: []featuregate.Feature{PreDownloadImageForInPlaceUpdate}},
	}
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			gate := NewFeatureGate()
			err := gate.Set(tc.value)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Set(%q) error = %v, wantErr %v", tc.value, err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			want := map[featuregate.Feature]bool{}
			for f, spec := range defaultFeatureGates {
				want[f] = spec.Default
			}
			for _, f := range tc.wantDisabled {
				want[f] = false
			}
			for _, f := range tc.wantEnabled {
				want[f] = true
			}
			for f := range defaultFeatureGates {
				if got := gate.Enabled(f); got != want[f] {
					t.Errorf("%s enabled = %v, want %v", f, got, want[f])
				}
			}
		})
	}
}
