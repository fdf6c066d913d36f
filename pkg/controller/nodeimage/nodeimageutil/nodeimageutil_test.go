package nodeimageutil

import (
	"testing"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
)

func TestCountTagPhase(t *testing.T) {
	var status appsv1alpha1.NodeImageStatus
	for _, phase := range []appsv1alpha1.ImagePullPhase{
		appsv1alpha1.ImagePhaseWaiting,
		appsv1alpha1.ImagePhasePulling, appsv1alpha1.ImagePhasePulling,
		appsv1alpha1.ImagePhaseSucceeded, appsv1alpha1.ImagePhaseSucceeded, appsv1alpha1.ImagePhaseSucceeded,
		appsv1alpha1.ImagePhaseFailed,
		"", "Unknown",
	} {
		CountTagPhase(&status, phase)
	}
	want := appsv1alpha1.NodeImageStatus{Waiting: 1, Pulling: 2, Succeeded: 3, Failed: 1}
	if status.Waiting != want.Waiting || status.Pulling != want.Pulling || status.Succeeded != want.Succeeded ||
		status.Failed != want.Failed || status.Desired != 0 {
		t.Errorf("counters %+v, want %+v", status, want)
	}
}

func TestFindTagStatus(t *testing.T) {
	statuses := []appsv1alpha1.ImageTagStatus{{Tag: "1.0"}, {Tag: "latest", Version: 2}}
	if got := FindTagStatus(statuses, "latest"); got != &statuses[1] {
		t.Errorf("FindTagStatus(latest) = %v, want the entry itself", got)
	}
	if got := FindTagStatus(statuses, "2.0"); got != nil {
		t.Errorf("FindTagStatus(2.0) = %v, want nil", got)
	}
	if got := FindTagStatus(nil, "1.0"); got != nil {
		t.Errorf("FindTagStatus of no statuses = %v, want nil", got)
	}
}
